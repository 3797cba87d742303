"""Helpers for tests against the embedded broker: topics, producing test records, reading a
topic back (committed records only) and netting pomset's output by its diff header."""
from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from typing import Any, Iterable, List, Optional

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


def read_topic(bootstrap: str, topic: str, timeout: float = 30.0) -> List[Any]:
    """Every committed record of a topic (read_committed), to its current end."""
    c = Consumer(dict(CAP, **{"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex}",
                              "isolation.level": "read_committed", "enable.partition.eof": True,
                              "enable.auto.commit": False}))
    parts = sorted(c.list_topics(topic, timeout=10).topics[topic].partitions)
    c.assign([TopicPartition(topic, p, 0) for p in parts])
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
