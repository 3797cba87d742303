"""A runner another package registers under the `pomset.runners` entry-point group is one
`--runner` names, as a built-in runner is (pomset.sdk.runners)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

_PLUGIN = '''
from pomset.runners.local.runner import LocalRunner


class CountingRunner(LocalRunner):
    """The local runner, counting the pipelines it runs."""
    runs = 0

    def run(self, pipeline):
        CountingRunner.runs += 1
        return super().run(pipeline)
'''
_SCRIPT = '''
import pomset as pm
from pomset.sdk.runners import runner_names
from counting_runner import CountingRunner
p = pm.Pipeline(runner="counting")
out = p | pm.Create([1, 2]) | pm.Map(lambda x: 2 * x)
values = sorted(wv.value for wv in p.run().collect(out))
print("counting" in runner_names(), values, CountingRunner.runs)
'''


def test_a_runner_an_installed_package_registers_is_found_by_name(tmp_path):
    (tmp_path / "counting_runner.py").write_text(_PLUGIN)
    info = tmp_path / "counting_runner-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: counting-runner\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""
        [pomset.runners]
        counting = counting_runner:CountingRunner
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "True [2, 4] 1"
