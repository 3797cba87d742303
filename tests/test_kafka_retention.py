"""Offsets deleted by retention before a run read them are never skipped silently, on both
runners: a run resumed from its checkpoint after the log start moved past its offsets reads on
from the log start, counts the loss (`lost_to_retention`) and warns naming topic, partition and
offsets; `--on_data_loss=fail` fails it with a `DataLossError` instead. A reader that falls
behind the log start while running does the same."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

import pomset as pm
from pomset.sdk.io.kafka_clients import KafkaReader

from kafka_util import new_topic, produce

SPARK_FLAGS = ["--runner=spark", "--streaming", "--spark_master=local[2]",
               "--spark_conf=spark.sql.shuffle.partitions=2"]


def _flags(runner: str, checkpoint: str, *more: str) -> list:
    return ([f"--checkpoint_dir={checkpoint}", "--quiet", "--checkpoint_interval=0.2",
             "--trigger_interval=0.2", *more] + (SPARK_FLAGS if runner == "spark" else []))


def _records(ns: range) -> list:
    return [{"value": {"n": n}, "partition": n % 2} for n in ns]


def _delete_before(bootstrap: str, topic: str, partition: int, offset: int) -> None:
    """Move a partition's log start to `offset`, as retention would."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([TopicPartition(topic, partition, offset)]).values():
        future.result(30)


def _read(bootstrap: str, topic: str, flags: list) -> tuple:
    """The values a run reads up to the latest offsets, and its source's metrics."""
    with pm.Pipeline(options=pm.PipelineOptions(flags)) as p:
        read = p | "read" >> pm.ReadFromKafka(bootstrap, topic, until="latest")
    return sorted(wv.value["n"] for wv in p.result.collect(read)), p.result.metrics()["read"]


def _lose_some(bootstrap: str, runner: str, checkpoint: str) -> str:
    """A topic a checkpointed run read 0..19 of (offsets 0..9 of each partition), to which
    20..59 were added afterwards, of which partition 0's offsets 10..19 (n = 20, 22, .., 38)
    were deleted before the next run."""
    topic = new_topic(bootstrap, "retention", 2)
    produce(bootstrap, topic, _records(range(20)))
    got, metrics = _read(bootstrap, topic, _flags(runner, checkpoint))
    assert got == list(range(20)) and metrics["lost_to_retention"] == 0
    produce(bootstrap, topic, _records(range(20, 60)))
    _delete_before(bootstrap, topic, 0, 20)
    return topic


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_a_resumed_run_reads_on_from_the_log_start_and_reports_the_loss(
        kafka_broker, runner, tmp_path, request):
    if runner == "spark":
        request.getfixturevalue("spark_session")
    checkpoint = str(tmp_path / "checkpoint")
    topic = _lose_some(kafka_broker, runner, checkpoint)
    with pytest.warns(pm.DataLossWarning) as caught:
        got, metrics = _read(kafka_broker, topic, _flags(runner, checkpoint))
    lost = set(range(20, 40, 2))
    assert got == sorted(set(range(20, 60)) - lost)   # nothing skipped beyond the deleted
    assert metrics["lost_to_retention"] == len(lost)
    messages = [str(w.message) for w in caught if w.category is pm.DataLossWarning]
    assert len(messages) == 1
    assert f"topic {topic!r} partition 0: offsets [10, 20) were deleted by retention" \
        in messages[0]
    assert "10 records lost" in messages[0] and "--on_data_loss=fail" in messages[0]


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_on_data_loss_fail_stops_the_run_naming_what_was_lost(kafka_broker, runner, tmp_path,
                                                               request):
    if runner == "spark":
        request.getfixturevalue("spark_session")
    checkpoint = str(tmp_path / "checkpoint")
    topic = _lose_some(kafka_broker, runner, checkpoint)
    with pytest.raises(pm.DataLossError,
                       match=rf"topic '{topic}' partition 0: offsets \[10, 20\) were deleted by "
                             rf"retention .*--on_data_loss=fail"):
        _read(kafka_broker, topic, _flags(runner, checkpoint, "--on_data_loss=fail"))
    # the loss accepted, a run from the same checkpoint reads on from the log start
    with pytest.warns(pm.DataLossWarning):
        got, _ = _read(kafka_broker, topic, _flags(runner, checkpoint))
    assert got == sorted(set(range(20, 60)) - set(range(20, 40, 2)))


def _poll_all(reader: KafkaReader, n: int) -> list:
    out, deadline = [], time.monotonic() + 30
    while len(out) < n and time.monotonic() < deadline:
        out += reader.poll(100, 0.2)
    assert len(out) == n
    return [wv.value["n"] for wv in out]


@pytest.mark.parametrize("on_data_loss", ["warn", "fail"])
def test_a_reader_that_falls_behind_the_log_start_while_reading(kafka_broker, on_data_loss):
    topic = new_topic(kafka_broker, "behind", 1)
    produce(kafka_broker, topic, [{"value": {"n": n}} for n in range(10)])
    source = pm.ReadFromKafka(kafka_broker, topic)
    consumer = source.consumer("behind-test")
    reader = KafkaReader(source, consumer, {(topic, 0): 0}, None, source.dead_letters("r", []),
                         on_data_loss=on_data_loss)
    try:
        assert _poll_all(reader, 10) == list(range(10))
        # stopped (no fetch ahead) while 10..29 are written and 10..24 deleted
        consumer.pause([TopicPartition(topic, 0)])
        produce(kafka_broker, topic, [{"value": {"n": n}} for n in range(10, 30)])
        _delete_before(kafka_broker, topic, 0, 25)
        consumer.resume([TopicPartition(topic, 0, 10)])
        if on_data_loss == "fail":
            with pytest.raises(pm.DataLossError, match=rf"topic '{topic}' partition 0: offsets "
                                                       r"\[10, 25\)"):
                _poll_all(reader, 5)
            return
        assert _poll_all(reader, 5) == list(range(25, 30))
        [lost] = reader.take_lost()
        assert (lost.topic, lost.partition, lost.start, lost.end, lost.count) == (
            topic, 0, 10, 25, 15)
    finally:
        reader.close()
