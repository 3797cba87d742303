"""The counts every runner reports per step in `result.metrics()`, by the step's kind (what
the local runner's stages count): a runner that sends only what it saw (Spark's tasks and
micro-batches) completes its metrics with the zeros, so that the same pipeline has the same
keys on every runner. Every step also has its flow: the elements it `received` on its main
inputs and `emitted` on each output (`emitted[tag]` for a tagged one); a runner that counts
only what steps emit (Spark) derives the rest with `with_flow`."""
from __future__ import annotations

from typing import Any, Collection, Dict, List, Optional, Tuple

from ..sdk.core import GroupByKey, Source
from ..sdk.io.base import Sink
from ..sdk.io.kafka import ReadFromKafka
from ..sdk.user_metrics import USER, merge_snapshots
from ..traces import TemplateStep


def step_counts(node: Any) -> Tuple[str, ...]:
    """The counts a step has: read (sources), written (sinks), dead letters (where it has a
    dead-letter output), late and dropped elements (groupings; templates: late; stateful
    DoFns: dropped)."""
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
    if getattr(t, "stateful", False):
        keys.append("dropped")
    if isinstance(t, TemplateStep):
        keys.append("late")
    return tuple(keys)


def add_counts(into: Dict[str, Any], counts: Dict[str, Any]) -> Dict[str, Any]:
    """`into`, a step's counts, with more of them added: numbers sum, user metrics merge."""
    for name, n in counts.items():
        into[name] = merge_snapshots(into.get(name), n) if name == USER else into.get(name, 0) + n
    return into


def emitted_key(tag: Optional[str]) -> str:
    """The name of the count of elements a step emitted on output `tag`."""
    return "emitted" if tag is None else f"emitted[{tag}]"


def with_flow(metrics: Dict[str, Dict[str, int]], nodes: List[Any],
              as_received: Collection[Tuple[str, Optional[str]]] = ()
              ) -> Dict[str, Dict[str, int]]:
    """`metrics`, whose steps counted what they emitted, with every step's flow: a step
    received what the steps producing its main inputs emitted on them (as the local runner
    counts `received`); a source emits what it read (and its dead letters on its dead-letter
    output), an output in `as_received` ((label, tag): one element out per element in)
    what its step received, and an output nobody counted nothing."""
    made: Dict[int, int] = {}
    for node in nodes:   # in the pipeline's order: producers first
        counts = metrics.setdefault(node.label, {})
        counts["received"] = received = sum(made.get(id(pc), 0) for pc in node.inputs)
        if isinstance(node.transform, Source):
            counts[emitted_key(None)] = counts.get("read", 0)
            dead = getattr(node.transform, "dead_letter_tag", None)
            if dead is not None:
                counts[emitted_key(dead)] = counts.get("dead_lettered", 0)
        for tag, pc in node.outputs.items():
            if (node.label, tag) in as_received:
                counts[emitted_key(tag)] = received
            made[id(pc)] = counts.setdefault(emitted_key(tag), 0)
    return metrics


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
