"""Approximate quantiles (Beam's `ApproximateQuantiles`), after Munro and Paterson and Manku,
Rajagopalan and Lindsay ("Approximate Medians and other Quantiles in One Pass and with
Limited Memory"): values are kept in at most `num_buffers` sorted buffers of `buffer_size`
entries; when there are more, the two lightest collapse into one whose entries stand for
their combined weight. Until then every value is kept, and the quantiles are exact."""
from __future__ import annotations

import heapq
import math
from operator import itemgetter
from typing import Any, Callable, Iterable, List, Optional

from .combinefn import CombineFn

_SORT_KEY = itemgetter(0)
_DEFAULT_EPSILON = 0.01
_DEFAULT_MAX_ELEMENTS = 10 ** 9


class _BufferSpec:
    """How many buffers of what size keep the quantiles of up to `max_num_elements` values
    within `epsilon` (as a fraction of the count): the fewest buffers b with
    (b-2)2^(b-2) + 1/2 <= epsilon N, each of k entries with k 2^(b-1) >= N."""

    def __init__(self, epsilon: float, max_num_elements: int) -> None:
        b = 2
        while (b - 2) * (1 << (b - 2)) < epsilon * max_num_elements:
            b += 1
        self.num_buffers = b - 1
        self.buffer_size = max(2, math.ceil(max_num_elements / float(1 << (self.num_buffers - 1))))


class _Summary:
    """Sorted buffers of (sort key, value, weight) entries, and the entries not yet sorted."""

    __slots__ = ("buffers", "unbuffered")

    def __init__(self) -> None:
        self.buffers: List[List[tuple]] = []
        self.unbuffered: List[tuple] = []


