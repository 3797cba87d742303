"""Committed records after aborted transactions are read exactly once, and aborted ones never,
through every path pomset offers: a read_committed consumer from any offset (the front lists
an aborted transaction only where it ends at or after the fetch offset, as a Kafka broker
does), `ReadFromKafka` on every runner, and `pomset run`. The logs hold aborted transactions
at many positions from several producers, with more than a fetch's 1 MiB after them."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

import pomset as pm
from conftest import runner_flags
from kafka_util import new_topic, read_topic, transactional_log

SEEDS = [3, 17]


@pytest.fixture(scope="module", params=SEEDS)
def log(request, kafka_broker):
    """A topic of one partition holding a seeded transactional log; its committed records."""
    topic = new_topic(kafka_broker, f"txn-log-{request.param}", 1)
    return topic, transactional_log(kafka_broker, topic, request.param)


def test_a_read_committed_consumer_reads_every_committed_record_once_from_any_offset(
        kafka_broker, log):
    topic, committed = log
    everything = read_topic(kafka_broker, topic, committed=False)
    assert len(everything) > len(committed)   # aborted records are in the log
    assert sum(map(len, (v for _, v in committed))) > 1 << 20   # more than a fetch holds
    got = read_topic(kafka_broker, topic)
    assert [(m.offset(), m.value()) for m in got] == committed
    # from the start of each aborted stretch, inside it, right after it, and from anywhere
    offsets = sorted({m.offset() for m in everything} - {o for o, _ in committed})
    rng = random.Random(len(committed))
    starts = {offsets[0], offsets[len(offsets) // 2] + 1, offsets[-1] + 1, offsets[-1] + 2,
              *rng.sample(range(committed[-1][0]), 6)}
    for start in sorted(starts):
        got = read_topic(kafka_broker, topic, start={0: start})
        assert [(m.offset(), m.value()) for m in got] == [r for r in committed if r[0] >= start], \
            f"read from offset {start}"


def test_a_consumer_that_resumes_where_another_stopped_misses_nothing(kafka_broker, log):
    topic, committed = log
    got, position = [], 0
    for _ in range(4):   # each a consumer resuming at the last one's position, reading a part
        part = read_topic(kafka_broker, topic, start={0: position})[:len(committed) // 3 + 1]
        got += part
        position = part[-1].offset() + 1 if part else position
    assert [(m.offset(), m.value()) for m in got] == committed


@pytest.mark.parametrize("runner", ["local", "spark", "spark-streaming"])
def test_read_from_kafka_reads_every_committed_record_once(kafka_broker, log, runner, request):
    if runner.startswith("spark"):
        request.getfixturevalue("spark_session")
    topic, committed = log
    flags = runner_flags(runner) + ["--quiet", "--max_records_per_batch=500"]
    with pm.Pipeline(options=pm.PipelineOptions(flags)) as p:
        values = (p | "Read" >> pm.ReadFromKafka(kafka_broker, topic, until="latest")
                  | pm.Map(json.dumps, sort_keys=True))
    expected = sorted(json.dumps(json.loads(v), sort_keys=True) for _, v in committed)
    assert sorted(wv.value for wv in p.result.collect(values)) == expected
    assert p.result.metrics()["Read"]["read"] == len(committed)


SCRIPT = """
import sys
import pomset as pm

with pm.Pipeline() as p:
    read = p | "Read" >> pm.ReadFromKafka(sys.argv[1], sys.argv[2], until="latest")
print(len(p.result.collect(read)), p.result.metrics()["Read"]["read"])
"""


def test_pomset_run_reads_every_committed_record(kafka_broker, log, tmp_path):
    topic, committed = log
    (tmp_path / "count.py").write_text(SCRIPT)
    run = subprocess.run([sys.executable, "-m", "pomset.cli", "run", str(tmp_path / "count.py"),
                          kafka_broker, topic, "--quiet"], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ))
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [str(len(committed))] * 2
