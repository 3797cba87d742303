"""Beam's shorthand transforms, as Beam users write them: `MapTuple`, `FlatMapTuple`,
`WithKeys`, `Reshuffle`,
`Count.PerElement`, `Latest.Globally`/`PerKey` (and `Top.Of`, `Largest`... on the CombineFns
themselves)."""
from __future__ import annotations

import copy
from typing import Any, Callable, List, Optional, Tuple, Union

from ..windowing import MIN_TIMESTAMP, Timestamp
from .combinefn import CombineFn, T
from .core import CombineGlobally, CombinePerKey, Map
from .dofn import DoFn
from .kinds import KV
from .ptransform import PTransform
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


def MapTuple(fn: Callable[..., Any]) -> Map:
    """Beam's `MapTuple`: `fn(*element)` for each tuple element (of the type `fn` declares
    or annotates it returns)."""
    return Map(_unpacking(fn), label=f"MapTuple({getattr(fn, '__name__', 'fn')})")


def FlatMapTuple(fn: Callable[..., Any]) -> Any:
    """Beam's `FlatMapTuple`: the items of `fn(*element)` for each tuple element (of the
    item type of the iterable `fn` declares or annotates it returns)."""
    from .core import FlatMap
    return FlatMap(_unpacking(fn), label=f"FlatMapTuple({getattr(fn, '__name__', 'fn')})")


def _unpacking(fn: Callable[..., Any]) -> Callable[[Any], Any]:
    """`fn` of a tuple's items, declaring the return type `fn` declares or annotates."""
    def unpacked(t: Any) -> Any:
        return fn(*t)
    returns = callable_hints(fn).simple_output()
    return unpacked if returns is None else with_output_types(returns)(unpacked)


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
