"""A Kafka broker that stops answering without closing its connections (its processes
stopped with SIGSTOP) under a running pipeline: past `--kafka_stall_warning` the run warns,
naming the broker and how long it has been silent, and says so on its status line; once the
broker is resumed (SIGCONT), after longer than a Kafka client waits for an answer, the run
goes on, says so, and its output is exact."""
from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

import pytest

import pomset as pm
from pomset.broker import EmbeddedKafka

from kafka_util import new_topic, produce, read_topic
from test_kafka import SPARK_FLAGS

SCRIPT = """
import sys
import pomset as pm
bootstrap, source, out, checkpoint = sys.argv[1:5]
with pm.Pipeline(argv=["--bundle_size=10", "--kafka_stall_warning=2",
                       f"--checkpoint_dir={checkpoint}", "--checkpoint_interval=0.5",
                       *sys.argv[5:]]) as p:
    (p | pm.ReadFromKafka(bootstrap, source) | pm.Map(lambda r: r["n"])
       | pm.WriteToKafka(bootstrap, out))
"""


class Terminal:
    """A Python script run with its stderr on a pseudo-terminal (so it draws its status
    line), and what it has written there so far."""

    def __init__(self, *args: str) -> None:
        self.main, terminal = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL,
                                     stderr=terminal, stdin=subprocess.DEVNULL)
        os.close(terminal)
        self.text = ""

    def read(self, seconds: float) -> None:
        """Take what the script writes within `seconds`."""
        if select.select([self.main], [], [], seconds)[0]:
            try:
                self.text += os.read(self.main, 65536).decode("utf-8", "replace")
            except OSError:   # the script ended
                pass

    def until(self, done, what: str, timeout: float = 120) -> None:
        """Read on until `done()` holds."""
        deadline = time.monotonic() + timeout
        while not done():
            assert self.proc.poll() is None, f"the run ended: {self.text[-3000:]}"
            assert time.monotonic() < deadline, f"{what} not seen: {self.text[-3000:]}"
            self.read(0.5)

    def stop(self) -> int:
        """SIGINT (as Ctrl-C, which stops a run after it committed its work); its exit status."""
        self.proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 60
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.read(0.5)
        self.read(0.1)
        os.close(self.main)
        return self.proc.wait(timeout=10)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def own_broker():
    """A broker of this test's own, which it stops and resumes."""
    broker = EmbeddedKafka()
    broker.start()
    yield broker
    os.killpg(broker.process.pid, signal.SIGCONT)
    broker.stop()


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_a_broker_that_stops_answering_is_reported_and_the_run_goes_on_when_it_answers(
        own_broker, tmp_path, runner):
    bootstrap = own_broker.bootstrap_servers
    source, out = new_topic(bootstrap, "stall-in", 1), new_topic(bootstrap, "stall-out", 1)
    produce(bootstrap, source, [{"value": {"n": n}} for n in range(30)])
    script = tmp_path / "p.py"
    script.write_text(SCRIPT)
    flags = (["--runner=spark", *SPARK_FLAGS, "--trigger_interval=0.5"] if runner == "spark"
             else ["--runner=local"])
    run = Terminal(str(script), bootstrap, source, out, str(tmp_path / "checkpoint"), *flags)
    try:
        run.until(lambda: len(read_topic(bootstrap, out)) == 30, "the first records written")
        os.killpg(own_broker.process.pid, signal.SIGSTOP)
        stopped = len(run.text)
        try:
            # past what a Kafka client waits for an answer (Spark's planning asks for offsets
            # with a timeout of 10 s)
            run.until(lambda: re.search(rf"Kafka {re.escape(bootstrap)} not answering for "
                                        rf"0:(1[2-9]|[2-5]\d)", run.text[stopped:]),
                      "the status line's note")
        finally:
            os.killpg(own_broker.process.pid, signal.SIGCONT)
        resumed = len(run.text)
        assert f"KafkaStallWarning: the Kafka broker at {bootstrap} has not answered for " in \
            run.text[stopped:]
        produce(bootstrap, source, [{"value": {"n": n}} for n in range(30, 60)])
        run.until(lambda: len(read_topic(bootstrap, out)) == 60, "the later records written")
        run.until(lambda: f"the Kafka broker at {bootstrap} answers again, after" in
                  run.text[resumed:], "the warning that it answers again")
        assert run.stop() == 130, run.text[-3000:]
    finally:
        run.kill()
    assert sorted(int(m.value()) for m in read_topic(bootstrap, out)) == list(range(60))


@pytest.mark.parametrize("value, why", [("0", "must be above 0 seconds"),
                                        ("soon", "takes a number of seconds")])
def test_a_stall_warning_that_is_not_a_time_is_an_options_error(value, why):
    with pytest.raises(pm.OptionsError, match=f"--kafka_stall_warning {why}"):
        pm.PipelineOptions([f"--kafka_stall_warning={value}"])
