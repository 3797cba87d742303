"""The embedded broker's front (`pomset.broker_front`): empty fetches are held back as a Kafka
broker holds them (until records come or MaxWaitMs), so an idle consumer waits instead of
asking tens of thousands of times a second; records still come at once; the broker's
address in its answers is the front's; a fetch's answer is cut to the request's MaxBytes and
PartitionMaxBytes at record batch boundaries (the first batch always kept), so that a consumer
behind by more than it may receive still progresses; a read_committed answer lists only the
aborted transactions that end at or after its fetch offset, as a Kafka broker's does (the ends
looked up by the front), so that a consumer that starts or goes on after an aborted
transaction still reads that producer's committed records. The frame readers are checked against
frames written here from the Kafka protocol's schemas (Fetch v4 to v16: fixed-width fields
to v11, flexible with topic names at v12, flexible with topic ids from v13)."""
from __future__ import annotations

import json
import os
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from hypothesis import given, settings, strategies as st

from pomset.broker import EmbeddedKafka
from pomset.broker_front import (_address, _batch_markers, _fetch_response, answer, empty_fetch,
                                 lookup_request, request, stale_aborts)


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
PARTITION_TAGS = _uvarint(1) + _uvarint(0) + _uvarint(3) + b"tag"   # one tagged field, kept
#: the Fetch versions the cut is checked at (librdkafka asks noida-db at v12)
CUT_VERSIONS = [4, 5, 7, 9, 11, 12, 13, 15, 16]


def _topic_name(version: int) -> bytes:
    return uuid.UUID(int=42).bytes if version >= 13 else _string(b"views", version >= 12)


def fetch_request(version: int, max_wait_ms: int, max_bytes: int = 1 << 20,
                  partition_max_bytes: tuple = (), isolation: int = 0,
                  offset: int = 100) -> bytes:
    """A Fetch request (v4+) for one partition of one topic per entry of
    `partition_max_bytes`, that partition's limit, each from `offset`."""
    flexible = version >= 12
    header = struct.pack(">hhi", 1, version, 7) + struct.pack(">h", 6) + b"client"
    body = b"" if version >= 15 else struct.pack(">i", -1)   # replica id
    body += struct.pack(">iiib", max_wait_ms, 1, max_bytes, isolation)
    body += struct.pack(">ii", 0, -1) if version >= 7 else b""   # session id and epoch
    parts = []
    for i, limit in enumerate(partition_max_bytes):
        p = struct.pack(">i", i) + (struct.pack(">i", -1) if version >= 9 else b"")
        p += struct.pack(">q", offset) + (struct.pack(">i", -1) if version >= 12 else b"")
        p += (struct.pack(">q", -1) if version >= 5 else b"") + struct.pack(">i", limit)
        parts.append(p + (TAGS if flexible else b""))
    topics = [_topic_name(version) + _array(parts, flexible) + (TAGS if flexible else b"")]
    body += _array(topics if parts else [], flexible)
    body += _array([], flexible) if version >= 7 else b""   # forgotten topics
    body += _string(b"", flexible) if version >= 11 else b""   # rack id
    return header + (TAGS if flexible else b"") + body + (TAGS if flexible else b"")


def fetch_response(version: int, records: list, error: int = 0, partition_error: int = 0,
                   aborted: list = ()) -> bytes:
    """A Fetch response (v4+) naming one partition of one topic per entry of `records`, the
    bytes of its records, each listing the `aborted` transactions (producer id, first offset)."""
    flexible = version >= 12
    parts = []
    for i, data in enumerate(records):
        p = struct.pack(">ihqq", i, partition_error, 10, 10)
        p += struct.pack(">q", 0) if version >= 5 else b""   # log start offset
        p += _array([struct.pack(">qq", *a) + (TAGS if flexible else b"") for a in aborted],
                    flexible)
        p += struct.pack(">i", -1) if version >= 11 else b""   # preferred read replica
        if flexible:
            p += _uvarint(len(data) + 1) + data + PARTITION_TAGS
        else:
            p += struct.pack(">i", len(data)) + data
        parts.append(p)
    topics = [_topic_name(version) + _array(parts, flexible) + (TAGS if flexible else b"")]
    head = struct.pack(">i", 7) + (TAGS if flexible else b"") + struct.pack(">i", 0)
    head += struct.pack(">hi", error, 0) if version >= 7 else b""   # error code, session id
    return head + _array(topics, flexible) + (TAGS if flexible else b"")


def batch(offset: int, size: int) -> bytes:
    """A record batch of `size` bytes in all: its base offset, its length, then filler."""
    return struct.pack(">qi", offset, size - 12) + bytes([offset % 251]) * (size - 12)


@pytest.mark.parametrize("version", [11, 12, 13, 15])
def test_a_fetch_requests_max_wait_is_read_in_every_encoding(version):
    assert request(fetch_request(version, 500)).wait_ms == 500
    assert request(fetch_request(version, 0)).wait_ms == 0


