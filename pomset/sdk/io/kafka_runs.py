"""Which run of a pipeline last committed output to Kafka, found without its checkpoint
directory. A checkpointed run's first transaction in each process also commits, for a consumer
group named by the Kafka topics the pipeline reads and writes (`pipeline_group`), an offset on
its progress topic whose metadata names the run and its directory (`pointer`). A run whose
checkpoint directory holds nothing looks it up (`last_run`): Kafka holding that run's progress
mark means the directory was lost, not new."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable, List, NamedTuple, Optional, Tuple

from .kafka import ReadFromKafka, WriteToKafka, client_config
from .kafka_clients import committed_mark

_TIMEOUT = 30.0


class LastRun(NamedTuple):
    """A run whose output Kafka holds: its id, checkpoint directory, progress topic and the
    last progress mark it committed."""

    run_id: str
    directory: str
    topic: str
    mark: int


def pipeline_group(transforms: Iterable[Any]) -> str:
    """The consumer group that points at the pipeline's last run: named by the topics its
    `ReadFromKafka`s read and its `WriteToKafka`s write, so that the same pipeline finds it
    again from any directory."""
    transforms = list(transforms)
    reads = sorted({t for x in transforms if isinstance(x, ReadFromKafka) for t in x.topics})
    writes = sorted({x.topic for x in transforms if isinstance(x, WriteToKafka)})
    digest = hashlib.sha256(json.dumps([reads, writes]).encode()).hexdigest()[:20]
    return f"pomset-pipeline-{digest}"


def pointer(transforms: Iterable[Any], run_id: str, directory: str) -> Tuple[str, str]:
    """What a run of the pipeline of `transforms` commits with its first transaction (a
    `KafkaOutput`'s `pointer`): its group and the metadata naming the run and its directory."""
    return pipeline_group(transforms), json.dumps({"run_id": run_id, "checkpoint_dir": directory},
                                                  sort_keys=True)


def last_run(sinks: List[WriteToKafka], group: str) -> Optional[LastRun]:
    """The run the pipeline's pointer names, when Kafka holds a progress mark of it (on one of
    `sinks`' topics, where a run keeps its mark); None when no run of it committed output."""
    from confluent_kafka import Consumer, TopicPartition
    topics = sorted({s.topic for s in sinks})
    consumer = Consumer(client_config({"bootstrap.servers": sinks[0].bootstrap_servers,
                                       "group.id": group, "enable.auto.commit": False}))
    try:
        got = consumer.committed([TopicPartition(t, 0) for t in topics], timeout=_TIMEOUT)
    finally:
        consumer.close()
    for tp in got:
        if not tp.metadata:
            continue
        named = json.loads(tp.metadata)
        mark = committed_mark(sinks[0].bootstrap_servers, named["run_id"], tp.topic)
        if mark is not None:
            return LastRun(named["run_id"], named["checkpoint_dir"], tp.topic, mark)
    return None
