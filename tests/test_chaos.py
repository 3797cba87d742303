"""Chaos: the video-sessions pipeline (sessions with early panes and retractions, and a second
grouping, billing, downstream of them) reads Kafka with a checkpoint while view events arrive in
bursts, and is SIGKILLed again and again at random moments, restarted from its checkpoint each
time; a last run with `--until=latest` finishes. The output topics, netted by their diff
header, must equal the batch answer exactly (every count 1), with retractions in them and no
record written twice (same key, value and headers).

A seeded RNG picks each kill's moment, one of:
- start: a moment right after the process starts (on Spark, anywhere in its start-up);
- burst: while a burst of events is being produced, once the run has committed output;
- commit: just after the run committed output (a random fraction of an epoch later, so some
  kills land in the next commit's flush, checkpoint or transaction).
A kill counts as mid-stream when the killed run had itself committed output (so it had
resumed from the checkpoint, when not the first) and more output came after it; the test
asserts enough of them happened.

Settings, from the environment (CI defaults, small):
    POMSET_CHAOS_SEED     the RNG's seed (default: random, printed; rerun a failure with it)
    POMSET_CHAOS_KILLS    kills per run on the local runner (default 6; Spark: a third, >= 2)
    POMSET_CHAOS_EVENTS   view events in all (default 3000)
    POMSET_CHAOS_DEADLINE seconds a run may take to commit output before it counts as stuck
                          (default 300; a stuck run's thread stacks go into the failure)

A soak run (tens of minutes; Spark gets a third of the kills):
    POMSET_CHAOS_KILLS=50 POMSET_CHAOS_EVENTS=20000 python -m pytest tests/test_chaos.py -s
"""
from __future__ import annotations

import math
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter

import pytest

from kafka_util import netted, produce, read_topic

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
import video_sessions as vs  # noqa: E402

SEED = int(os.environ.get("POMSET_CHAOS_SEED") or random.SystemRandom().randrange(1 << 31))
KILLS = int(os.environ.get("POMSET_CHAOS_KILLS", "6"))
EVENTS = int(os.environ.get("POMSET_CHAOS_EVENTS", "3000"))

SPARK_FLAGS = ["--spark_master=local[2]", "--spark_conf=spark.sql.shuffle.partitions=2"]
FLAGS = ["--checkpoint_interval=0.5", "--trigger_interval=0.5", "--early_seconds=0.2"]
# generous: a loaded two-core machine starts Spark slowly
OUTPUT_DEADLINE_S = float(os.environ.get("POMSET_CHAOS_DEADLINE", "300"))
ENV = dict(os.environ, PYTHONFAULTHANDLER="1")   # SIGABRT prints every thread's stack
FINAL_TIMEOUT_S = 600
KINDS = ("start", "burst", "commit")
MIN_CHUNK = 10


class CommittedOutput:
    """The committed records of the output topics as a user reads them: each poll is a fresh
    read_committed consumer that resumes where the last one stopped (as a consumer group does
    after a restart) and reads to the current end, so its reads start after the aborted
    transactions that killed runs leave behind."""

    def __init__(self, bootstrap: str, topics: list) -> None:
        self.bootstrap, self.topics = bootstrap, topics
        self.records: dict = {t: [] for t in topics}

    def poll(self) -> int:
        """How many records are committed now."""
        for t, got in self.records.items():
            got += read_topic(self.bootstrap, t, start={m.partition(): m.offset() + 1 for m in got})
        return sum(map(len, self.records.values()))

    def wait_beyond(self, count: int, proc: subprocess.Popen, log: str) -> None:
        """Until more than `count` records are committed; the run must stay up meanwhile."""
        deadline = time.monotonic() + OUTPUT_DEADLINE_S
        while self.poll() <= count:
            assert proc.poll() is None, f"the pipeline exited (seed {SEED}):\n{_tail(log)}"
            if time.monotonic() > deadline:   # stuck: its threads' stacks to the log
                os.kill(proc.pid, signal.SIGABRT)
                proc.wait(30)
                raise AssertionError(f"no output committed in {OUTPUT_DEADLINE_S}s (seed "
                                     f"{SEED}); {self.census()}; the run's stacks:\n"
                                     f"{_tail(log, 6000)}")
            time.sleep(0.1)

    def census(self) -> str:
        """The output topics' records as read in parts, read at once, and uncommitted: tells
        a run that committed nothing from a reader that missed what it committed."""
        return "; ".join(
            f"{t}: {len(got)} read in parts, {len(read_topic(self.bootstrap, t))} committed "
            f"from the start, {len(read_topic(self.bootstrap, t, committed=False))} in all"
            for t, got in self.records.items())


