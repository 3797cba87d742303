"""The operator templates of the paper's Table 1 and the connectors of Section 4, as pipeline
transforms: `OpStateless`, `OpKeyedOrdered`, `OpKeyedUnordered`; `Typed`, `Sort`, `Merge`,
`RoundRobin`, `Hash`.

A template is filled in with functions, either as constructor arguments or by subclassing
and overriding the methods of the same name. Every function that may emit gets `emit` as its
last argument: `emit(key, value)` sends one output item. Applying a template type-checks its
input edge (see `edges`) and adds one `TemplateStep` to the graph, which runners deploy with
the template's `parallelism` (the paper's Theorem 4.3)."""
from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, Optional, Tuple

from ..sdk.errors import PipelineConstructionError
from ..sdk.kinds import KV, UNKNOWN
from ..sdk.ptransform import Primitive, PTransform
from ..sdk import plan_kinds
from ..windowing.time import duration_micros
from .edges import EdgeTrace, merged, refuse_retractions, require, trace_of
from .hashing import stable_hash
from .types import O, KeyValueType, TraceType, U, type_name, unordered


class SortInserted(UserWarning):
    """Type checking inserted a `Sort` before an operator that needs ordered input
    (`--auto_sort`)."""


def _noop(*args: Any) -> None:
    return None


def _keep_state(state: Any, *args: Any) -> Any:
    return state


class Template(PTransform):
    """Base of the three templates: its functions, output type and parallelism hint."""

    #: the input form the template needs (U or O) and the template's name in messages
    needs: type = U
    functions: Tuple[str, ...] = ()
    required: Tuple[str, ...] = ()

    def __init__(self, *, out: Optional[KeyValueType] = None, parallelism: int = 1,
                 label: Optional[str] = None, **functions: Any) -> None:
        super().__init__(label)
        for name, fn in functions.items():
            if name not in self.functions:
                raise TypeError(f"{type(self).__name__} has no function {name!r}; its functions "
                                f"are {', '.join(self.functions)}")
            if fn is not None:
                if not callable(fn):
                    raise TypeError(f"{type(self).__name__}: {name} must be callable, got {fn!r}")
                setattr(self, name, fn)
        missing = [n for n in self.required if getattr(self, n, None) is None]
        if missing:
            raise TypeError(f"{type(self).__name__} needs {', '.join(missing)} (pass them or "
                            f"override them in a subclass)")
        if not isinstance(parallelism, int) or parallelism < 1:
            raise ValueError(f"parallelism must be an int >= 1, got {parallelism!r}")
        if out is not None and not isinstance(out, KeyValueType):
            raise TypeError(f"out must be a trace type like pm.U(str, float), got {out!r}")
        self.out = out
        self.parallelism = parallelism

    def with_parallelism(self, parallelism: int) -> "Template":
        """The same operator with another parallelism hint."""
        import copy
        other = copy.copy(self)
        other.parallelism = parallelism
        return other

    def output_type(self, got: KeyValueType, step: str) -> KeyValueType:
        return self.out if self.out is not None else U()

    def fix_hint(self, got: EdgeTrace) -> str:
        return "declare the input's type with pm.Typed"

    def expand(self, pcoll: Any) -> Any:
        step = pcoll.pipeline.scope_label()
        got = trace_of(pcoll)
        kv = got is not None and isinstance(got.type, KeyValueType)
        needed = self.needs(got.type.key, got.type.value) if kv else self.needs()
        order = getattr(self, "order", None)
        if (kv and needed.ordered and not got.type.ordered and order is not None
                and pcoll.pipeline.options.auto_sort):
            warnings.warn(f"inserted pm.Sort(order={_name(order)}) before {step!r}: it "
                          f"needs {needed!r} and got {got.describe()}", SortInserted,
                          stacklevel=4)
            pcoll = pcoll | Sort(order, parallelism=self.parallelism,
                                 label=f"Sort({_name(order)})")
        got = require(pcoll, needed, step, type(self).__name__, self.fix_hint(got))
        return pcoll.pipeline.apply_as_scope(TemplateStep(self, got), pcoll)


