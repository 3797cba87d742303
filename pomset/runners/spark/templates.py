"""Template steps in a Spark batch plan, deployed as Theorem 4.3 says:

- `OpStateless`: a vectorized map (its instances are the tasks of a `mapInArrow` over Arrow
  batches, fused with the Python steps around it); its on_marker, if any, runs once per
  marker on the driver, over the blocks the input spans.
- `OpKeyedUnordered` and `OpKeyedOrdered`: the elements are split by `stable_hash(key) %
  parallelism` and each split runs as one instance in an `applyInArrow` task, its blocks in
  marker order, up to the last block of the whole input (an aggregate computed first, so
  every instance passes the same markers). A Sort fused into the step sorts each block in the
  task. Spark's shuffle keeps no order, so an ordered operator's input must come from a Sort,
  or straight from another ordered operator (which keeps the key): then it runs over that
  one's output partitions, in the order they were emitted, with no shuffle between them.

A step's markers also cover the ranges of the typed declarations and template steps upstream
of it (`Fusion.range_sources`), as a source's markers reach every step downstream of it.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pyarrow as pa

from ...sdk.errors import PipelineConstructionError
from ...runtime.collector import collect_rarely
from ...runtime.fusion import Fusion
from ...runtime.deployment import (Deployment, as_elements, as_items, block_range,
                                  range_blocks, stable_hash)
from ...runtime.markers import MarkerRange
from ...runtime.plan import PlanNode, TranslatorTable, kind_of, kinds
from ...windowing import WindowedValue
from ...windowing.time import GLOBAL_WINDOW_MAX_MICROS
from . import codec
from .steps import Steps


def _chained(node: Any, fusion: Fusion) -> Optional[Any]:
    """The ordered operator an ordered operator reads straight from (same keys), if any."""
    step = node.transform
    up = node.inputs[0].producer
    if (step.kind() != "keyed_ordered" or step.sort is not None or fusion.sort_of(node)
            or up is None or kind_of(up) != kinds.TEMPLATE
            or fusion.passes_through(up) or up.transform.kind() != "keyed_ordered"):
        return None
    return up


def check_order(node: Any, fusion: Fusion, chains: bool = True) -> None:
    """Refuse an ordered operator whose order Spark cannot keep: no Sort fused before it,
    and (in batch, `chains`) not straight after another ordered operator."""
    step = node.transform
    if (step.kind() == "keyed_ordered" and step.sort is None and fusion.sort_of(node) is None
            and (not chains or _chained(node, fusion) is None)):
        raise PipelineConstructionError(
            f"the Spark runner cannot run {node.label!r} as written: an OpKeyedOrdered needs its "
            f"input in order, and Spark keeps each key's order only through a pm.Sort right "
            f"before it{', or straight from another OpKeyedOrdered' if chains else ''} "
            f"({node.inputs[0].label!r} is "
            f"{step.input_trace.describe()}); insert `| pm.Sort(order=...)` before it")


def register(table: TranslatorTable) -> None:
    """Add the typed-declaration and template-step translators to a Spark batch table."""
    table.register(kinds.TYPED, _typed)
    table.register(kinds.TEMPLATE, _template)


def _typed(node: PlanNode, plan: Any) -> Dict[Optional[str], Any]:
    """A `Typed` node passes its input through, its marker range registered (`typed_range`)."""
    plan.as_element_rows(node)
    typed_range(plan, node.graph, plan.marker_ranges)
    return {None: plan.dfs[id(node.inputs[0])]}


def _template(node: PlanNode, plan: Any) -> Dict[Optional[str], Any]:
    plan.as_element_rows(node)
    return {None: translate(plan, node.graph, plan.fusion, plan.marker_ranges)}


def translate(plan: Any, node: Any, fusion: Fusion, ranges: dict) -> Any:
    """The DataFrame (or pending Python steps) of a template step's output. `ranges` maps
    each translated typed node to a function giving its marker range (`MarkerRange`),
    computed once, when a step downstream asks: a step's markers cover those upstream."""
    step = node.transform
    source = node.inputs[0]
    if fusion.passes_through(node):
        return plan.dfs[id(source)]
    check_order(node, fusion)
    period = step.period
    times = _memo(lambda: _times(plan.persisted_df(source)))
    upstream = [ranges[id(n)] for n in fusion.range_sources(node)]
    marked = _memo(lambda: range_blocks([times()[0]] + [r() for r in upstream], period))
    ranges[id(node)] = _memo(lambda: block_range(*marked(), period))
    if step.kind() == "stateless":
        return _stateless(plan, node, step, lambda: times()[1], marked)
    if _chained(node, fusion) is not None:
        return _after_ordered(plan, node, step, marked()[1])
    return _keyed(plan, node, step, fusion.sort_of(node), lambda: marked()[1])


