"""Approximate distinct counts (Beam's `ApproximateUnique`): a bottom-k sketch keeps the `k`
smallest 64-bit hashes of the values seen; the k-th smallest tells how densely the hash
space is filled, so how many distinct values there are, within about 2/sqrt(k)."""
from __future__ import annotations

import hashlib
import heapq
import math
import pickle
from typing import Any, Iterable, List, Optional, Tuple

from .combinefn import CombineFn

_HASH_SPACE = float(1 << 64)


class _Sketch:
    """The `size` smallest distinct hashes seen (a max-heap of their negatives, and a set)."""

    __slots__ = ("heap", "members")

    def __init__(self) -> None:
        self.heap: List[int] = []
        self.members: set = set()

    def add(self, h: int, size: int) -> None:
        if h in self.members:
            return
        if len(self.heap) < size:
            heapq.heappush(self.heap, -h)
            self.members.add(h)
        elif h < -self.heap[0]:
            dropped = -heapq.heappushpop(self.heap, -h)
            self.members.discard(dropped)
            self.members.add(h)


class ApproximateUniqueCombineFn(CombineFn):
    """Estimates how many distinct values there are from a sample of `sample_size` hashes
    (each value encoded by `coder`, a deterministic one, or pickled when none is given)."""

    def __init__(self, sample_size: int, coder: Any = None) -> None:
        if coder is not None and not _deterministic(coder):
            raise ValueError(f'The key coder "{type(coder).__name__}" for '
                             f'ApproximateUniqueCombineFn is not deterministic.')
        self.sample_size = sample_size
        self.coder = coder

    def _hash(self, value: Any) -> int:
        try:
            encoded = (pickle.dumps(value, protocol=4) if self.coder is None
                       else self.coder.encode(value))
        except Exception as e:
            raise RuntimeError(f"Runtime exception: {value!r} cannot be encoded by "
                               f"{self.coder!r}: {e}") from e
        return int.from_bytes(hashlib.blake2b(encoded, digest_size=8).digest(), "big")

    def create_accumulator(self) -> _Sketch:
        return _Sketch()

    def add_input(self, acc: _Sketch, value: Any) -> _Sketch:
        acc.add(self._hash(value), self.sample_size)
        return acc

    def merge_accumulators(self, accs: Iterable[_Sketch]) -> _Sketch:
        out = _Sketch()
        for acc in accs:
            for negated in acc.heap:
                out.add(-negated, self.sample_size)
        return out

    def extract_output(self, acc: _Sketch) -> int:
        k = len(acc.heap)
        if k < self.sample_size:
            return k
        kth = -acc.heap[0] + 1
        return round((k - 1) * _HASH_SPACE / kth)


def _deterministic(coder: Any) -> bool:
    check = getattr(coder, "is_deterministic", None)
    return bool(check()) if callable(check) else True


class ApproximateUnique:
    """Beam's `ApproximateUnique`: `Globally(size=, error=)` and `PerKey(size=, error=)` give
    an estimate of the number of distinct values (per key), from a sample of `size` hashes,
    or of as many as an estimation `error` (the relative error, within about 2/sqrt(size))
    needs. Exactly one of `size` (>= 16) and `error` (0.01 to 0.50) is given."""

    _NO_VALUE_ERR_MSG = "ApproximateUnique needs either size or error, and got neither."
    _MULTI_VALUE_ERR_MSG = "ApproximateUnique needs either size or error, not both: got %s and %s."
    _INPUT_SIZE_ERR_MSG = "ApproximateUnique needs an int size >= 16 (an error <= 0.50), got %s."
    _INPUT_ERROR_ERR_MSG = "ApproximateUnique needs an error between 0.01 and 0.50, got %s."

    @staticmethod
    def parse_input_params(size: Optional[int] = None,
                           error: Optional[float] = None) -> Tuple[Optional[int], Optional[float]]:
        """Checks that exactly one of `size` and `error` is given, and in range."""
        if size is None and error is None:
            raise ValueError(ApproximateUnique._NO_VALUE_ERR_MSG)
        if size is not None and error is not None:
            raise ValueError(ApproximateUnique._MULTI_VALUE_ERR_MSG % (size, error))
        if size is not None and (not isinstance(size, int) or isinstance(size, bool)
                                 or size < 16):
            raise ValueError(ApproximateUnique._INPUT_SIZE_ERR_MSG % size)
        if error is not None and not 0.01 <= error <= 0.5:
            raise ValueError(ApproximateUnique._INPUT_ERROR_ERR_MSG % error)
        return size, error

    @staticmethod
    def _get_sample_size_from_est_error(est_err: float) -> int:
        """The sample size whose estimate is within `est_err` (relative): 4 / est_err**2."""
        return int(math.ceil(round(4.0 / est_err ** 2, 6)))

    @classmethod
    def _combine_fn(cls, size: Optional[int],
                    error: Optional[float]) -> ApproximateUniqueCombineFn:
        size, error = cls.parse_input_params(size, error)
        if size is None:
            size = cls._get_sample_size_from_est_error(error)
        return ApproximateUniqueCombineFn(size)

    @classmethod
    def Globally(cls, size: Optional[int] = None, error: Optional[float] = None) -> Any:
        """The estimated number of distinct elements, per window."""
        from .core import CombineGlobally
        return CombineGlobally(cls._combine_fn(size, error))

    @classmethod
    def PerKey(cls, size: Optional[int] = None, error: Optional[float] = None) -> Any:
        """(key, the estimated number of distinct values of the key), per window."""
        from .core import CombinePerKey
        return CombinePerKey(cls._combine_fn(size, error))
