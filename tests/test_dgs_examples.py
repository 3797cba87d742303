"""The paper's DGS applications as pomset examples (`examples/fraud_detection.py`,
`event_windows.py`, `page_view_join.py`): each checks its program's consistency, prints its
plan, runs the pipeline and compares the output with the sequential program on the sorted
input; here each runs as a user runs it, on the local runner with one worker and with two
(processes), and fraud detection also on Spark."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")


def _run(script: str, *flags: str) -> str:
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script), *flags],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "equal to the sequential program: yes" in done.stdout, done.stdout
    return done.stdout


@pytest.mark.parametrize("script,events", [("fraud_detection.py", 60_000),
                                           ("event_windows.py", 100_000),
                                           ("page_view_join.py", 40_000)])
@pytest.mark.parametrize("workers", [1, 2])
def test_example_equals_the_sequential_program(script, events, workers):
    out = _run(script, f"--workers={workers}", "--worker_mode=processes", f"--events={events}")
    assert "consistent: C1-C3 hold" in out
    if workers == 2:
        assert "(joins its children)" in out and out.count("(leaf)") == 2, out


def test_fraud_detection_on_spark():
    out = _run("fraud_detection.py", "--runner=spark", "--events=30000")
    assert "flagged" in out