def typed_range(plan: Any, node: Any, ranges: dict) -> None:
    """Register a `Typed` node's marker range: the earliest and latest timestamps on it."""
    ranges[id(node)] = _memo(lambda: _times(plan.persisted_df(node.outputs[None]))[0])


def _memo(fn: Callable[[], Any]) -> Callable[[], Any]:
    got: list = []

    def once() -> Any:
        if not got:
            got.append(fn())
        return got[0]
    return once


def _stateless(plan: Any, node: Any, step: Any, final: Callable[[], bool],
               marked: Callable[[], Tuple[Optional[int], Optional[int]]]) -> Any:
    label = node.label

    def start() -> Any:
        d = Deployment(step, label, parallelism=1, stage_markers=False)
        return (lambda bundle: as_elements(d.map_all(as_items(bundle)))), None
    mapped = plan.steps(node.inputs[0]).then(start)
    if not step.template.marks():
        return mapped
    first, last = marked()
    if first is None and not final():
        return mapped
    d = Deployment(step, label, parallelism=1)
    marks = as_elements(d.markers_between(first or 0, last if last is not None else -1, final()))
    if not marks:
        return mapped
    marks_df = plan.spark.createDataFrame(pa.Table.from_batches(
        list(codec.batches(marks, 10_000)), schema=codec.ELEMENT_ARROW))
    return plan.step_df(mapped, label).unionAll(marks_df)


def _times(df: Any) -> Tuple[MarkerRange, bool]:
    """The marker range of a DataFrame's elements (their earliest and latest timestamps
    before the end of time) and whether any is at the end of time."""
    from pyspark.sql import functions as F
    regular = F.col("ts") < F.lit(GLOBAL_WINDOW_MAX_MICROS)
    row = df.agg(F.min(F.when(regular, F.col("ts"))).alias("lo"),
                 F.max(F.when(regular, F.col("ts"))).alias("hi"),
                 F.max(F.when(~regular, F.lit(1))).alias("end")).collect()[0]
    return MarkerRange(row["lo"], row["hi"]), bool(row["end"])


def _keyed(plan: Any, node: Any, step: Any, sort: Optional[Any], end: Any) -> Any:
    label, n = node.label, step.parallelism
    key_value = step.input_trace.type.key_value

    def split(bundles: Iterator[List[WindowedValue]]) -> Iterator[pa.RecordBatch]:
        for bundle in bundles:
            splits = []
            for wv in bundle:
                try:
                    key = key_value(wv.value)[0]
                except Exception:
                    key = None   # the deployment names the malformed item
                splits.append(b"%d" % (stable_hash(key) % n))
            yield codec.encode(bundle, keys=splits)
    keyed = plan.persist(plan.steps(node.inputs[0]).run(split, codec.KEYED,
                                                         node.inputs[0].producer.label))
    plan.dfs[id(node.inputs[0])] = keyed.drop("k")   # its span is taken from these rows
    last = end()

    def instance(table: pa.Table) -> Iterator[List[WindowedValue]]:
        d = Deployment(step, label, parallelism=1, sort=sort)
        out = d.receive(as_items(codec.decode(table)))
        yield as_elements(out + d.finish(last))
    return Steps(keyed.groupBy("k"), instance, grouped=True)


def _after_ordered(plan: Any, node: Any, step: Any, last: Optional[int]) -> Any:
    """An ordered operator over the output of the ordered operator before it, partition by
    partition in emission order (each partition holds whole keys, in order)."""
    label = node.label

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        collect_rarely()
        d = Deployment(step, label, parallelism=1)
        for b in batches:
            out = as_elements(d.receive(as_items(codec.decode(b))))
            if out:
                yield from codec.batches(out, 10_000)
        out = as_elements(d.finish(last))
        if out:
            yield from codec.batches(out, 10_000)
    return plan.df(node.inputs[0]).mapInArrow(task, codec.ELEMENT)
