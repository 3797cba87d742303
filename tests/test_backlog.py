"""A streaming run's progress record (`runtime.backlog`): each source's backlog (Kafka lag in
all and per partition), the outputs' watermark and its delay, the last micro-batch, whether
the input is caught up; on the status line, in `result.metrics()["progress"]`, and a
`BacklogWarning` when a backlog has grown for `--backlog_warning` seconds."""
from __future__ import annotations

import json
import re
import threading
import time
import warnings

import pytest

import pomset as pm
from pomset.windowing import MAX_MICROS
from pomset.runtime.backlog import PROGRESS, Backlog, files_backlog, kafka_backlog, status_text

from confluent_kafka import Producer

from kafka_util import new_topic, produce
from test_kafka import SPARK_FLAGS
from test_kafka_stall import Terminal


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_backlog_that_grows_for_the_window_is_warned_of_once_until_it_catches_up():
    clock = Clock()
    backlog = Backlog(warn_after=2.0, clock=clock)
    latest = {("t", 0): 10, ("t", 1): 10}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for step, read in enumerate([5, 5, 5, 5]):   # 1 s apart, growing 5 a second
            clock.now = step
            latest = {p: o + 5 for p, o in latest.items()} if step else latest
            positions = {("t", 0): read, ("t", 1): 0}
            record = backlog.update({"Read": kafka_backlog(latest, positions)}, None, 12.4, 30)
        grew = [w.message for w in seen if isinstance(w.message, pm.BacklogWarning)]
        assert len(grew) == 1, [str(w.message) for w in seen]
        assert str(grew[0]).startswith("Read: its backlog has grown for 2 s, from 15 to 35 "
                                       "records waiting; t:0: 15; t:1: 20: the run reads "
                                       "slower than its input arrives"), str(grew[0])
        assert record["sources"]["Read"]["partitions"] == {"t:0": 20, "t:1": 25}
        assert record["sources"]["Read"]["backlog"] == 45
        assert (record["last_batch_ms"], record["last_batch_records"]) == (12, 30)
        assert record["caught_up"] is False
        clock.now = 4
        caught = backlog.update({"Read": kafka_backlog({("t", 0): 3}, {("t", 0): 3})}, None,
                                None, None)
        assert caught["caught_up"] is True and caught["sources"]["Read"]["backlog"] == 0
        for step in range(5, 9):   # growing again after catching up: warned again
            clock.now = step
            backlog.update({"Read": files_backlog(step)}, None, None, None)
        grew = [w.message for w in seen if isinstance(w.message, pm.BacklogWarning)]
        assert len(grew) == 2 and "from 5 to 7 files waiting" in str(grew[1]), str(grew[1])


def test_a_backlog_that_shrinks_or_is_unknown_is_not_warned_of_and_not_caught_up():
    clock = Clock()
    backlog = Backlog(warn_after=1.0, clock=clock)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for step, n in enumerate([50, 40, 30, 20]):
            clock.now = step
            backlog.update({"Files": files_backlog(n)}, None, None, None)
        unknown = backlog.update({"Read": kafka_backlog({}, {("t", 0): 4})}, None, None, None)
    assert unknown["sources"]["Read"] == {"kind": "kafka", "backlog": None,
                                          "partitions": {"t:0": None}}
    assert unknown["caught_up"] is False
    assert status_text(unknown) == "lag=?"


def _progress_of(result) -> dict:
    record = result.metrics()[PROGRESS]
    assert set(record) == {"sources", "watermark", "watermark_delay_s", "last_batch_ms",
                           "last_batch_records", "caught_up"}
    return record


