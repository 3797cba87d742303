"""Beam's shorthand transforms, as Beam users write them: `MapTuple`, `FlatMapTuple`,
`WithKeys`, `Reshuffle`,
`Count.PerElement`, `Latest.Globally`/`PerKey` (and `Top.Of`, `Largest`... on the CombineFns
themselves)."""
from __future__ import annotations

import copy
import inspect
from typing import Any, Callable, List, Optional, Tuple, Union

from ..windowing import MIN_TIMESTAMP, Timestamp
from .combinefn import CombineFn, T
from .core import CombineGlobally, CombinePerKey, Map
from .dofn import DoFn
from .kinds import KV
from .ptransform import PTransform, label_from_callable
from .pvalue import PCollection
from .type_hints import callable_hints, with_input_types, with_output_types


def WithKeys(key: Any, *args: Any, **kwargs: Any) -> Map:
    """(key, element) pairs: `key(element, *args, **kwargs)` if `key` is callable (the extra
    arguments may be side inputs), else `key` itself."""
    out = Map(key_with(key), *args, label="WithKeys", **kwargs)
    out.output_kind = KV
    return out


def key_with(key: Any) -> Callable[..., Tuple[Any, Any]]:
    """The function that pairs an element with its key, as WithKeys does."""
    if callable(key):
        return lambda v, *args, **kwargs: (key(v, *args, **kwargs), v)
    return lambda v: (key, v)


def MapTuple(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Map:
    """Beam's `MapTuple`: `fn(*element, ...)` for each tuple element; the extra arguments
    (side-input views among them) go to `fn`'s parameters with defaults after the element's,
    which may also ask for `DoFn.TimestampParam` and the like."""
    return Map(unpacking(fn), *args, label=f"MapTuple({label_from_callable(fn)})", **kwargs)


def FlatMapTuple(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Beam's `FlatMapTuple`: the items of `fn(*element, ...)` for each tuple element, with
    extra arguments as `MapTuple`'s."""
    from .core import FlatMap
    return FlatMap(unpacking(fn), *args, label=f"FlatMapTuple({label_from_callable(fn)})",
                   **kwargs)


def unpacking(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` called with a tuple element's items: `f(element, *args, **kwargs)` is
    `fn(*element, ...)`, the positional extra arguments given to `fn`'s parameters with
    defaults that are not context parameters (`DoFn.*Param`), in order, as Beam's MapTuple
    binds them. Its signature shows `fn`'s context parameters, so the runner fills them."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):   # a builtin without a signature: the element's items
        return lambda element, *args, **kwargs: fn(*element, *args, **kwargs)
    defaulted = [p for p in params if p.default is not p.empty
                 and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    context = [p for p in defaulted if isinstance(p.default, type(DoFn.TimestampParam))]
    free = [p.name for p in defaulted if p not in context]

    def call(element: Any, *args: Any, **kwargs: Any) -> Any:
        if args and len(args) <= len(free):
            names = [n for n in free if n not in kwargs]
            kwargs.update(zip(names, args))
            args = ()
        return fn(*element, *args, **kwargs)
    call.__signature__ = inspect.Signature(   # type: ignore[attr-defined]
        [inspect.Parameter("element", inspect.Parameter.POSITIONAL_OR_KEYWORD),
         inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)]
        + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in context]
        + [inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])
    returns = callable_hints(fn).simple_output()   # the type `fn` declares or annotates
    return call if returns is None else with_output_types(returns)(call)


def Reshuffle(num_buckets: Optional[int] = None) -> Map:
    """The elements unchanged (`num_buckets`, a positive int, is checked and not needed). In Beam it redistributes them across workers and stops fusion;
    pomset's runners decide placement themselves (bundles go to any worker, Spark shuffles
    where a grouping needs it), so there is nothing for it to do but keep Beam code
    running."""
    if num_buckets is not None and (not isinstance(num_buckets, int) or num_buckets <= 0):
        raise ValueError(f"If `num_buckets` is set, it has to be an integer greater than 0, "
                         f"got {num_buckets}")
    return Map(_same, label="Reshuffle")


def _same(v: Any) -> Any:
    return v


@with_input_types(Tuple[T, Union[int, float, Timestamp]])
@with_output_types(T)
class LatestCombineFn(CombineFn):
    """Beam's `LatestCombineFn`: of (value, timestamp) pairs, the value with the latest
    timestamp (the later-added one on a tie); the accumulator is such a pair, starting at
    (None, MIN_TIMESTAMP)."""

    def create_accumulator(self) -> Tuple[Any, Any]:
        return (None, MIN_TIMESTAMP)

    def add_input(self, acc: Tuple[Any, Any], pair: Tuple[Any, Any]) -> Tuple[Any, Any]:
        return pair if pair[1] >= acc[1] else acc

    def merge_accumulators(self, accs: Any) -> Tuple[Any, Any]:
        latest = (None, MIN_TIMESTAMP)
        for acc in accs:
            if acc[1] >= latest[1]:
                latest = acc
        return latest

    def extract_output(self, acc: Tuple[Any, Any]) -> Any:
        return acc[0]


class _Stamped(DoFn):
    def process(self, element: Any, timestamp: Timestamp = DoFn.TimestampParam) -> List[Any]:
        return [(element, timestamp)]


class _StampedValues(DoFn):
    def process(self, kv: Tuple[Any, Any], timestamp: Timestamp = DoFn.TimestampParam
                ) -> List[Any]:
        return [(kv[0], (kv[1], timestamp))]


class Latest:
    """The element with the latest event time: `Latest.Globally()` per window, or
    `Latest.PerKey()` per key and window (Beam's `combiners.Latest`)."""

    class Globally(PTransform):
        """The element with the latest event time, per window (None for an empty input in
        the global window, unless `without_defaults()`)."""

        has_defaults = True

        def without_defaults(self) -> "Latest.Globally":
            out = copy.copy(self)
            out.has_defaults = False
            return out

        def expand(self, pcoll: PCollection) -> PCollection:
            from .core import ParDo
            combine = CombineGlobally(LatestCombineFn())
            if not self.has_defaults:
                combine = combine.without_defaults()
            return pcoll | "Stamp" >> ParDo(_Stamped()) | "Latest" >> combine

    class PerKey(PTransform):
        def expand(self, pcoll: PCollection) -> PCollection:
            from .core import ParDo
            stamped = pcoll | "Stamp" >> ParDo(_StampedValues())
            stamped.kind = KV
            return stamped | "Latest" >> CombinePerKey(LatestCombineFn())