class ApproximateQuantilesCombineFn(CombineFn):
    """The `num_quantiles` quantiles of the values (their minimum, maximum and the values
    between at equal steps of rank), ordered by `key` (reversed with `reverse`); with
    `weighted` each input is (value, weight); with `input_batched` each input is a list of
    values (or, weighted, [values, weights])."""

    def __init__(self, num_quantiles: int, buffer_size: int, num_buffers: int,
                 key: Optional[Callable[[Any], Any]] = None, reverse: bool = False,
                 weighted: bool = False, input_batched: bool = False) -> None:
        if not isinstance(num_quantiles, int) or num_quantiles < 2:
            raise ValueError(f"ApproximateQuantiles needs num_quantiles >= 2, "
                             f"got {num_quantiles!r}")
        self._num_quantiles = num_quantiles
        self._spec = _BufferSpec.__new__(_BufferSpec)
        self._spec.buffer_size, self._spec.num_buffers = buffer_size, num_buffers
        self._key, self._reverse = key, reverse
        self._weighted, self._input_batched = weighted, input_batched

    @classmethod
    def create(cls, num_quantiles: int, epsilon: Optional[float] = None,
               max_num_elements: Optional[int] = None, key: Optional[Callable] = None,
               reverse: bool = False, weighted: bool = False,
               input_batched: bool = False) -> "ApproximateQuantilesCombineFn":
        """The combiner whose quantiles are within `epsilon` (default 0.01) of the count, for
        up to `max_num_elements` values (default 1e9)."""
        spec = _BufferSpec(_DEFAULT_EPSILON if epsilon is None else epsilon,
                           _DEFAULT_MAX_ELEMENTS if max_num_elements is None else max_num_elements)
        return cls(num_quantiles, spec.buffer_size, spec.num_buffers, key, reverse, weighted,
                   input_batched)

    def _entry(self, value: Any, weight: Any) -> tuple:
        return (value if self._key is None else self._key(value), value, weight)

    def create_accumulator(self) -> _Summary:
        return _Summary()

    def add_input(self, acc: _Summary, element: Any) -> _Summary:
        if self._input_batched:
            pairs = zip(*element) if self._weighted else ((v, 1) for v in element)
        else:
            pairs = (element,) if self._weighted else ((element, 1),)
        for value, weight in pairs:
            acc.unbuffered.append(self._entry(value, weight))
            if len(acc.unbuffered) >= self._spec.buffer_size:
                self._seal(acc)
        return acc

    def _seal(self, acc: _Summary) -> None:
        """Sorts the unsorted entries into buffers, then collapses buffers over the limit."""
        k = self._spec.buffer_size
        acc.unbuffered.sort(key=_SORT_KEY, reverse=self._reverse)
        while len(acc.unbuffered) >= k:
            acc.buffers.append(acc.unbuffered[:k])
            del acc.unbuffered[:k]
        while len(acc.buffers) > self._spec.num_buffers:
            acc.buffers.sort(key=_total_weight)
            acc.buffers[:2] = [self._collapse(acc.buffers[0], acc.buffers[1],
                                              len(acc.buffers) % 2)]

    def _collapse(self, a: List[tuple], b: List[tuple], odd: int) -> List[tuple]:
        """One buffer of `buffer_size` entries for the two, each with an equal part of their
        weight, at evenly spaced ranks (the half-step offset alternating, against bias)."""
        k = self._spec.buffer_size
        merged = heapq.merge(a, b, key=_SORT_KEY, reverse=self._reverse)
        total = _total_weight(a) + _total_weight(b)
        step = total / k
        target = step * (0.25 if odd else 0.75)
        out: List[tuple] = []
        seen = 0.0
        first = last = None
        for last in merged:
            if first is None:
                first = last
            seen += last[2]
            while seen > target and len(out) < k:
                out.append((last[0], last[1], step))
                target += step
        # the extremes stay, for the minimum and maximum the quantiles begin and end with
        out[0] = (first[0], first[1], step)
        out[-1] = (last[0], last[1], step)
        return out

    def merge_accumulators(self, accs: Iterable[_Summary]) -> _Summary:
        out = _Summary()
        for acc in accs:
            out.buffers.extend(acc.buffers)
            out.unbuffered.extend(acc.unbuffered)
        self._seal(out)
        return out

    def extract_output(self, acc: _Summary) -> List[Any]:
        rest = sorted(acc.unbuffered, key=_SORT_KEY, reverse=self._reverse)
        entries = list(heapq.merge(*acc.buffers, rest, key=_SORT_KEY, reverse=self._reverse))
        if not entries:
            return []
        total = sum(e[2] for e in entries)
        q = self._num_quantiles
        step, offset = total / (q - 1), (total - 1) / (q - 1)
        targets = [i * step + offset for i in range(q - 2)]
        out = [entries[0][1]]
        seen, i = 0, 0
        for _, value, weight in entries:
            seen += weight
            while i < len(targets) and seen > targets[i]:
                out.append(value)
                i += 1
        out.extend(entries[-1][1] for _ in range(len(targets) - i))
        out.append(entries[-1][1])
        return out


def _total_weight(buffer: List[tuple]) -> Any:
    return sum(e[2] for e in buffer)


class ApproximateQuantiles:
    """Beam's `ApproximateQuantiles`: `Globally(num_quantiles, key=, reverse=, weighted=,
    input_batched=)` gives, per window, a list of the quantiles of the elements (the first
    their minimum, the last their maximum); `PerKey(...)` gives (key, that list) per key.
    Exact up to about 20,000 values per key, then within 1% of the count in rank."""

    @staticmethod
    def _fn(num_quantiles: int, key: Optional[Callable], reverse: bool, weighted: bool,
            input_batched: bool) -> ApproximateQuantilesCombineFn:
        return ApproximateQuantilesCombineFn.create(num_quantiles, key=key, reverse=reverse,
                                                    weighted=weighted,
                                                    input_batched=input_batched)

    @classmethod
    def Globally(cls, num_quantiles: int, key: Optional[Callable] = None, reverse: bool = False,
                 weighted: bool = False, input_batched: bool = False) -> Any:
        """The quantiles of all elements, per window."""
        from .core import CombineGlobally
        return CombineGlobally(cls._fn(num_quantiles, key, reverse, weighted, input_batched))

    @classmethod
    def PerKey(cls, num_quantiles: int, key: Optional[Callable] = None, reverse: bool = False,
               weighted: bool = False, input_batched: bool = False) -> Any:
        """(key, the quantiles of its values), per window."""
        from .core import CombinePerKey
        return CombinePerKey(cls._fn(num_quantiles, key, reverse, weighted, input_batched))
