"""Helpers for tests against the embedded broker: topics, producing test records, reading a
topic back (committed records only) and netting pomset's output by its diff header."""
from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from typing import Any, Dict, Iterable, List, Optional

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

CAP = {"fetch.max.bytes": 1 << 20, "max.partition.fetch.bytes": 1 << 20}


def new_topic(bootstrap: str, prefix: str, partitions: int = 1) -> str:
    """A fresh topic with this many partitions."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=partitions,
                                  replication_factor=1)])[name].result(30)
    return name


def produce(bootstrap: str, topic: str, records: Iterable[dict]) -> None:
    """Records as dicts: value (JSON-encoded unless bytes), and optional partition, key,
    timestamp (ms), headers."""
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for r in records:
        value = r["value"]
        kwargs = {"value": value if isinstance(value, bytes) else json.dumps(value).encode()}
        for name in ("partition", "key", "timestamp", "headers"):
            if r.get(name) is not None:
                kwargs[name] = r[name]
        p.produce(topic, **kwargs)
    assert p.flush(30) == 0


def read_topic(bootstrap: str, topic: str, timeout: float = 30.0,
               start: Optional[Dict[int, int]] = None, committed: bool = True) -> List[Any]:
    """Every committed record of a topic (read_committed; every record but markers with
    `committed=False`), to its current end; from each partition's offset in `start`, else 0."""
    isolation = "read_committed" if committed else "read_uncommitted"
    c = Consumer(dict(CAP, **{"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex}",
                              "isolation.level": isolation, "enable.partition.eof": True,
                              "enable.auto.commit": False}))
    parts = sorted(c.list_topics(topic, timeout=10).topics[topic].partitions)
    c.assign([TopicPartition(topic, p, (start or {}).get(p, 0)) for p in parts])
    open_parts, out = set(parts), []
    deadline = time.monotonic() + timeout
    while open_parts and time.monotonic() < deadline:
        for m in c.consume(1000, 0.5):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    open_parts.discard(m.partition())
                continue
            out.append(m)
    c.close()
    assert not open_parts, f"partitions {open_parts} of {topic} did not reach their end"
    return out


def diff_of(msg: Any) -> int:
    return {b"+1": 1, b"-1": -1}[dict(msg.headers())["pomset-diff"]]


def netted(messages: Iterable[Any], key: Optional[Any] = None) -> Counter:
    """The multiset the records add up to: each value (decoded JSON, made hashable, with its
    window end when there is one) counted with its diff; zero counts dropped."""
    total: Counter = Counter()
    for m in messages:
        headers = dict(m.headers())
        value = _hashable(json.loads(m.value()))
        end = headers.get("pomset-window-end")
        total[(value, float(end)) if end is not None else value] += diff_of(m)
    return Counter({k: n for k, n in total.items() if n})


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


def transactional_log(bootstrap: str, topic: str, seed: int, transactions: int = 40,
                      producers: int = 2, pad: int = 1000) -> List[Any]:
    """Fill one partition with `transactions` transactions of random sizes (up to 400 records
    of about `pad` bytes) from `producers` transactional producers taking turns at random,
    about a third of them aborted, with a plain idempotent producer's records between them:
    the (offset, value) of every committed record, in offset order."""
    import random
    rng = random.Random(seed)
    run = uuid.uuid4().hex[:8]
    txns = [Producer({"bootstrap.servers": bootstrap, "transactional.id": f"log-{run}-{i}",
                      "linger.ms": 5}) for i in range(producers)]
    plain = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for p in txns:
        p.init_transactions()
    delivered: dict = {}

    def record(p: Any, value: bytes) -> None:
        p.produce(topic, value=value, partition=0,
                  on_delivery=lambda err, m: delivered.__setitem__(m.value(), m.offset()))

    committed = []
    for t in range(transactions):
        p, abort = rng.choice(txns), rng.random() < 0.35
        values = [json.dumps({"t": t, "i": i, "pad": "x" * rng.randint(0, pad)}).encode()
                  for i in range(rng.choice([1, 5, 50, 400]))]
        p.begin_transaction()
        for v in values:
            record(p, v)
        p.flush(30)
        (p.abort_transaction if abort else p.commit_transaction)(30)
        committed += [] if abort else values
        if rng.random() < 0.3:
            extra = [json.dumps({"plain": t, "i": i}).encode() for i in range(rng.randint(1, 20))]
            for v in extra:
                record(plain, v)
            assert plain.flush(30) == 0
            committed += extra
    return sorted((delivered[v], v) for v in committed)
