"""CombineFn and the built-in combiners.

A CombineFn folds values into an accumulator: `create_accumulator`, `add_input`,
`merge_accumulators` (needed for merging windows and combiner lifting), `extract_output`,
and optionally `retract_input`, the inverse of `add_input` that retracting mode needs.
"""
from __future__ import annotations

import copy
import heapq
import numbers
import operator
from collections import Counter
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple, TypeVar

from .type_hints import with_input_types, with_output_types

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


class CombineFn:
    """Base class of combiners; subclass it and implement the accumulator methods."""

    def setup(self, *args: Any, **kwargs: Any) -> None:
        """Called once on each copy of the CombineFn before any other method (Beam's
        `setup`): acquire what its methods need, such as a connection or a model."""

    def teardown(self, *args: Any, **kwargs: Any) -> None:
        """Called once on each copy of the CombineFn after its last use (Beam's
        `teardown`): release what `setup` acquired."""

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

    def compact(self, accumulator: Any, *args: Any, **kwargs: Any) -> Any:
        """A smaller equivalent of `accumulator`, before it is sent on (Beam's `compact`)."""
        return accumulator

    def default_label(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    @staticmethod
    def from_callable(fn: Callable[..., Any]) -> "CombineFn":
        """Beam's `CombineFn.from_callable`: a function of an iterable (and any extra
        arguments the combine is given) as a CombineFn."""
        return CallableCombineFn(fn)

    @staticmethod
    def maybe_from_callable(fn: Any, has_side_inputs: bool = True) -> "CombineFn":
        """Beam's `CombineFn.maybe_from_callable`: `fn` if it is a CombineFn, else a
        CombineFn of it (a built-in such as sum as pomset's own combiner)."""
        return as_combine_fn(fn)

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


@with_output_types(int)
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


@with_input_types(numbers.Number)
@with_output_types(float)
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


@with_input_types(T)
@with_output_types(T)
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


@with_input_types(T)
@with_output_types(List[T])
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

    @staticmethod
    def Of(n: int, key: Optional[Callable] = None, reverse: bool = False,
           has_defaults: bool = True) -> Any:
        """Beam's `Top.Of(n)`: the n largest elements (by `key`; the smallest with
        `reverse`), as one list per window; `has_defaults=False` is `without_defaults()`."""
        out = Top.Globally(n, key=key, reverse=reverse)
        return out if has_defaults else out.without_defaults()

    @staticmethod
    def Largest(n: int, has_defaults: bool = True, key: Optional[Callable] = None) -> Any:
        """Beam's `Top.Largest(n)`: the n largest elements, largest first, per window."""
        return Top.Of(n, key=key, has_defaults=has_defaults)

    @staticmethod
    def Smallest(n: int, has_defaults: bool = True, key: Optional[Callable] = None) -> Any:
        """Beam's `Top.Smallest(n)`: the n smallest elements, smallest first, per window."""
        return Top.Of(n, key=key, reverse=True, has_defaults=has_defaults)

    @staticmethod
    def LargestPerKey(n: int, key: Optional[Callable] = None) -> Any:
        """Beam's `Top.LargestPerKey(n)`: (key, its n largest values) per window."""
        return Top.PerKey(n, key=key)

    @staticmethod
    def SmallestPerKey(n: int, key: Optional[Callable] = None) -> Any:
        """Beam's `Top.SmallestPerKey(n)`: (key, its n smallest values) per window."""
        return Top.PerKey(n, key=key, reverse=True)


class Largest(Top):
    """Beam's `combiners.Largest(n)`: the CombineFn of the n largest values, largest first."""

    def __init__(self, n: int, key: Optional[Callable] = None) -> None:
        super().__init__(n, key=key)


class Smallest(Top):
    """Beam's `combiners.Smallest(n)`: the CombineFn of the n smallest values, smallest
    first."""

    def __init__(self, n: int, key: Optional[Callable] = None) -> None:
        super().__init__(n, key=key, reverse=True)


@with_input_types(Tuple[K, V])
@with_output_types(Dict[K, V])
class ToDict(CombineFn):
    """(key, value) pairs as one dict (a later pair of a key replacing an earlier one)."""

    def create_accumulator(self) -> dict:
        return {}

    def add_input(self, acc: dict, kv: Any) -> dict:
        acc[kv[0]] = kv[1]
        return acc

    def merge_accumulators(self, accs: Iterable[dict]) -> dict:
        out: dict = {}
        for a in accs:
            out.update(a)
        return out


@with_input_types(T)
@with_output_types(Set[T])
class ToSet(CombineFn):
    """The distinct values, as a set."""

    def create_accumulator(self) -> set:
        return set()

    def add_input(self, acc: set, value: Any) -> set:
        acc.add(value)
        return acc

    def merge_accumulators(self, accs: Iterable[set]) -> set:
        out: set = set()
        for a in accs:
            out.update(a)
        return out


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


def combine_all(fn: CombineFn, values: Iterable[Any], *args: Any, **kwargs: Any) -> Any:
    """`fn`'s output for all of `values` at once, every method given the extra arguments
    (Beam's CombineFn methods take the combine's extra arguments and side inputs after their
    own); a function of an iterable is called with them after the values."""
    if isinstance(fn, CallableCombineFn):
        return fn.fn(list(values), *args, **kwargs)
    acc = fn.create_accumulator(*args, **kwargs)
    for value in values:
        acc = fn.add_input(acc, value, *args, **kwargs)
    acc = fn.compact(acc, *args, **kwargs)
    if fn.can_merge():
        acc = fn.merge_accumulators([acc], *args, **kwargs)
    return fn.extract_output(acc, *args, **kwargs)


def copy_combine_fn(fn: CombineFn) -> CombineFn:
    """A copy of `fn` of its own (its own lifecycle, its own state): a deep copy or, where
    something it holds cannot be deep-copied (a module), a copy sharing just that."""
    try:
        return copy.deepcopy(fn)
    except Exception:
        out = copy.copy(fn)
        for name, value in vars(fn).items():
            try:
                setattr(out, name, copy.deepcopy(value))
            except Exception:
                pass   # shared with `fn`, as a module is
        return out
