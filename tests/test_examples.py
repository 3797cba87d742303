"""The examples run as a user runs them: as scripts with flags."""
from __future__ import annotations

import os
import subprocess
import sys

import pyarrow.parquet as pq

ROOT = os.path.join(os.path.dirname(__file__), "..")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_windowed_files_runs_with_the_runner_flag(tmp_path):
    out = tmp_path / "scores"
    proc = _run("examples/windowed_files.py", "--runner=local", f"--output={out}")
    assert proc.returncode == 0, proc.stderr
    assert "dead-lettered 1" in proc.stdout
    table = pq.read_table(f"{out}-00000-of-00001.parquet").to_pylist()
    assert {"key", "value", "window_start", "window_end", "pane_timing", "diff"} <= set(table[0])
    assert all((r["window_end"] - r["window_start"]).total_seconds() == 600 for r in table)
    dead = open(f"{out}-dead-letters-00000-of-00001.txt").read()
    assert "events.jsonl:2001" in dead


def test_windowed_files_on_spark_writes_what_local_writes(tmp_path):
    outs = {}
    for runner in ("local", "spark"):
        out = tmp_path / runner
        proc = _run("examples/windowed_files.py", f"--runner={runner}", f"--output={out}")
        assert proc.returncode == 0, proc.stderr
        assert f"dead-lettered 1, wrote {out}-00000-of-00001.parquet on the {runner} runner" in proc.stdout
        rows = pq.read_table(f"{out}-00000-of-00001.parquet").to_pylist()
        outs[runner] = sorted(rows, key=lambda r: repr(sorted(r.items())))
    assert outs["spark"] == outs["local"] and len(outs["local"]) > 100


def test_unknown_flag_is_a_clear_error(tmp_path):
    proc = _run("examples/windowed_files.py", "--runnr=local")
    assert proc.returncode != 0
    assert "unknown option(s) --runnr=local" in proc.stderr


def test_dataflow_paper_demo_prints_and_draws(tmp_path):
    proc = _run("examples/dataflow_paper.py", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "Figure 14: Sessions, Retracting" in proc.stdout
    assert "-25 LATE" in proc.stdout.replace("  ", " ").replace("  ", " ")
    assert sorted(os.listdir(tmp_path)) == [f"figure{n:02d}.png" for n in range(6, 15)]


def test_video_sessions_demo_converges_to_the_batch_answer():
    # as a user runs it: it starts its own embedded broker, produces, runs the pipeline and
    # watches the billing topic until it equals the batch answer
    proc = _run("examples/video_sessions.py", "--events=600", "--produce_seconds=3", "--quiet")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "the billing totals equal the batch answer: yes" in proc.stdout


def test_stretch_operators_reconfigure_and_run_on_spark():
    lines = {}
    for args in (["--operator=paircount"], ["--operator=paircount", "--reconfigure=4"],
                 ["--operator=paircount", "--runner=spark"], ["--operator=bandjoin"]):
        proc = _run("examples/stretch_operators.py", "--quiet", "--events=5000", *args)
        assert proc.returncode == 0, proc.stderr
        lines[" ".join(args)] = proc.stdout.splitlines()
    static, moved, spark = (lines["--operator=paircount"],
                            lines["--operator=paircount --reconfigure=4"],
                            lines["--operator=paircount --runner=spark"])
    assert "2 instances, 0 reconfigurations" in static[0]
    assert "4 instances, 1 reconfigurations" in moved[0]
    assert static[1:] == moved[1:] == spark[1:]
    assert static[0].split(" on ")[0] == moved[0].split(" on ")[0] == spark[0].split(" on ")[0]
    assert lines["--operator=bandjoin"][0].startswith("BandJoin: ")


def test_dedup_with_expiry_demo_passes_each_id_once():
    proc = _run("examples/dedup_with_expiry.py", "--events=3000")
    assert proc.returncode == 0, proc.stderr
    assert "3,000 unique out" in proc.stdout and "every id once: yes" in proc.stdout
