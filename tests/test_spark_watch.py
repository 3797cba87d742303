"""What a user of the Spark runner sees on a terminal, and its session kept across runs: one
fresh process (`spark_watch_job.py`) runs it all and the test reads its output; which session
a run gets is checked without Spark."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pomset as pm
from pomset.runners.spark import session

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark_watch_job.py")

#: what Spark's JVM, log4j, Py4J or the Python workers print, never to be seen by default
SPARK_NOISE = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR)|log4j|"
                         r"incubator|TransformWithState|Setting default log level|at org\.apache|"
                         r"py4j|SQLSTATE|=== Streaming Query|Py4JJavaError|java\.")


def test_a_terminal_shows_the_run_not_spark():
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    proc = subprocess.run([sys.executable, JOB], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    quiet, verbose = proc.stderr.split("=== verbose from here ===")
    assert not SPARK_NOISE.search(proc.stdout + quiet), proc.stdout + quiet
    # the Spark UI's address, once per run that is not --quiet
    assert quiet.count("pomset: Spark UI at http") == 2, quiet
    # the user's errors, with their own tracebacks, and nothing of the JVM's
    assert "UserCodeError: transform 'Map(boom)' failed on element 1: ValueError: bad value 1" \
        in quiet
    assert "UserCodeError: transform 'CombinePerKey(BadSum)' failed on element ('a', 2): " \
           "ValueError: bad combine input 2" in quiet
    assert 'in add_input\n    raise ValueError' in quiet and 'in boom\n    raise ValueError' in quiet
    # a session kept for the process: reused with the same options, paid for once
    assert "same session True" in proc.stdout
    first, second = map(float, re.search(r"runs (\S+) (\S+)", proc.stdout).groups())
    assert second < first / 2, proc.stdout
    # --spark_log_level shows Spark's log
    assert re.search(r" INFO \w+: ", verbose), verbose[-3000:]


def test_a_session_is_kept_for_the_same_options_and_restarted_for_others(monkeypatch):
    from pyspark.sql import SparkSession
    active = [None]
    started = []

    class Fake(SimpleNamespace):
        def stop(self):
            self.stopped = True
            active[0] = None

    def new(options, streaming=False):
        started.append(Fake(stopped=False))
        active[0] = started[-1]
        return started[-1]
    monkeypatch.setattr(session, "_started", {})
    monkeypatch.setattr(session, "new_session", new)
    monkeypatch.setattr(session, "set_level", lambda spark, level: None)
    monkeypatch.setattr(session.atexit, "register", lambda fn: None)
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: active[0]))
    # no process-wide session either (another test's real one may be there)
    monkeypatch.setattr(SparkSession, "_instantiatedSession", None)
    local2 = pm.PipelineOptions(["--spark_master=local[2]"])
    first = session.spark_session(local2)
    assert session.spark_session(local2) is first and len(started) == 1
    second = session.spark_session(pm.PipelineOptions(["--spark_conf=a.b=c"]))
    assert second is not first and first.stopped and not second.stopped
    active[0] = users = Fake()   # a session the user started is used as it is
    assert session.spark_session(local2) is users and len(started) == 2
