"""Kafka sources on the Spark streaming bus: a source's records read by
`stream_sources.KafkaReader`, with a marker channel per partition. `register` adds the
translator to a streaming table (`extensions.streaming_table`), so that `streaming.py` names
no Kafka source."""
from __future__ import annotations

from typing import Any, Dict, List

from ...runtime.plan import PlanNode, TranslatorTable, kinds
from . import stream_sources
from .streaming import BusStep, StreamingPlan


def register(table: TranslatorTable) -> None:
    """Add the Kafka source's translator to a Spark streaming table."""
    table.register(kinds.KAFKA_READ, _read)


def _read(node: PlanNode, plan: StreamingPlan) -> BusStep:
    t = node.transform

    def rows() -> Any:
        return (plan.spark.readStream.format(stream_sources.KAFKA)
                .option("payload", stream_sources.payload(dict(
                    channels=partition_channels(plan, node), source=t, label=node.label,
                    group_id=group_id(plan, node), until_latest=t.until == "latest",
                    interval_s=plan.interval_s, real_clock=not plan.virtual_clock,
                    on_data_loss=plan.on_data_loss, tasks=plan.buckets,
                    max_records=plan.max_records)))
                .load())

    def channels() -> List[str]:
        return list(partition_channels(plan, node).values())
    return BusStep(rows=rows, channels=channels)


def partition_channels(plan: StreamingPlan, node: PlanNode) -> Dict[str, str]:
    """A Kafka source's channel per partition ("topic:partition" -> channel), asked of its
    cluster once and kept in `plan.partition_channels`."""
    got = plan.partition_channels.get(node.label)
    if got is None:
        t, i = node.transform, plan.index[node.label]
        consumer = t.consumer(group_id(plan, node))
        try:
            partitions = t.partitions(consumer)
        finally:
            consumer.close()
        got = plan.partition_channels[node.label] = {
            f"{topic}:{p}": f"s{i}@{topic}:{p}" for topic, p in partitions}
    return got


def group_id(plan: StreamingPlan, node: PlanNode) -> str:
    """The consumer group a Kafka source reads as: its own, else one named by the run."""
    return node.transform.group_id or f"{plan.run_id}-{node.label}"
