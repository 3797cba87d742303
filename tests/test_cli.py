"""The `pomset` command as a user types it: `pomset --version`, and `pomset run SCRIPT
[flags]`, which runs a pipeline script with its flags as `python SCRIPT flags` would."""
from __future__ import annotations

import os
import subprocess
import sys

import pomset

POMSET = [sys.executable, "-m", "pomset.cli"]

SCRIPT = """
import pomset as pm
import helper                      # a module beside the script, as python finds it

with pm.Pipeline() as p:
    out = p | pm.Create([1, 2, 3]) | pm.Map(helper.double)
print(sorted(wv.value for wv in p.result.collect(out)), p.options.runner, p.options.workers,
      __name__)
"""


def test_version():
    run = subprocess.run([*POMSET, "--version"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == f"pomset {pomset.__version__}"


def test_run_gives_the_script_its_flags(tmp_path):
    (tmp_path / "p.py").write_text(SCRIPT)
    (tmp_path / "helper.py").write_text("def double(x):\n    return 2 * x\n")
    run = subprocess.run([*POMSET, "run", str(tmp_path / "p.py"), "--quiet", "--workers=2"],
                         capture_output=True, text=True, timeout=120, cwd=os.getcwd())
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[2, 4, 6] local 2 __main__"
    bad = subprocess.run([*POMSET, "run", str(tmp_path / "p.py"), "--workers=many"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("p.py: error: argument --workers/--direct_num_workers: "
                                  "--workers takes a whole number, got 'many'")
    missing = subprocess.run([*POMSET, "run", str(tmp_path / "nope.py")], capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 2 and "no such file" in missing.stderr
