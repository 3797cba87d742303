"""Stopping a streaming run from its terminal: a Kafka-to-Kafka pipeline runs in a child
process whose controlling terminal is a pseudo-terminal, and once output is committed it gets
Ctrl-C (the terminal's interrupt character, which signals its whole foreground process group,
Spark's JVM and Python workers included), two of them, or SIGTERM. Each time exactly one line
follows on the terminal, saying what was committed and how to resume, and the exit status is
130 for SIGINT, 143 for SIGTERM."""
from __future__ import annotations

import os
import pty
import re
import select
import signal
import sys
import time
from typing import List

import pytest

from pomset.runtime.stop import Committed, describe, exit_status

from kafka_util import new_topic, produce, read_topic
from test_kafka import SPARK_FLAGS

CTRL_C = b"\x03"

SCRIPT = """
import sys, time
import pomset as pm

def slow(r):
    time.sleep(r.get("sleep", 0))
    return r["n"]

bootstrap, source, out, checkpoint = sys.argv[1:5]
with pm.Pipeline(argv=["--bundle_size=10", "--checkpoint_interval=0.5",
                       f"--checkpoint_dir={checkpoint}", *sys.argv[5:]]) as p:
    (p | pm.ReadFromKafka(bootstrap, source) | pm.Map(slow) | pm.WriteToKafka(bootstrap, out))
"""


