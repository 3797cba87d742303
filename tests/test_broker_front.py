"""The embedded broker's front (`pomset.broker_front`): empty fetches are held back as a Kafka
broker holds them (until records come or MaxWaitMs), so an idle consumer waits instead of
asking tens of thousands of times a second; records still come at once; the broker's
address in its answers is the front's. The frame readers are checked against frames written
here from the Kafka protocol's schemas (Fetch v11 with fixed-width fields, v12 flexible with
topic names, v13 flexible with topic ids)."""
from __future__ import annotations

import json
import os
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from pomset.broker import EmbeddedKafka
from pomset.broker_front import _address, empty_fetch, request


def _uvarint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([byte])
        out += bytes([byte | 0x80])


def _string(s: bytes, flexible: bool) -> bytes:
    return _uvarint(len(s) + 1) + s if flexible else struct.pack(">h", len(s)) + s


def _array(items: list, flexible: bool) -> bytes:
    head = _uvarint(len(items) + 1) if flexible else struct.pack(">i", len(items))
    return head + b"".join(items)


TAGS = _uvarint(0)


def fetch_request(version: int, max_wait_ms: int) -> bytes:
    flexible = version >= 12
    header = struct.pack(">hhi", 1, version, 7) + struct.pack(">h", 6) + b"client"
    body = b"" if version >= 15 else struct.pack(">i", -1)   # replica id
    body += struct.pack(">iii", max_wait_ms, 1, 1 << 20)
    return header + (TAGS if flexible else b"") + body + b"\x00" * 20


def fetch_response(version: int, records: list, error: int = 0, partition_error: int = 0,
                   aborted: int = 0) -> bytes:
    """A Fetch response naming two partitions of one topic, with `records` bytes each."""
    flexible = version >= 12
    parts = []
    for i, data in enumerate(records):
        p = struct.pack(">ihqqq", i, partition_error, 10, 10, 0)
        p += _array([struct.pack(">qq", 5, 3) + (TAGS if flexible else b"")] * aborted, flexible)
        p += struct.pack(">i", -1)   # preferred read replica (v11+)
        if flexible:
            p += _uvarint(len(data) + 1) + data + TAGS
        else:
            p += struct.pack(">i", len(data)) + data
        parts.append(p)
    topic = uuid.UUID(int=42).bytes if version >= 13 else _string(b"views", flexible)
    topics = [topic + _array(parts, flexible) + (TAGS if flexible else b"")]
    head = struct.pack(">i", 7) + (TAGS if flexible else b"")
    return (head + struct.pack(">ihi", 0, error, 0) + _array(topics, flexible)
            + (TAGS if flexible else b""))


@pytest.mark.parametrize("version", [11, 12, 13, 15])
def test_a_fetch_requests_max_wait_is_read_in_every_encoding(version):
    assert request(fetch_request(version, 500)).wait_ms == 500
    assert request(fetch_request(version, 0)).wait_ms == 0


@pytest.mark.parametrize("version", [11, 12, 13])
def test_a_fetch_response_is_empty_only_without_records_and_errors(version):
    assert empty_fetch(fetch_response(version, [b"", b""]), version)
    assert empty_fetch(fetch_response(version, [b"", b""], aborted=2), version)
    assert not empty_fetch(fetch_response(version, [b"", b"x" * 70]), version)
    assert not empty_fetch(fetch_response(version, [b"x" * 70, b""]), version)
    assert not empty_fetch(fetch_response(version, [b"", b""], error=3), version)
    assert not empty_fetch(fetch_response(version, [b"", b""], partition_error=1), version)
    assert not empty_fetch(fetch_response(version, [b"", b""])[:-9], version)   # unreadable


def test_only_a_produce_with_acks_0_goes_unanswered():
    def produce(version: int, acks: int) -> bytes:
        header = struct.pack(">hhi", 0, version, 1) + struct.pack(">h", 1) + b"c"
        if version >= 9:
            return header + TAGS + _uvarint(0) + struct.pack(">hi", acks, 1000)
        return header + struct.pack(">h", -1) + struct.pack(">hi", acks, 1000)
    for version in (7, 9):
        assert not request(produce(version, 0)).answered
        assert request(produce(version, 1)).answered and request(produce(version, -1)).answered
    assert request(fetch_request(12, 500)).answered


def test_the_broker_address_is_encoded_host_then_port():
    assert _address(9092) == b"127.0.0.1" + b"\x00\x00\x23\x84"


def _topic(servers: str, partitions: int = 1) -> str:
    name = f"front-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    return name


def _consumer(servers: str, topic: str, stats: list, **config) -> Consumer:
    c = Consumer({"bootstrap.servers": servers, "group.id": uuid.uuid4().hex,
                  "statistics.interval.ms": 1000, "stats_cb": lambda j: stats.append(json.loads(j)),
                  **config})
    c.assign([TopicPartition(topic, 0, 0)])
    return c


def _fetches(stats: list) -> int:
    return sum(b.get("req", {}).get("Fetch", 0) for b in stats[-1]["brokers"].values())


def test_an_idle_consumer_waits_at_the_broker_and_a_record_still_comes_at_once(kafka_broker):
    topic = _topic(kafka_broker)
    stats: list = []
    c = _consumer(kafka_broker, topic, stats, **{"fetch.wait.max.ms": 30_000})
    try:
        started = time.monotonic()
        while time.monotonic() - started < 3.5:
            assert c.consume(100, 0.1) == []
        # without the front the broker answers at once and this counts tens of thousands
        assert stats and _fetches(stats) <= 5
        p = Producer({"bootstrap.servers": kafka_broker})
        p.produce(topic, b"v", key=b"k")
        p.flush(10)
        sent, got = time.monotonic(), []
        while not got and time.monotonic() - sent < 25:
            got = c.consume(10, 0.1)
        assert [m.value() for m in got] == [b"v"]
        # a fetch held for its 30 s MaxWaitMs would have kept the record back that long
        assert time.monotonic() - sent < 15
    finally:
        c.close()


def test_clients_are_told_the_fronts_address(kafka_broker):
    brokers = AdminClient({"bootstrap.servers": kafka_broker}).list_topics(timeout=10).brokers
    assert [f"{b.host}:{b.port}" for b in brokers.values()] == [kafka_broker]


def test_stopping_an_embedded_broker_ends_its_whole_process_group_and_removes_its_data():
    """The broker runs under the front and saves its data on SIGTERM; a data directory removed
    while it still saved was made again (gigabytes left in /tmp by a benchmark's broker)."""
    broker = EmbeddedKafka()
    servers = broker.start()
    producer = Producer({"bootstrap.servers": servers})
    for i in range(2000):
        producer.produce("stop-test", value=json.dumps({"i": i, "pad": "x" * 200}).encode())
    assert producer.flush(30) == 0
    group, data_dir = broker.process.pid, broker.data_dir
    broker.stop()
    with pytest.raises(ProcessLookupError):
        os.killpg(group, 0)   # nothing of the group is left to write there
    time.sleep(1.0)
    assert not os.path.exists(data_dir)
