"""Uniform random samples of a fixed size (Beam's `combiners.Sample`): each value gets a
random priority and the `n` of highest priority are kept, so partial samples merge into a
uniform sample of the whole."""
from __future__ import annotations

import heapq
import random
from typing import Any, Iterable, List, Tuple

from .combinefn import CombineFn, T
from .type_hints import with_input_types, with_output_types
from .ptransform import PTransform
from .pvalue import PCollection

_Accumulator = List[Tuple[float, int, Any]]


@with_input_types(T)
@with_output_types(List[T])
class SampleCombineFn(CombineFn):
    """A uniform random sample of `n` of the values (all of them when there are fewer), as
    a list in no particular order."""

    def __init__(self, n: int) -> None:
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"Sample needs a sample size n >= 0, got {n!r}")
        self.n = n

    def create_accumulator(self) -> _Accumulator:
        return []

    def add_input(self, acc: _Accumulator, value: Any) -> _Accumulator:
        # the id breaks ties of priority without comparing the values themselves
        entry = (random.random(), id(value), value)
        if len(acc) < self.n:
            heapq.heappush(acc, entry)
        elif self.n and entry[0] > acc[0][0]:
            heapq.heapreplace(acc, entry)
        return acc

    def merge_accumulators(self, accs: Iterable[_Accumulator]) -> _Accumulator:
        out: _Accumulator = []
        for acc in accs:
            for entry in acc:
                if len(out) < self.n:
                    heapq.heappush(out, entry)
                elif entry[0] > out[0][0]:
                    heapq.heapreplace(out, entry)
        return out

    def extract_output(self, acc: _Accumulator) -> List[Any]:
        return [entry[2] for entry in acc]


def _each(values: List[Any]) -> List[Any]:
    return values


class _SampleAny(PTransform):
    """Up to n of the elements of each window (a uniform sample), as elements."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.fn = SampleCombineFn(n)

    def expand(self, pcoll: PCollection) -> PCollection:
        from .core import CombineGlobally, FlatMap
        return (pcoll | "Sample" >> CombineGlobally(self.fn).without_defaults()
                | "EachSampled" >> FlatMap(_each))


class Sample:
    """Beam's `combiners.Sample`: `FixedSizeGlobally(n)` (one list of up to n elements per
    window), `FixedSizePerKey(n)` ((key, up to n of its values) per window) and `Any(n)` (up
    to n of the elements per window, as elements)."""

    @staticmethod
    def FixedSizeGlobally(n: int) -> Any:
        """A uniform sample of n elements, as one list per window."""
        from .core import CombineGlobally
        return CombineGlobally(SampleCombineFn(n))

    @staticmethod
    def FixedSizePerKey(n: int) -> Any:
        """(key, a uniform sample of n of its values), per key and window."""
        from .core import CombinePerKey
        return CombinePerKey(SampleCombineFn(n))

    @staticmethod
    def Any(n: int) -> PTransform:
        """Up to n of the elements of each window (a uniform sample), as elements."""
        return _SampleAny(n)