class Terminal:
    """A Python script run on a pseudo-terminal of its own (its controlling terminal, as a
    shell's foreground job has), and everything it has written there so far."""

    def __init__(self, *args: str) -> None:
        self.pid, self.main = pty.fork()
        if self.pid == 0:   # the child: a session of its own on the terminal
            os.execv(sys.executable, [sys.executable, *args])
        self.text = ""
        self.status = None

    def read(self, seconds: float) -> bool:
        """Take what the script writes within `seconds`; False once it has closed the terminal."""
        if not select.select([self.main], [], [], seconds)[0]:
            return True
        try:
            chunk = os.read(self.main, 65536)
        except OSError:   # EIO: every process on the terminal has exited
            return False
        self.text += chunk.decode("utf-8", "replace")
        return bool(chunk)

    def until(self, done, what: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert os.waitpid(self.pid, os.WNOHANG) == (0, 0), f"the run ended: {self.text[-3000:]}"
            assert time.monotonic() < deadline, f"{what} not seen: {self.text[-3000:]}"
            self.read(0.5)

    def press(self, keys: bytes) -> None:
        """Type on the terminal (Ctrl-C: its line discipline sends SIGINT)."""
        os.write(self.main, keys)

    def end(self, timeout: float = 120) -> int:
        """Read until the script exits; its exit status."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.read(0.5):
            pass
        status = self._wait(deadline)
        os.close(self.main)
        return status

    def _wait(self, deadline: float) -> int:
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
            time.sleep(0.1)
        raise AssertionError(f"the run did not exit: {self.text[-3000:]}")

    def kill(self) -> None:
        if self.status is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def shown_lines(text: str) -> List[str]:
    """The lines a terminal shows for `text`: each line as left by its last carriage return
    (the status line redrawn in place), without escape sequences, the terminal's echo of
    Ctrl-C (`^C`, the terminal's, not the script's) and blank lines."""
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text.replace("\r\n", "\n")).replace("^C", "")
    shown = [line.split("\r")[-1].strip() for line in text.split("\n")]
    return [line for line in shown if line]


def _start(bootstrap: str, tmp_path, runner: str, sleep: float = 0):
    """The pipeline reading 20 records (its step taking `sleep` seconds over each) and, for
    records that take no time, once their output is committed."""
    source, out = new_topic(bootstrap, "stop-in"), new_topic(bootstrap, "stop-out")
    produce(bootstrap, source, [{"value": {"n": n, "sleep": sleep}} for n in range(20)])
    script = tmp_path / "p.py"
    script.write_text(SCRIPT)
    checkpoint = str(tmp_path / "checkpoint")
    flags = (["--runner=spark", *SPARK_FLAGS, "--trigger_interval=0.5"] if runner == "spark"
             else ["--runner=local"])
    run = Terminal(str(script), bootstrap, source, out, checkpoint, *flags)
    if not sleep:
        run.until(lambda: len(read_topic(bootstrap, out, timeout=5)) == 20,
                  "the first records committed")
    return run, source, out, checkpoint


def _stop_line(signal_name: str, unit: str, checkpoint: str) -> str:
    return (rf"pomset: stopped on {re.escape(signal_name)}; the input was caught up; "
            rf"committed {unit} (\d+) to "
            rf"{re.escape(checkpoint)}, Kafka transaction pomset-\w+-stop-out-\w+ \(mark \1\); "
            rf"resume with --checkpoint_dir={re.escape(checkpoint)}$")


@pytest.mark.parametrize("runner, unit", [("local", "epoch"), ("spark", "micro-batch")])
def test_ctrl_c_stops_the_run_with_one_line_saying_what_it_committed(kafka_broker, tmp_path,
                                                                     runner, unit):
    run, source, out, checkpoint = _start(kafka_broker, tmp_path, runner)
    try:
        before = len(run.text)
        run.press(CTRL_C)
        assert run.end() == 130, run.text[-3000:]
    finally:
        run.kill()
    after = shown_lines(run.text[before:])
    assert len(after) == 1, after
    assert re.match(_stop_line("Ctrl-C (SIGINT)", unit, checkpoint), after[0]), after[0]
    last = int(re.match(_stop_line("Ctrl-C (SIGINT)", unit, checkpoint), after[0]).group(1))
    if runner == "local":
        assert os.path.exists(os.path.join(checkpoint, f"epoch-{last:06d}.pkl"))
    else:
        assert os.path.exists(os.path.join(checkpoint, "commits", str(last)))
    assert sorted(int(m.value()) for m in read_topic(kafka_broker, out)) == list(range(20))


def test_sigterm_stops_the_run_with_one_line_and_status_143(kafka_broker, tmp_path):
    run, source, out, checkpoint = _start(kafka_broker, tmp_path, "local")
    try:
        before = len(run.text)
        os.kill(run.pid, signal.SIGTERM)
        assert run.end() == 143, run.text[-3000:]
    finally:
        run.kill()
    after = shown_lines(run.text[before:])
    assert len(after) == 1, after
    assert re.match(_stop_line("SIGTERM", "epoch", checkpoint), after[0]), after[0]


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_a_second_ctrl_c_while_stopping_ends_the_run_at_once_with_one_line(kafka_broker,
                                                                           tmp_path, runner):
    # records that take a while (10 s): the first Ctrl-C waits for their step to end (on the
    # local runner, after 20 that take none are committed); on Spark, for the micro-batch
    # reading them (the status line shows its tasks) to commit
    spark = runner == "spark"
    run, source, out, checkpoint = _start(kafka_broker, tmp_path, runner, sleep=0.5 if spark else 0)
    try:
        if spark:
            run.until(lambda: "tasks " in run.text, "the records being read")
        else:
            produce(kafka_broker, source, [{"value": {"n": n, "sleep": 0.5}}
                                           for n in range(20, 40)])
        time.sleep(1)
        before = len(run.text)
        run.press(CTRL_C)
        time.sleep(0.5)
        run.press(CTRL_C)
        started = time.monotonic()
        assert run.end() == 130, run.text[-3000:]
        assert time.monotonic() - started < 5
    finally:
        run.kill()
    after = shown_lines(run.text[before:])
    assert len(after) == 1, after
    committed = ("no micro-batch committed yet" if spark else
                 rf"committed epoch \d+ to {re.escape(checkpoint)}, Kafka transaction \S+ "
                 r"\(mark \d+\)")
    assert re.match(r"pomset: stopping now on a second Ctrl-C \(SIGINT\); "
                    rf"{committed}; resume with --checkpoint_dir={re.escape(checkpoint)}; "
                    r"work not committed is redone on resume$", after[0]), after[0]
    assert len(read_topic(kafka_broker, out)) == (0 if spark else 20)


def test_the_stop_line_says_when_a_run_cannot_resume_or_has_committed_nothing():
    assert describe(Committed("micro-batch", 3)) == (
        "committed micro-batch 3; it cannot resume: run with --checkpoint_dir to make a run "
        "resumable")
    assert describe(Committed("epoch", None, "/data/ckpt")) == (
        "no epoch committed yet; resume with --checkpoint_dir=/data/ckpt")
    assert exit_status(signal.SIGINT) == 130 and exit_status(signal.SIGTERM) == 143