def _where(records: list) -> list:
    return [(m.partition(), m.offset(), m.value()) for m in records]


def _tail(path: str, n: int = 3000) -> str:
    with open(path, errors="replace") as f:
        return f.read()[-n:]


def _pipeline(bootstrap: str, prefix: str, runner: str, checkpoint: str, *flags: str) -> list:
    return [sys.executable, os.path.join(ROOT, "examples", "video_sessions.py"), "--role=pipeline",
            f"--runner={runner}", f"--bootstrap_servers={bootstrap}", f"--topic_prefix={prefix}",
            f"--checkpoint_dir={checkpoint}", "--quiet", *SPARK_FLAGS, *FLAGS, *flags]


def _produce(bootstrap: str, topic: str, events: list) -> None:
    if events:
        produce(bootstrap, topic, [{"value": e, "key": e["user"].encode()} for e in events])


def _in_bursts(bootstrap: str, topic: str, events: list, bursts: int, seconds: float) -> None:
    """Produce the events in `bursts` bursts spread over about `seconds`."""
    size = max(1, math.ceil(len(events) / bursts))
    for i in range(0, len(events), size):
        _produce(bootstrap, topic, events[i:i + size])
        time.sleep(seconds / bursts)


def _chunks(events: list, n: int, rng: random.Random) -> list:
    """The events (in arrival order) cut at random into n runs of at least MIN_CHUNK each, so
    that half a run's chunk still holds events whose output the test can wait for."""
    slack = MIN_CHUNK - 1
    cuts = [c + (i + 1) * slack for i, c in
            enumerate(sorted(rng.sample(range(1, len(events) - n * slack), n - 1)))]
    return [events[a:b] for a, b in zip([0] + cuts, cuts + [len(events)])]


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_random_kills_of_a_checkpointed_kafka_pipeline_net_to_the_batch_answer_once(
        kafka_broker, runner, tmp_path):
    spark = runner == "spark"
    kills = max(2, KILLS // 3) if spark else KILLS
    rng = random.Random(f"{SEED}-{runner}")
    print(f"\nchaos on {runner}: POMSET_CHAOS_SEED={SEED} kills={kills} events={EVENTS}")
    prefix = f"chaos-{uuid.uuid4().hex[:8]}-"
    views, sessions_topic, billing_topic = vs.topics(prefix)
    dead_topic = f"{views}-dead-letters"
    vs.create_topics(kafka_broker, [views, sessions_topic, billing_topic, dead_topic])
    events = [e for _, e in vs.generate(EVENTS, max(10, EVENTS // 75), 6, seed=SEED)]
    # a backlog before the first run, a chunk for each killed run, a last one for the final run
    backlog, *chunks, last = _chunks(events, kills + 2, rng)
    kinds = [KINDS[i % 3] for i in range(kills)]
    rng.shuffle(kinds)
    checkpoint = str(tmp_path / "checkpoint")
    cmd = _pipeline(kafka_broker, prefix, runner, checkpoint)
    output = CommittedOutput(kafka_broker, [sessions_topic, billing_topic])
    _produce(kafka_broker, views, backlog)
    history = []   # (kind, seconds alive, committed at its start, committed at its kill)
    for i, (kind, chunk) in enumerate(zip(kinds, chunks)):
        log = str(tmp_path / f"run-{i}.log")
        before = output.poll()
        producer = None
        if kind == "start":
            _produce(kafka_broker, views, chunk)
        with open(log, "w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=ENV,
                                    start_new_session=True)
        started = time.monotonic()
        try:
            if kind == "start":
                time.sleep(rng.uniform(2, 30) if spark else rng.uniform(0, 2))
            elif kind == "burst":
                half = len(chunk) // 2
                _produce(kafka_broker, views, chunk[:half])
                output.wait_beyond(before, proc, log)
                seconds = 3.0
                producer = threading.Thread(target=_in_bursts, args=(
                    kafka_broker, views, chunk[half:], 6, seconds))
                producer.start()
                time.sleep(rng.uniform(0.1, 1.0) * seconds)
            else:   # commit
                producer = threading.Thread(target=_in_bursts, args=(
                    kafka_broker, views, chunk, 4, 1.0))
                producer.start()
                output.wait_beyond(before, proc, log)
                time.sleep(rng.uniform(0, 0.6))
            assert proc.poll() is None, f"the pipeline exited (seed {SEED}):\n{_tail(log)}"
        finally:
            _kill(proc)
            if producer is not None:
                producer.join()
        history.append((kind, time.monotonic() - started, before, output.poll()))
        print(f"  kill {i + 1}: {kind:6s} after {history[-1][1]:5.1f}s, committed "
              f"{before} -> {history[-1][3]}")
    _produce(kafka_broker, views, last)
    final = subprocess.run(cmd + ["--until=latest"], capture_output=True, text=True,
                           timeout=FINAL_TIMEOUT_S)
    assert final.returncode == 0, f"seed {SEED}: {final.stderr[-3000:]}"
    total = output.poll()

    sessions_records, billing_records = (output.records[t] for t in output.topics)
    for t, got in output.records.items():   # read in parts as read at once, from the start
        whole = read_topic(kafka_broker, t)
        assert sorted(_where(got)) == sorted(_where(whole)), f"seed {SEED}: {t} read in parts"
        aborted = len(read_topic(kafka_broker, t, committed=False)) - len(whole)
        print(f"  {t}: {len(whole)} records committed, {aborted} aborted")
    expected_sessions, expected_billing = vs.batch_answer(events)
    got = netted(sessions_records)
    assert set(got.values()) == {1}, f"seed {SEED}: {[kv for kv in got.items() if kv[1] != 1][:5]}"
    got_sessions = {(dict(v)["user"], dict(v)["start"], dict(v)["end"], dict(v)["seconds"])
                    for v, _ in got}
    assert got_sessions == expected_sessions, (
        f"seed {SEED}: missing {sorted(expected_sessions - got_sessions)[:5]}, "
        f"extra {sorted(got_sessions - expected_sessions)[:5]}")
    billed = netted(billing_records)
    assert set(billed.values()) == {1}, f"seed {SEED}: {billed}"
    assert dict(billed.keys()) == expected_billing, f"seed {SEED}"
    for records in (sessions_records, billing_records):
        repeats = Counter((m.key(), m.value(), tuple(m.headers())) for m in records)
        assert max(repeats.values()) == 1, \
            f"seed {SEED}: written twice: {[r for r, n in repeats.items() if n > 1][:3]}"
        assert any(("pomset-diff", b"-1") in m.headers() for m in records), "no retractions"
    assert read_topic(kafka_broker, dead_topic) == []
    # the kills came mid-stream: the killed run had committed output of its own (having
    # resumed from the checkpoint), and more came after it
    mid_stream = sum(1 for _, _, before, at_kill in history if before < at_kill < total)
    print(f"  {mid_stream} of {kills} kills mid-stream; {total} records committed in all")
    assert mid_stream >= sum(kind != "start" for kind in kinds), history
    assert history[-1][3] < total