@pytest.mark.parametrize("version", [4, 7, 11, 12, 13, 16])
def test_a_fetch_response_is_empty_only_without_records_and_errors(version):
    assert empty_fetch(fetch_response(version, [b"", b""]), version)
    assert empty_fetch(fetch_response(version, [b"", b""], aborted=[(5, 3)] * 2), version)
    assert not empty_fetch(fetch_response(version, [b"", b"x" * 70]), version)
    assert not empty_fetch(fetch_response(version, [b"x" * 70, b""]), version)
    if version >= 7:
        assert not empty_fetch(fetch_response(version, [b"", b""], error=3), version)
    assert not empty_fetch(fetch_response(version, [b"", b""], partition_error=1), version)
    assert not empty_fetch(fetch_response(version, [b"", b""])[:-9], version)   # unreadable


@pytest.mark.parametrize("version", CUT_VERSIONS)
def test_a_fetch_requests_limits_are_read_by_topic_and_partition(version):
    fetch = request(fetch_request(version, 500, 5000, (700, 300))).fetch
    topic = uuid.UUID(int=42).bytes if version >= 13 else b"views"
    assert (fetch.total, fetch.partitions, fetch.least) == (5000, {(topic, 0): 700, (topic, 1): 300},
                                                         300)


@pytest.mark.parametrize("version", CUT_VERSIONS)
def test_a_fetch_response_over_its_limits_is_cut_at_batch_boundaries(version):
    a = [batch(i, 300) for i in range(4)]
    b = [batch(i, 150) for i in range(4)]
    fetch = request(fetch_request(version, 500, 1000, (700, 700))).fetch
    cut = answer(fetch_response(version, [b"".join(a), b"".join(b)]), version, fetch)
    # partition 0 within its 700 bytes, partition 1 within the 400 left of the 1000
    assert cut == fetch_response(version, [a[0] + a[1], b[0] + b[1]])
    assert [p.end - p.start for p in _fetch_response(cut, version)[1]] == [600, 300]


@pytest.mark.parametrize("version", CUT_VERSIONS)
def test_a_fetch_response_within_its_limits_passes_as_it_came(version):
    fetch = request(fetch_request(version, 500, 1000, (400, 400))).fetch
    small = fetch_response(version, [batch(0, 100), batch(0, 100)])
    assert answer(small, version, fetch) is small   # no longer than the least limit: not read
    fits = fetch_response(version, [batch(0, 400), batch(0, 300) + batch(1, 100)])
    assert len(fits) > fetch.least and answer(fits, version, fetch) is fits
    assert answer(fits, version, None) is fits   # an unread request limits nothing


@pytest.mark.parametrize("version", CUT_VERSIONS)
def test_the_first_batch_of_a_fetch_response_is_kept_whatever_its_size(version):
    fetch = request(fetch_request(version, 500, 1000, (500, 500))).fetch
    big, small = batch(0, 3000), batch(1, 100)
    cut = answer(fetch_response(version, [b"", big + small, small]), version, fetch)
    assert cut == fetch_response(version, [b"", big, b""])


@pytest.mark.parametrize("version", [11, 12])
def test_a_fetch_response_that_cannot_be_read_passes_as_it_came(version):
    fetch = request(fetch_request(version, 500, 100, (100,))).fetch
    truncated = fetch_response(version, [batch(0, 300) + batch(1, 300)])[:-1]
    assert answer(truncated, version, fetch) is truncated
    bad = fetch_response(version, [struct.pack(">qi", 0, -5) + bytes(300)])
    assert answer(bad, version, fetch) is bad


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CUT_VERSIONS),
       st.lists(st.lists(st.integers(12, 400), max_size=5), min_size=1, max_size=3),
       st.integers(0, 1500), st.lists(st.integers(0, 800), min_size=3, max_size=3))
def test_a_cut_keeps_each_partitions_first_whole_batches_that_fit(version, sizes, total, limits):
    batches = [[batch(i, n) for i, n in enumerate(part)] for part in sizes]
    fetch = request(fetch_request(version, 500, total, tuple(limits[:len(sizes)]))).fetch
    cut = answer(fetch_response(version, [b"".join(part) for part in batches]), version, fetch)
    kept = [cut[p.start:p.end] for p in _fetch_response(cut, version)[1]]
    left, first, counts = total, True, []
    for part, limit, records in zip(batches, limits, kept):
        prefixes = [b"".join(part[:k]) for k in range(len(part) + 1)]
        assert records in prefixes   # whole batches, from the first on
        n = prefixes.index(records)
        budget = min(limit, left)
        assert len(records) <= max(budget, 0) or (first and n == 1)   # only the first may not fit
        if n < len(part):   # the next batch did not fit
            assert len(records) + len(part[n]) > budget and not (first and n == 0)
        first, left = first and not n, left - len(records)
        counts.append(n)
    assert sum(map(len, kept)) <= total or sum(counts) == 1


