"""The counts every runner reports per step in `result.metrics()`, by the step's kind (what
the local runner's stages count): a runner that sends only what it saw (Spark's tasks and
micro-batches) completes its metrics with the zeros, so that the same pipeline has the same
keys on every runner."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ..sdk.core import GroupByKey, Source
from ..sdk.io.base import Sink
from ..sdk.io.kafka import ReadFromKafka
from ..traces import TemplateStep


def step_counts(node: Any) -> Tuple[str, ...]:
    """The counts a step has: read (sources), written (sinks), dead letters (where it has a
    dead-letter output), late and dropped elements (groupings; templates: late)."""
    t = node.transform
    keys: List[str] = []
    if isinstance(t, Source):
        keys.append("read")
    if isinstance(t, ReadFromKafka):
        keys.append("lost_to_retention")
    if getattr(t, "dead_letter_tag", None) is not None:
        keys.append("dead_lettered")
    if isinstance(t, Sink):
        keys.append("written")
    if isinstance(t, GroupByKey):
        keys += ["late", "dropped"]
    if isinstance(t, TemplateStep):
        keys.append("late")
    return tuple(keys)


def complete(metrics: Dict[str, Dict[str, int]], nodes: List[Any]) -> Dict[str, Dict[str, int]]:
    """`metrics` with an entry per step and every count `step_counts` names (0 where none was
    reported), the steps in the pipeline's order, then any other entry."""
    out = {}
    for node in nodes:
        counts = dict.fromkeys(step_counts(node), 0)
        counts.update(metrics.get(node.label, {}))
        out[node.label] = counts
    out.update((k, v) for k, v in metrics.items() if k not in out)
    return out
