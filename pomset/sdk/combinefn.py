"""CombineFn and the built-in combiners.

A CombineFn folds values into an accumulator: `create_accumulator`, `add_input`,
`merge_accumulators` (needed for merging windows and combiner lifting), `extract_output`,
and optionally `retract_input`, the inverse of `add_input` that retracting mode needs.
"""
from __future__ import annotations

import heapq
import operator
from collections import Counter
from typing import Any, Callable, Iterable, List, Optional


class CombineFn:
    """Base class of combiners; subclass it and implement the accumulator methods."""

    def create_accumulator(self) -> Any:
        raise NotImplementedError

    def add_input(self, accumulator: Any, value: Any) -> Any:
        raise NotImplementedError

    def merge_accumulators(self, accumulators: Iterable[Any]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement merge_accumulators")

    def extract_output(self, accumulator: Any) -> Any:
        return accumulator

    def retract_input(self, accumulator: Any, value: Any) -> Any:
        """Undo `add_input(accumulator, value)`; needed when retractions reach the combine."""
        raise NotImplementedError(f"{type(self).__name__} does not implement retract_input")

    def add_inputs(self, accumulator: Any, values: Any) -> Any:
        """Add many values at once (Beam's `add_inputs`). A columnar runner calls it with one
        key and window's values, a numpy array for numbers (else a list); override it with a
        vectorized version and the combine runs without a Python call per element."""
        for value in values:
            accumulator = self.add_input(accumulator, value)
        return accumulator

    def vectorized(self) -> bool:
        """Whether `add_inputs` is overridden (a columnar runner then calls it per group)."""
        return type(self).add_inputs is not CombineFn.add_inputs

    def can_retract(self) -> bool:
        return type(self).retract_input is not CombineFn.retract_input

    def can_merge(self) -> bool:
        return type(self).merge_accumulators is not CombineFn.merge_accumulators

    def default_label(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    @classmethod
    def PerKey(cls, *args: Any, **kwargs: Any) -> Any:
        """Beam's shorthand: `pm.Mean.PerKey()` is `pm.CombinePerKey(pm.Mean())`."""
        from .core import CombinePerKey
        return CombinePerKey(cls(*args, **kwargs))

    @classmethod
    def Globally(cls, *args: Any, **kwargs: Any) -> Any:
        """Beam's shorthand: `pm.Count.Globally()` is `pm.CombineGlobally(pm.Count())`."""
        from .core import CombineGlobally
        return CombineGlobally(cls(*args, **kwargs))


class Sum(CombineFn):
    """The sum of the values (0 for none)."""

    def create_accumulator(self) -> Any:
        return 0

    # acc + value and acc - value, as C functions: the grouping loop calls add_input per element
    add_input = staticmethod(operator.add)
    retract_input = staticmethod(operator.sub)

    def merge_accumulators(self, accs: Iterable[Any]) -> Any:
        return sum(accs)


class Count(CombineFn):
    """How many values there are."""

    @staticmethod
    def PerElement() -> Any:
        """Beam's `Count.PerElement()`: (element, its count) per window."""
        from .core import CountPerElement
        return CountPerElement()

    def create_accumulator(self) -> int:
        return 0

    def add_input(self, acc: int, value: Any) -> int:
        return acc + 1

    def retract_input(self, acc: int, value: Any) -> int:
        return acc - 1

    def merge_accumulators(self, accs: Iterable[int]) -> int:
        return sum(accs)


class Mean(CombineFn):
    """The arithmetic mean of the values (NaN for none)."""

    def create_accumulator(self) -> List[Any]:
        return [0, 0]

    def add_input(self, acc: List[Any], value: Any) -> List[Any]:
        acc[0] += value
        acc[1] += 1
        return acc

    def retract_input(self, acc: List[Any], value: Any) -> List[Any]:
        acc[0] -= value
        acc[1] -= 1
        return acc

    def merge_accumulators(self, accs: Iterable[List[Any]]) -> List[Any]:
        out = [0, 0]
        for s, n in accs:
            out[0] += s
            out[1] += n
        return out

    def extract_output(self, acc: List[Any]) -> float:
        return acc[0] / acc[1] if acc[1] else float("nan")


class _Extremum(CombineFn):
    """Min or Max over a counted multiset of values, so retractions can remove the extreme."""

    pick: Callable = min

    def __init__(self, default: Any = None) -> None:
        self.default = default

    def create_accumulator(self) -> Counter:
        return Counter()

    def add_input(self, acc: Counter, value: Any) -> Counter:
        acc[value] += 1
        return acc

    def retract_input(self, acc: Counter, value: Any) -> Counter:
        acc[value] -= 1
        if not acc[value]:
            del acc[value]
        return acc

    def merge_accumulators(self, accs: Iterable[Counter]) -> Counter:
        out: Counter = Counter()
        for a in accs:
            out.update(a)
        return out

    def extract_output(self, acc: Counter) -> Any:
        present = [v for v, n in acc.items() if n > 0]
        return type(self).pick(present) if present else self.default


class Min(_Extremum):
    """The smallest value (`default` for none)."""

    pick = min


class Max(_Extremum):
    """The largest value (`default` for none)."""

    pick = max


class ToList(CombineFn):
    """All values, as a list."""

    def create_accumulator(self) -> List[Any]:
        return []

    def add_input(self, acc: List[Any], value: Any) -> List[Any]:
        acc.append(value)
        return acc

    def retract_input(self, acc: List[Any], value: Any) -> List[Any]:
        acc.remove(value)
        return acc

    def merge_accumulators(self, accs: Iterable[List[Any]]) -> List[Any]:
        out: List[Any] = []
        for a in accs:
            out.extend(a)
        return out


class Top(ToList):
    """The `n` largest values (by `key`), largest first; `reverse=True` for the smallest."""

    def __init__(self, n: int, key: Optional[Callable] = None, reverse: bool = False) -> None:
        if n < 1:
            raise ValueError(f"Top needs n >= 1, got {n}")
        self.n, self.key, self.reverse = n, key, reverse

    def extract_output(self, acc: List[Any]) -> List[Any]:
        pick = heapq.nsmallest if self.reverse else heapq.nlargest
        return pick(self.n, acc, key=self.key)

    @classmethod
    def Of(cls, n: int, key: Optional[Callable] = None, reverse: bool = False) -> Any:
        """Beam's `Top.Of(n)`: the n largest elements, as one list per window."""
        return cls.Globally(n, key=key, reverse=reverse)

    @classmethod
    def Largest(cls, n: int, key: Optional[Callable] = None) -> Any:
        return cls.Globally(n, key=key)

    @classmethod
    def Smallest(cls, n: int, key: Optional[Callable] = None) -> Any:
        return cls.Globally(n, key=key, reverse=True)

    @classmethod
    def LargestPerKey(cls, n: int, key: Optional[Callable] = None) -> Any:
        return cls.PerKey(n, key=key)

    @classmethod
    def SmallestPerKey(cls, n: int, key: Optional[Callable] = None) -> Any:
        return cls.PerKey(n, key=key, reverse=True)


class CallableCombineFn(ToList):
    """Wraps a function of an iterable (like `sum` or a lambda) as a CombineFn: the values
    are kept as a list and the function applied when a pane is output."""

    def __init__(self, fn: Callable[[Iterable[Any]], Any]) -> None:
        self.fn = fn

    def extract_output(self, acc: List[Any]) -> Any:
        return self.fn(acc)

    def default_label(self) -> str:
        return getattr(self.fn, "__name__", "Combine")


_BUILTINS = {sum: Sum, min: Min, max: Max}


def as_combine_fn(fn: Any) -> CombineFn:
    """A CombineFn from a CombineFn, a CombineFn class, or a function of an iterable."""
    if isinstance(fn, CombineFn):
        return fn
    if isinstance(fn, type) and issubclass(fn, CombineFn):
        return fn()
    if fn in _BUILTINS:
        return _BUILTINS[fn]()
    if callable(fn):
        return CallableCombineFn(fn)
    raise TypeError(f"expected a CombineFn or a function of an iterable, got {fn!r}")