def record_batch(offset: int, producer: int, attributes: int, payload: int = 20) -> bytes:
    """A record batch's 61-byte header (magic 2) and `payload` bytes of filler."""
    length = 49 + payload
    return (struct.pack(">qiibIhiqqqhii", offset, length, 0, 2, 0, attributes, 0, 0, 0, producer,
                        0, 0, 1) + bytes(payload))


@pytest.mark.parametrize("version", CUT_VERSIONS)
def test_a_read_committed_answer_lists_the_aborted_transactions_that_end_at_or_after_its_offset(
        version):
    """A Kafka broker lists an aborted transaction in a read_committed answer only where its
    marker is at or after the fetch offset: a client that never reads the marker would drop
    every later record of that producer. One begun at or after the offset, or whose end is not
    known, stays listed; a read_uncommitted answer passes as it came."""
    topic = uuid.UUID(int=42).bytes if version >= 13 else b"views"
    records = record_batch(100, 9, 0)
    listed = [(5, 3), (6, 50), (7, 120), (8, 60)]
    frame = fetch_response(version, [records], aborted=listed)
    fetch = request(fetch_request(version, 500, 1 << 20, (1 << 20,), isolation=1)).fetch
    assert fetch.read_committed and fetch.offsets == {(topic, 0): 100}
    assert stale_aborts(_fetch_response(frame, version)[1], fetch) == [
        (topic, 0, 5, 3), (topic, 0, 6, 50), (topic, 0, 8, 60)]
    ends = {(topic, 0, 5, 3): 40, (topic, 0, 6, 50): 150}   # 8's end not known
    assert answer(frame, version, fetch, ends) == fetch_response(
        version, [records], aborted=[(6, 50), (7, 120), (8, 60)])
    ends[(topic, 0, 8, 60)] = 99
    assert answer(frame, version, fetch, ends) == fetch_response(
        version, [records], aborted=[(6, 50), (7, 120)])
    uncommitted = request(fetch_request(version, 500, 1 << 20, (1 << 20,))).fetch
    assert stale_aborts(_fetch_response(frame, version)[1], uncommitted) == []


def test_a_transactions_marker_is_found_in_its_partitions_batches():
    """A producer's transaction begins at its first transactional batch after its previous
    marker; a control batch of that producer is its marker. Non-transactional batches and
    other producers' markers do not end it."""
    log = [record_batch(10, 1, 0x10), record_batch(11, 1, 0x10), record_batch(12, 2, 0x10),
           record_batch(13, -1, 0), record_batch(14, 1, 0x30, 6), record_batch(15, 2, 0x30, 6),
           record_batch(16, 1, 0x10), record_batch(17, 1, 0x30, 6), record_batch(18, 3, 0x10)]
    frame = b"".join(log)
    assert _batch_markers(frame, 0, len(frame)) == {(1, 10): 14, (2, 12): 15, (1, 16): 17}
    later = len(log[0])   # read from offset 11: producer 1's first transaction matches no entry
    assert _batch_markers(frame, later, len(frame)) == {(1, 11): 14, (2, 12): 15, (1, 16): 17}


@pytest.mark.parametrize("version", CUT_VERSIONS)
def test_the_fronts_own_lookup_is_a_fetch_of_one_partition_from_an_offset(version):
    topic = uuid.UUID(int=42).bytes if version >= 13 else b"views"
    asked = request(lookup_request(version, topic, 3, 42, 9))
    assert (asked.api_key, asked.version, asked.correlation, asked.wait_ms) == (1, version, 9, 0)
    assert asked.fetch.offsets == {(topic, 3): 42} and not asked.fetch.read_committed


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


def test_a_consumer_behind_by_more_than_it_may_receive_gets_every_record_in_order(kafka_broker):
    """noida-db answers a Fetch with every record from its offset on; the front cuts the answer
    to the consumer's 1 MiB limits, else a consumer behind by 6 MB rejects each answer as too
    large ("Invalid response size") and never progresses."""
    topic = _topic(kafka_broker)
    values = [b"%05d" % i + b"v" * 1019 for i in range(6000)]   # 1 KB each, 6 MB in all
    p = Producer({"bootstrap.servers": kafka_broker})
    for v in values:
        p.produce(topic, v)
    assert p.flush(30) == 0
    c = _consumer(kafka_broker, topic, [], **{"fetch.max.bytes": 1 << 20,
                                              "max.partition.fetch.bytes": 1 << 20,
                                              "receive.message.max.bytes": (1 << 20) + 512})
    try:
        got: list = []
        started = time.monotonic()
        while len(got) < len(values) and time.monotonic() - started < 20:
            got += [m for m in c.consume(1000, 0.2) if m.error() is None]
        assert [m.offset() for m in got] == list(range(len(values)))
        assert [m.value() for m in got] == values
    finally:
        c.close()