def _name(fn: Any) -> str:
    name = getattr(fn, "__name__", type(fn).__name__)
    return "..." if name == "<lambda>" else name


class OpStateless(Template):
    """U(K, V) -> U(L, W): `on_item(key, value, emit)` per item and `on_marker(marker, emit)`
    per marker; no state. It may run as any number of instances, each item on one of them;
    `on_marker` runs once per marker (not once per instance), so what it emits does not
    multiply with the parallelism."""

    functions = ("on_item", "on_marker")
    on_item: Callable[..., None] = staticmethod(_noop)
    on_marker: Callable[..., None] = staticmethod(_noop)

    def marks(self) -> bool:
        """Whether on_marker was filled in (a runner may then skip passing markers)."""
        return self.on_marker is not _noop


class OpKeyedOrdered(Template):
    """O(K, V) -> O(K, W): per key, `state = on_item(state, key, value, emit)` in order and
    `state = on_marker(state, key, marker, emit)` at every marker after the key's first
    item, from `initial_state()`. Outputs must keep the input key. `order` (a function of
    the value) names the order the operator expects, so `--auto_sort` can insert the Sort."""

    needs = O
    functions = ("initial_state", "on_item", "on_marker")
    initial_state: Callable[[], Any] = staticmethod(_noop)
    on_item: Callable[..., Any] = staticmethod(_keep_state)
    on_marker: Callable[..., Any] = staticmethod(_keep_state)

    def __init__(self, *, order: Optional[Callable[[Any], Any]] = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if order is not None and not callable(order):
            raise TypeError(f"order must be a function of the value, got {order!r}")
        self.order = order

    def output_type(self, got: KeyValueType, step: str) -> KeyValueType:
        if self.out is None:
            return O(got.key)
        if not self.out.ordered or (self.out.key != got.key and got.key is not Any):
            raise PipelineConstructionError(
                f"OpKeyedOrdered {step!r} outputs O({type_name(got.key)}, W) (ordered, keeping "
                f"the input key), but out= says {self.out!r}")
        return self.out

    def fix_hint(self, got: Optional[EdgeTrace]) -> str:
        order = f"order={_name(self.order)}" if self.order is not None else "order=..."
        return (f"insert `| pm.Sort({order})` before it (it sorts each key's items between "
                f"markers), or pass order= to the operator and run with --auto_sort")


class OpKeyedUnordered(Template):
    """U(K, V) -> U(L, W): per key, items between markers are folded with the commutative
    monoid (`in_(key, value)`, `id()`, `combine(a, b)`); at each marker
    `state = update_state(state, aggregate)` and then `on_marker(state, key, marker, emit)`.
    `on_item(last_state, key, value, emit)` sees the state as of the last marker.
    `in_`, `id`, `combine`, `initial_state` and `update_state` must be pure, and `combine`
    associative and commutative: that is what makes the result independent of the order."""

    functions = ("in_", "id", "combine", "initial_state", "update_state", "on_item", "on_marker")
    required = ("in_", "id", "combine", "update_state")
    in_: Optional[Callable[[Any, Any], Any]] = None
    id: Optional[Callable[[], Any]] = None
    combine: Optional[Callable[[Any, Any], Any]] = None
    update_state: Optional[Callable[[Any, Any], Any]] = None
    initial_state: Callable[[], Any] = staticmethod(_noop)
    on_item: Callable[..., None] = staticmethod(_noop)
    on_marker: Callable[..., None] = staticmethod(_noop)


class _Identity(OpKeyedOrdered):
    """The operator a standalone Sort runs: each item out as it came in (sorted)."""

    @staticmethod
    def on_item(state: Any, key: Any, value: Any, emit: Callable) -> Any:
        emit(key, value)


class TemplateStep(Primitive):
    """One template (or Sort) in the graph: what runners deploy. `sort` is the order a fused
    Sort imposes on each key's items between markers before the operator sees them."""

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.TEMPLATE

    def __init__(self, template: Template, input_trace: EdgeTrace,
                 sort: Optional[Callable[[Any], Any]] = None) -> None:
        super().__init__(template.label)
        self.template = template
        self.input_trace = input_trace
        self.sort = sort
        self.parallelism = template.parallelism

    @property
    def period(self) -> int:
        return self.input_trace.period

    def kind(self) -> str:
        if isinstance(self.template, OpStateless):
            return "stateless"
        return "keyed_ordered" if isinstance(self.template, OpKeyedOrdered) else "keyed_unordered"

    def validate(self, node: Any) -> None:
        refuse_retractions(node, type(self.template).__name__)

    def outputs(self, node: Any) -> Dict[Optional[str], Any]:
        main = node.inputs[0]
        got: KeyValueType = self.input_trace.type
        out_type = self.template.output_type(got, node.label)
        why = ("sorted per key between markers" if isinstance(self.template, _Identity)
               else f"the output of {type(self.template).__name__}")
        self.output_trace = EdgeTrace(out_type, self.period, node.label, why)
        from ..sdk.core import default_strategy
        pc = main.derive(windowing=default_strategy(), kind=KV if out_type.keyed else UNKNOWN)
        pc.trace = self.output_trace
        return {None: pc}


class Typed(Primitive):
    """Declares an edge's trace type: `pcoll | pm.Typed(pm.U(str, float), period=10)`. The
    markers are the watermark's, every `period` seconds of event time: the i-th marker says
    every item with a timestamp below i * period has come (the paper's Example 4.1). On an
    edge that already has a type, the period may be left out (it is kept) and the type must
    fit the one there (an ordered stream may be declared unordered, not the reverse)."""

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.TYPED

    def __init__(self, trace_type: TraceType, period: Optional[float] = None,
                 label: Optional[str] = None) -> None:
        super().__init__(label)
        if not isinstance(trace_type, TraceType):
            raise TypeError(f"Typed takes a trace type like pm.U(str, float), got {trace_type!r}")
        if period is not None and duration_micros(period) <= 0:
            raise ValueError(f"period must be positive, got {period!r}")
        self.trace_type = trace_type
        self.period = None if period is None else duration_micros(period)

    def default_label(self) -> str:
        return f"Typed({self.trace_type!r})"

    def validate(self, node: Any) -> None:
        if len(node.inputs) != 1:
            raise PipelineConstructionError(f"{node.label}: Typed annotates one PCollection")

    def outputs(self, node: Any) -> Dict[Optional[str], Any]:
        (main,) = node.inputs
        up = trace_of(main)
        period = self.period
        if up is not None:
            if not up.type.fits(self.trace_type):
                raise PipelineConstructionError(
                    f"{node.label!r} declares {self.trace_type!r}, but its input is "
                    f"{up.describe()}; {self._hint(up)}")
            if period is None:
                period = up.period
            elif period != up.period:
                raise PipelineConstructionError(
                    f"{node.label!r} declares markers every {period / 1e6} s, but its input "
                    f"{main.label!r} has them every {up.period / 1e6} s")
        if period is None:
            raise PipelineConstructionError(
                f"{node.label!r}: give the marker period (period= seconds of event time)")
        pc = main.derive()
        pc.trace = EdgeTrace(self.trace_type, period, node.label, "declared")
        return {None: pc}

    @staticmethod
    def _hint(up: EdgeTrace) -> str:
        if isinstance(up.type, KeyValueType) and not up.type.ordered:
            return "to order it, use pm.Sort(order=...)"
        return "declare a type it fits"


def Sort(order: Callable[[Any], Any], parallelism: int = 1,
         label: Optional[str] = None) -> PTransform:
    """SORT: U(K, V) -> O(K, V), ordering each key's items between markers by `order(value)`
    (items it ties are ordered by their repr and timestamps, so the order never depends on
    arrival). A runner fuses it into the operator that follows."""
    if not callable(order):
        raise TypeError(f"Sort takes a function of the value, got {order!r}")
    return _Sort(order, parallelism, label)


class _Sort(PTransform):
    def __init__(self, order: Callable[[Any], Any], parallelism: int,
                 label: Optional[str]) -> None:
        super().__init__(label)
        self.order = order
        self.parallelism = parallelism

    def default_label(self) -> str:
        return f"Sort({_name(self.order)})"

    def expand(self, pcoll: Any) -> Any:
        step = pcoll.pipeline.scope_label()
        got = require(pcoll, U(), step, "Sort", "declare the input's type with pm.Typed")
        identity = _Identity(parallelism=self.parallelism,
                             out=O(got.type.key, got.type.value), label=self.label)
        return pcoll.pipeline.apply_as_scope(TemplateStep(identity, got, sort=self.order), pcoll)


class Merge(PTransform):
    """MRG: the union of several typed edges, aligned on their markers (they must share a
    period). Unordered inputs give U; the outputs of one `Hash` split, ordered, give O."""

    def expand(self, pcolls: Any) -> Any:
        from ..sdk.core import Flatten
        pcolls = list(pcolls)
        label = pcolls[0].pipeline.scope_label() if pcolls else "Merge"
        ups = []
        for pc in pcolls:
            up = trace_of(pc)
            if up is None:
                raise PipelineConstructionError(
                    f"Merge {label!r}: its input {pc.label!r} has no trace type; declare it "
                    f"with pm.Typed")
            ups.append(up)
        trace = merged(ups, label, "a merge of unordered edges")
        out = pcolls[0].pipeline.apply_as_scope(Flatten(), tuple(pcolls))
        out.trace = EdgeTrace(trace.type, trace.period, out.producer.label, trace.why)
        return out


class _Split(PTransform):
    """A splitter: each item to one of `n` outputs; markers (the watermark) to all."""

    def __init__(self, n: int, label: Optional[str] = None) -> None:
        super().__init__(label)
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"{type(self).__name__} takes a number of outputs >= 1, got {n!r}")
        self.n = n

    def route(self, trace: EdgeTrace) -> Callable[[Any, int], int]:
        raise NotImplementedError

    def expand(self, pcoll: Any) -> tuple:
        from ..sdk.core import Partition
        step = pcoll.pipeline.scope_label()
        got = require(pcoll, U(), step, type(self).__name__,
                      "declare the input's type with pm.Typed")
        outs = pcoll | Partition(self.route(got), self.n)
        for i, pc in enumerate(outs):
            pc.trace = EdgeTrace(self.output_type(got.type), got.period, step,
                                 f"output {i} of {type(self).__name__}({self.n})",
                                 split=(step, i) if isinstance(self, Hash) else None)
        return outs

    def output_type(self, t: KeyValueType) -> KeyValueType:
        return t


class RoundRobin(_Split):
    """RR: U(K, V) -> n x U(K, V), items dealt to the outputs in turn."""

    def route(self, trace: EdgeTrace) -> Callable[[Any, int], int]:
        turn = [0]

        def deal(item: Any, n: int) -> int:
            out = turn[0]
            turn[0] = (out + 1) % n
            return out
        return deal

    def output_type(self, t: KeyValueType) -> KeyValueType:
        return unordered(t)


class Hash(_Split):
    """HASH: U(K, V) -> n x U(K_i, V) (or O to O), item (k, v) to output hash(k) mod n."""

    def route(self, trace: EdgeTrace) -> Callable[[Any, int], int]:
        t = trace.type
        if not t.keyed:
            return lambda item, n: 0
        return lambda item, n: stable_hash(item[0]) % n
