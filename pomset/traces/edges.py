"""The trace type of each edge of a pipeline: declared with `Typed`, produced by a template or
connector, or inferred through the plain transforms between them; and the type check each
template and connector runs when it is applied."""
from __future__ import annotations

from typing import Any, Optional

from ..sdk.errors import PipelineConstructionError
from .types import KeyValueType, TraceType, U, type_name


class EdgeTrace:
    """What an edge carries: its trace type, the marker period (µs of event time between
    markers), the step that gave it this type and why. `split` names the Hash split and
    output index an edge came from, so a Merge of all of one split's outputs stays ordered."""

    __slots__ = ("type", "period", "origin", "why", "split")

    def __init__(self, type: TraceType, period: int, origin: str, why: str,
                 split: Optional[tuple] = None) -> None:
        self.type = type
        self.period = period
        self.origin = origin
        self.why = why
        self.split = split

    def describe(self) -> str:
        return f"{self.type!r} from {self.origin!r} ({self.why})"

    def __repr__(self) -> str:
        return f"<EdgeTrace {self.describe()}, period {self.period} µs>"


def trace_of(pcoll: Any) -> Optional[EdgeTrace]:
    """The edge's trace, or None for an untyped edge (no `Typed` upstream)."""
    declared = getattr(pcoll, "trace", None)
    if declared is not None:
        return declared
    node = pcoll.producer
    if node is None or not node.inputs:
        return None
    from ..sdk.core import Filter, Flatten, GroupByKey, ParDo, WindowInto
    t = node.transform
    ups = [trace_of(pc) for pc in node.inputs]
    if any(u is None for u in ups):
        return None
    up = ups[0]
    if isinstance(t, Flatten):
        return merged(ups, node.label, "a Flatten unions its inputs block by block")
    if isinstance(t, (WindowInto, Filter)) and pcoll.tag is None:
        return EdgeTrace(up.type, up.period, up.origin, up.why, up.split)
    if isinstance(t, GroupByKey):
        key = up.type.key if isinstance(up.type, KeyValueType) else Any
        return EdgeTrace(U(key, Any), up.period, node.label,
                         "a grouping's panes are placed in blocks by their timestamps, "
                         "unordered within a block")
    if isinstance(t, ParDo):
        return EdgeTrace(U(Any, Any), up.period, node.label,
                         "a plain ParDo keeps timestamps but not keys or order")
    return None


def merged(ups: list, label: str, why: str) -> EdgeTrace:
    """The trace of a union of edges: markers must align (one period); O when every input
    is O and they are the outputs of one Hash split (disjoint keys), else U."""
    periods = {u.period for u in ups}
    if len(periods) > 1:
        raise PipelineConstructionError(
            f"{label!r} merges edges whose markers do not align: periods "
            f"{sorted(p / 1e6 for p in periods)} s (from "
            f"{', '.join(repr(u.origin) for u in ups)}); give them one period")
    types = [u.type for u in ups]
    if not all(isinstance(t, KeyValueType) for t in types):
        if all(t == types[0] for t in types):
            return EdgeTrace(types[0], ups[0].period, label, why)
        raise PipelineConstructionError(
            f"{label!r} merges edges of different trace types "
            f"{', '.join(u.describe() for u in ups)}")
    key, value = _common(types, "key", label), _common(types, "value", label)
    splits = {u.split[0] if u.split else None for u in ups}
    one_split = (len(splits) == 1 and None not in splits
                 and len({u.split[1] for u in ups}) == len(ups))
    if all(t.ordered for t in types) and one_split:
        from .types import O
        return EdgeTrace(O(key, value), ups[0].period, label,
                         "a merge of one Hash split's outputs, whose keys are disjoint")
    return EdgeTrace(U(key, value), ups[0].period, label,
                     why if not all(t.ordered for t in types) else
                     why + "; the inputs may share keys, so their order is not kept")


def _common(types: list, field: str, label: str) -> Any:
    values = {getattr(t, field) for t in types}
    if len(values) == 1:
        return values.pop()
    if Any in values:
        return Any
    raise PipelineConstructionError(
        f"{label!r} merges edges whose {field} types differ: "
        f"{', '.join(type_name(v) for v in values)}")


def require(pcoll: Any, needed: KeyValueType, step: str, what: str, fix: str) -> EdgeTrace:
    """The input's trace, after checking it fits `needed`; else an error naming the step,
    what it needs, what it got and from which upstream step, and the fix."""
    got = trace_of(pcoll)
    if got is None:
        raise PipelineConstructionError(
            f"{what} {step!r} needs a typed input of type {needed!r}, but {pcoll.label!r} has "
            f"no trace type: declare one upstream, e.g. `| pm.Typed(pm.U(str, float), "
            f"period=1)` after the source")
    if not got.type.fits(needed):
        reason = ""
        if isinstance(got.type, KeyValueType) and needed.ordered and not got.type.ordered:
            reason = " (ordered per key between markers), but the input is unordered"
        raise PipelineConstructionError(
            f"{what} {step!r} needs {needed!r}{reason}: it got {got.describe()}. Fix: {fix}")
    return got


def refuse_retractions(node: Any, what: str) -> None:
    """Templates and O+ take data only: an input that may carry retractions is an error
    naming the step (`what` is its kind) and the input."""
    for pc in node.inputs:
        if pc.may_retract:
            raise PipelineConstructionError(
                f"{what} {node.label!r}: its input {pc.label!r} may carry retractions "
                f"(accumulating-and-retracting mode upstream); {what} takes traces of data "
                f"only: use discarding or accumulating mode upstream")