def test_a_bounded_kafka_read_ends_caught_up_with_its_lag_per_partition(kafka_broker):
    topic = new_topic(kafka_broker, "backlog-bounded", 2)
    produce(kafka_broker, topic, [{"value": {"n": n}, "partition": n % 2,
                                   "timestamp": 1_000 * n} for n in range(200)])
    p = pm.Pipeline(argv=["--runner=local", "--bundle_size=20"])
    (p | "Read" >> pm.ReadFromKafka(kafka_broker, topic, until="latest")
       | pm.Map(lambda r: (time.sleep(0.001), r["n"])[1]))
    record = _progress_of(p.run())
    assert record["sources"] == {"Read": {"kind": "kafka", "backlog": 0,
                                          "partitions": {f"{topic}:0": 0, f"{topic}:1": 0}}}
    assert record["caught_up"] is True
    # read to its end: the watermark is at the end of time, no delay
    assert (record["watermark"], record["watermark_delay_s"]) == (MAX_MICROS, 0.0)
    assert record["last_batch_records"] > 0 and record["last_batch_ms"] >= 0


SCRIPT = """
import json, sys, time
import pomset as pm
bootstrap, source, out = sys.argv[1:4]
def slow(r):
    time.sleep(0.01)
    return r["n"]
p = pm.Pipeline(argv=["--bundle_size=10", "--backlog_warning=1", *sys.argv[4:]])
p | "Read" >> pm.ReadFromKafka(bootstrap, source) | pm.Map(slow)
result = p.run()
with open(out, "w") as f:
    json.dump(result.metrics()["progress"], f)
"""   # a run stopped by Ctrl-C ends with its stop line instead (exit status 130)


def _lags(text: str) -> list:
    return [int(n) for n in re.findall(r"lag=(\d+)", text)]


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_a_run_that_falls_behind_shows_its_lag_warns_and_catches_up(kafka_broker, tmp_path,
                                                                     runner):
    topic = new_topic(kafka_broker, "backlog-live", 2)
    script, out = tmp_path / "p.py", tmp_path / "progress.json"
    script.write_text(SCRIPT)
    flags = (["--runner=spark", *SPARK_FLAGS, "--trigger_interval=0.5"] if runner == "spark"
             else ["--runner=local", "--workers=1"])
    run = Terminal(str(script), kafka_broker, topic, str(out), *flags)
    stop = threading.Event()

    def producer() -> None:   # about 300 records a second: more than the slowed Map takes
        out = Producer({"bootstrap.servers": kafka_broker})
        n = 0
        while not stop.is_set() and n < 3000:
            for i in range(30):
                out.produce(topic, json.dumps({"n": n + i}).encode(), partition=i % 2)
            out.flush(10)
            n += 30
            time.sleep(0.1)
    feeding = threading.Thread(target=producer, daemon=True)
    try:
        # a lag in numbers: the broker has answered and, on Spark, a first micro-batch ran
        run.until(lambda: _lags(run.text), "the status line's lag", timeout=180)
        feeding.start()
        run.until(lambda: "BacklogWarning: Read: its backlog has grown for" in run.text,
                  "the backlog warning")
        stop.set()
        feeding.join()
        assert max(_lags(run.text)) > 0, run.text[-2000:]
        behind = len(run.text)
        run.until(lambda: 0 in _lags(run.text[behind:]), "the lag back at 0")
        assert run.stop() == 130, run.text[-3000:]
    finally:
        stop.set()
        run.kill()
    assert "stopped on Ctrl-C (SIGINT); the input was caught up;" in _stop_line(run.text)


def test_a_run_stopped_behind_its_input_says_it_was_not_caught_up(kafka_broker, tmp_path):
    topic = new_topic(kafka_broker, "backlog-stopped", 2)
    produce(kafka_broker, topic, [{"value": {"n": n}, "partition": n % 2} for n in range(2000)])
    script, out = tmp_path / "p.py", tmp_path / "progress.json"
    script.write_text(SCRIPT)
    run = Terminal(str(script), kafka_broker, topic, str(out), "--runner=local", "--workers=1")
    try:
        run.until(lambda: any(_lags(run.text)), "a lag above 0 on the status line")
        assert run.stop() == 130, run.text[-3000:]
    finally:
        run.kill()
    line = _stop_line(run.text)
    behind = re.search(r"; the input was not caught up \(Read: (\d+) records behind\);", line)
    assert behind and 0 < int(behind.group(1)) < 2000, line


def _stop_line(text: str) -> str:
    """The run's last line: the stop line a stopped run ends with."""
    return text.replace("\r", "\n").strip().splitlines()[-1]
