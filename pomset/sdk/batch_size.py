"""The batch size estimator behind Beam's `BatchElements`: it times each batch and, by a
linear fit of time against size (time = fixed cost + per-element cost * size), picks the next
size between min and max that meets the target duration (without or with the fixed cost) and
the target fixed-cost overhead, growing at most twofold per batch."""
from __future__ import annotations

import contextlib
import random
import time
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .user_metrics import Metrics


class BatchSizeEstimator:
    """Beam's `_BatchSizeEstimator`: `next_batch_size()`, then the batch run inside
    `record_time(size)`."""

    _MAX_DATA_POINTS = 100
    MAX_GROWTH_FACTOR = 2

    def __init__(self, min_batch_size: int = 1, max_batch_size: int = 10000,
                 target_batch_overhead: Optional[float] = .05,
                 target_batch_duration_secs: Optional[float] = 10,
                 target_batch_duration_secs_including_fixed_cost: Optional[float] = None,
                 variance: float = .25, clock: Callable[[], float] = time.time,
                 ignore_first_n_seen_per_batch_size: int = 0,
                 record_metrics: bool = True) -> None:
        if min_batch_size > max_batch_size:
            raise ValueError(f"Minimum ({min_batch_size}) must not be greater than "
                             f"maximum ({max_batch_size})")
        if target_batch_overhead and not 0 < target_batch_overhead <= 1:
            raise ValueError(f"target_batch_overhead ({target_batch_overhead}) must be "
                             f"between 0 and 1")
        if target_batch_duration_secs and target_batch_duration_secs <= 0:
            raise ValueError(f"target_batch_duration_secs ({target_batch_duration_secs}) "
                             f"must be positive")
        fixed = target_batch_duration_secs_including_fixed_cost
        if fixed and fixed <= 0:
            raise ValueError(f"target_batch_duration_secs_including_fixed_cost ({fixed}) "
                             f"must be positive")
        if not (target_batch_overhead or target_batch_duration_secs or fixed):
            raise ValueError("At least one of target_batch_overhead or "
                             "target_batch_duration_secs or "
                             "target_batch_duration_secs_including_fixed_cost must be positive.")
        if ignore_first_n_seen_per_batch_size < 0:
            raise ValueError("ignore_first_n_seen_per_batch_size must be non-negative")
        self.min_batch_size, self.max_batch_size = min_batch_size, max_batch_size
        self.target_batch_overhead = target_batch_overhead
        self.target_batch_duration_secs = target_batch_duration_secs
        self.target_including_fixed_cost = fixed
        self.variance = variance
        self.clock = clock
        self.ignore_first_n = ignore_first_n_seen_per_batch_size
        self._data: List[Tuple[int, float]] = []
        self._seen: Dict[int, int] = {}
        self._ignore_next = False
        self._replay: Optional[int] = None
        self.record_metrics = record_metrics
        if record_metrics:
            self._sizes = Metrics.distribution("BatchElements", "batch_size")
            self._times = Metrics.distribution("BatchElements", "msec_per_batch")

    def ignore_next_timing(self) -> None:
        """Leave the next batch's time out of the fit (and run that size again), e.g. a
        batch that paid a one-off cost."""
        self._ignore_next = True

    @contextlib.contextmanager
    def record_time(self, batch_size: int) -> Iterator[None]:
        """Times the batch of `batch_size` elements run inside it."""
        start = self.clock()
        yield
        elapsed = self.clock() - start
        if self.record_metrics:
            self._sizes.update(batch_size)
            self._times.update(int(1e3 * elapsed))
        if self._ignore_next:
            self._ignore_next = False
            self._replay = min(batch_size, self.max_batch_size)
            return
        self._data.append((batch_size, elapsed))
        if len(self._data) >= self._MAX_DATA_POINTS:
            self._thin_data()

    def _thin_data(self) -> None:
        """Drops a random half of the oldest points, keeping the fit recent."""
        half = len(self._data) // 2
        old = self._data[:half]
        random.shuffle(old)
        self._data = old[:half // 2] + self._data[half:]

    def next_batch_size(self) -> int:
        """The size of the next batch: a replayed one (after an ignored timing) or the
        estimate; each of the first `ignore_first_n_seen_per_batch_size` runs of a size,
        replays included, is left out of the fit."""
        if self._replay is not None:
            size, self._replay = self._replay, None
        else:
            size = self._estimate()
        seen = self._seen.get(size, 0) + 1
        self._seen[size] = seen
        if seen <= self.ignore_first_n:
            self.ignore_next_timing()
        return size

    def _estimate(self) -> int:
        lo, hi = self.min_batch_size, self.max_batch_size
        if lo == hi or not self._data:
            return lo
        if len(self._data) < 2:   # a second distinct size, to fit a line through
            return int(max(min(hi, lo * self.MAX_GROWTH_FACTOR), lo + 1))
        kept = sorted(self._data)[:max(20, len(self._data) * 4 // 5)]   # top 20%: noise
        xs, ys = zip(*kept)
        a, b = self.linear_regression(xs, ys)
        a, b = max(a, 1e-10), max(b, 1e-20)
        cap = min(self._data[-1][0] * self.MAX_GROWTH_FACTOR, hi)
        target: float = hi
        if self.target_including_fixed_cost:
            target = min(target, (self.target_including_fixed_cost - a) / b)
        if self.target_batch_duration_secs:
            target = min(target, self.target_batch_duration_secs / b)
        if self.target_batch_overhead:
            target = min(target, (a / b) * (1 / self.target_batch_overhead - 1))
        jitter = len(self._data) % 2   # never settle on one size: the fit needs two
        if len(self._data) > 10:
            target += int(target * self.variance * 2 * (random.random() - .5))
        return int(max(lo + jitter, min(target, cap)))

    @staticmethod
    def linear_regression_no_numpy(xs: Sequence[float], ys: Sequence[float]
                                   ) -> Tuple[float, float]:
        """(a, b) of the least-squares line y = a + b x."""
        n = float(len(xs))
        xbar, ybar = sum(xs) / n, sum(ys) / n
        if all(x == xs[0] for x in xs):   # one size: all of the time per element
            return 0.0, ybar / xbar
        b = (sum((x - xbar) * (y - ybar) for x, y in zip(xs, ys))
             / sum((x - xbar) ** 2 for x in xs))
        return ybar - b * xbar, b

    @staticmethod
    def linear_regression_numpy(xs: Sequence[float], ys: Sequence[float]
                                ) -> Tuple[float, float]:
        """(a, b) of y = a + b x, refit without outliers (Cook's distance over 0.5) and
        weighted by 1/x (small batches say most about the fixed cost)."""
        import numpy as np
        x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
        if x.min() == x.max():
            return 0.0, float(y.mean() / x[0])
        b, a = np.polyfit(x, y, 1)
        n = len(x)
        if n < 10:
            return float(a), float(b)
        errs = a + b * x - y
        s2 = float((errs ** 2).sum()) / (n - 2)
        if s2 == 0:
            return float(a), float(b)
        sum_x, sum_x2 = x.sum(), (x ** 2).sum()
        h = (sum_x2 - 2 * sum_x * x + n * x ** 2) / (n * sum_x2 - sum_x ** 2)
        cook = 0.5 / s2 * errs ** 2 * (h / (1 - h) ** 2)
        b, a = np.polyfit(x, y, 1, w=(cook <= 0.5) / x)
        return float(a), float(b)

    @classmethod
    def linear_regression(cls, xs: Sequence[float], ys: Sequence[float]
                          ) -> Tuple[float, float]:
        """The numpy fit where numpy is installed, else the plain one."""
        try:
            import numpy  # noqa: F401
        except ImportError:
            return cls.linear_regression_no_numpy(xs, ys)
        return cls.linear_regression_numpy(xs, ys)
