"""Beam's `BatchElements` and `GroupIntoBatches`: elements gathered into lists.
BatchElements batches within a bundle, sized by `BatchSizeEstimator` (or, given
`max_batch_duration_secs`, across bundles through GroupIntoBatches). GroupIntoBatches
batches each key's values with a stateful DoFn — a bag, a count, and timers — so a batch is
output when it is full, when it has waited `max_buffering_duration_secs` of processing time,
and when its window ends, in batch and streaming alike."""
from __future__ import annotations

import bisect
import collections
import logging
import time
import uuid
from typing import Any, Callable, DefaultDict, Dict, Iterator, List, Optional, Tuple

from ..windowing import GlobalWindow, GlobalWindows, TimestampedValue, WindowedValue
from .batch_size import BatchSizeEstimator
from .core import Map, ParDo
from .dofn import DoFn
from .ptransform import PTransform
from .pvalue import PCollection
from .userstate import (BagStateSpec, CombiningValueStateSpec, TimeDomain, TimerSpec,
                        on_timer)

#: where the batching transforms warn (the module Beam users import them from)
_LOG = logging.getLogger("pomset.transforms.util")


def _one(_: Any) -> int:
    return 1


class GlobalWindowsBatchingDoFn(DoFn):
    """Batches of a bundle's elements in the global window, each output at its end."""

    def __init__(self, estimator: BatchSizeEstimator,
                 element_size_fn: Callable[[Any], int]) -> None:
        self.estimator = estimator
        self.size_of = element_size_fn

    def start_bundle(self) -> None:
        self.batch: List[Any] = []
        self.size = 0
        self.target = self.estimator.next_batch_size()

    def _flush(self) -> Any:
        with self.estimator.record_time(self.size):
            out = WindowedValue(self.batch, GlobalWindow().max_timestamp())
        self.batch, self.size = [], 0
        self.target = self.estimator.next_batch_size()
        return out

    def process(self, element: Any) -> Iterator[Any]:
        size = self.size_of(element)
        if self.batch and self.size + size > self.target:
            yield self._flush()
        self.batch.append(element)
        self.size += size
        if self.size >= self.target:
            yield self._flush()

    def finish_bundle(self) -> Iterator[Any]:
        if self.batch:
            yield self._flush()


class WindowAwareBatchingDoFn(DoFn):
    """Batches of a bundle's elements per window, each output at its window's end."""

    MAX_LIVE_WINDOWS = 10

    def __init__(self, estimator: BatchSizeEstimator,
                 element_size_fn: Callable[[Any], int]) -> None:
        self.estimator = estimator
        self.size_of = element_size_fn

    def start_bundle(self) -> None:
        self.batches: Dict[Any, List[Any]] = {}
        self.sizes: Dict[Any, int] = {}
        self.target = self.estimator.next_batch_size()

    def _flush(self, window: Any) -> Any:
        batch, size = self.batches.pop(window), self.sizes.pop(window)
        with self.estimator.record_time(size):
            out = WindowedValue(batch, window.max_timestamp(), window)
        self.target = self.estimator.next_batch_size()
        return out

    def process(self, element: Any, window: Any = DoFn.WindowParam) -> Iterator[Any]:
        size = self.size_of(element)
        if window in self.batches and self.sizes[window] + size > self.target:
            yield self._flush(window)
        self.batches.setdefault(window, []).append(element)
        self.sizes[window] = self.sizes.get(window, 0) + size
        if self.sizes[window] >= self.target:
            yield self._flush(window)
        elif len(self.batches) > self.MAX_LIVE_WINDOWS:
            yield self._flush(max(self.sizes, key=self.sizes.__getitem__))

    def finish_bundle(self) -> Iterator[Any]:
        for window in list(self.batches):
            yield self._flush(window)


class WithLengthBucketKey(DoFn):
    """Beam's `WithLengthBucketKey(length_fn, bucket_boundaries)`: each element keyed by
    (this DoFn copy's id, its length's bucket), so stateful batching groups elements of
    similar length (buckets: below the first boundary, between each two, above the last)."""

    def __init__(self, length_fn: Callable[[Any], int], bucket_boundaries: List[int]) -> None:
        self.length_fn = length_fn
        self.bucket_boundaries = list(bucket_boundaries)

    def setup(self) -> None:
        self.key = uuid.uuid4().hex

    def _get_bucket(self, length: int) -> int:
        return bisect.bisect_right(self.bucket_boundaries, length)

    def process(self, element: Any) -> Iterator[Any]:
        yield (self.key, self._get_bucket(self.length_fn(element))), element


#: the length buckets of BatchElements(length_fn=...) when none are given
DEFAULT_BUCKET_BOUNDARIES = [16, 32, 64, 128, 256, 512]


def _bucket_boundaries(length_fn: Optional[Callable[[Any], int]],
                       boundaries: Optional[List[int]]) -> Optional[List[int]]:
    if boundaries is None:
        return list(DEFAULT_BUCKET_BOUNDARIES) if length_fn is not None else None
    if length_fn is None:
        raise ValueError("bucket_boundaries needs a length_fn to measure elements with")
    if not boundaries:
        raise ValueError("bucket_boundaries must not be empty")
    if any(b <= 0 for b in boundaries):
        raise ValueError(f"bucket_boundaries must be positive, got {boundaries}")
    if any(a >= b for a, b in zip(boundaries, boundaries[1:])):
        raise ValueError(f"bucket_boundaries must be sorted ascending, got {boundaries}")
    return list(boundaries)


class BatchElements(PTransform):
    """Beam's `BatchElements`: lists of consecutive elements (per window), between
    `min_batch_size` and `max_batch_size` long (or heavy, by `element_size_fn`), sized to
    take about `target_batch_duration_secs` to process downstream. With
    `max_batch_duration_secs` (stateful batching) and `length_fn`, elements are batched
    with others of a similar length (by `bucket_boundaries`)."""

    def __init__(self, min_batch_size: int = 1, max_batch_size: int = 10000,
                 target_batch_overhead: Optional[float] = .05,
                 target_batch_duration_secs: Optional[float] = 10,
                 target_batch_duration_secs_including_fixed_cost: Optional[float] = None,
                 max_batch_duration_secs: Optional[float] = None, *, variance: float = .25,
                 clock: Callable[[], float] = time.time, ignore_first_n_seen_per_batch_size:
                 int = 0, record_metrics: bool = True,
                 element_size_fn: Callable[[Any], int] = _one,
                 length_fn: Optional[Callable[[Any], int]] = None,
                 bucket_boundaries: Optional[List[int]] = None, label: Optional[str] = None
                 ) -> None:
        super().__init__(label)
        self.length_fn = length_fn
        self._bucket_boundaries = _bucket_boundaries(length_fn, bucket_boundaries)
        self.estimator = BatchSizeEstimator(
            min_batch_size, max_batch_size, target_batch_overhead, target_batch_duration_secs,
            target_batch_duration_secs_including_fixed_cost, variance, clock,
            ignore_first_n_seen_per_batch_size, record_metrics)
        self.max_batch_duration_secs = max_batch_duration_secs
        self.element_size_fn = element_size_fn

    def expand(self, pcoll: PCollection) -> PCollection:
        if self.max_batch_duration_secs is not None:
            key = (Map(lambda v: (None, v)) if self.length_fn is None else
                   ParDo(WithLengthBucketKey(self.length_fn, self._bucket_boundaries)))
            return (pcoll | "Key" >> key
                    | "Batch" >> GroupIntoBatches(self.estimator.max_batch_size,
                                                  self.max_batch_duration_secs,
                                                  self.estimator.clock)
                    | "Unkey" >> Map(lambda kv: kv[1]))
        in_global = isinstance(pcoll.windowing.window_fn, GlobalWindows)
        fn = GlobalWindowsBatchingDoFn if in_global else WindowAwareBatchingDoFn
        return pcoll | "ParDo" >> ParDo(fn(self.estimator, self.element_size_fn))


class _GroupIntoBatchesFn(DoFn):
    """Each key's values in a bag with their count; the batch is output (at the window's
    end) when full, when the buffering timer fires, or when the window ends."""

    BUFFER = BagStateSpec("values")
    COUNT = CombiningValueStateSpec("count", combine_fn=sum)
    WINDOW_END = TimerSpec("window_end", TimeDomain.WATERMARK)
    BUFFERING = TimerSpec("buffering", TimeDomain.REAL_TIME)

    def __init__(self, batch_size: int, max_buffering_duration_secs: Optional[float],
                 clock: Callable[[], float]) -> None:
        self.batch_size = batch_size
        self.max_buffering = max_buffering_duration_secs
        self.clock = clock

    def process(self, element: Tuple[Any, Any], window: Any = DoFn.WindowParam,
                buffer: Any = DoFn.StateParam(BUFFER), count: Any = DoFn.StateParam(COUNT),
                window_end: Any = DoFn.TimerParam(WINDOW_END),
                buffering: Any = DoFn.TimerParam(BUFFERING)) -> Iterator[Any]:
        key, value = element
        if count.read() == 0:
            window_end.set(window.max_timestamp())
            if self.max_buffering:
                buffering.set(self.clock() + self.max_buffering)
        buffer.add(value)
        count.add(1)
        if count.read() >= self.batch_size:
            yield from self._flush(key, window, buffer, count, buffering)

    def _flush(self, key: Any, window: Any, buffer: Any, count: Any,
               buffering: Any) -> Iterator[Any]:
        batch = list(buffer.read())
        buffer.clear()
        count.clear()
        if self.max_buffering:
            buffering.clear()
        if batch:
            yield TimestampedValue((key, batch), window.max_timestamp())

    @on_timer(WINDOW_END)
    def on_window_end(self, key: Any = DoFn.KeyParam, window: Any = DoFn.WindowParam,
                      buffer: Any = DoFn.StateParam(BUFFER),
                      count: Any = DoFn.StateParam(COUNT),
                      buffering: Any = DoFn.TimerParam(BUFFERING)) -> Iterator[Any]:
        yield from self._flush(key, window, buffer, count, buffering)

    @on_timer(BUFFERING)
    def on_buffering(self, key: Any = DoFn.KeyParam, window: Any = DoFn.WindowParam,
                     buffer: Any = DoFn.StateParam(BUFFER),
                     count: Any = DoFn.StateParam(COUNT),
                     buffering: Any = DoFn.TimerParam(BUFFERING)) -> Iterator[Any]:
        yield from self._flush(key, window, buffer, count, buffering)


class ShardedKey:
    """Beam's `ShardedKey`: a key with the shard (of the worker that saw it) it is spread
    over, so one hot key's batches are built in parallel."""

    __slots__ = ("key", "shard_id")

    def __init__(self, key: Any, shard_id: bytes) -> None:
        self.key, self.shard_id = key, shard_id

    def __eq__(self, other: object) -> bool:
        return (type(other) is ShardedKey and self.key == other.key
                and self.shard_id == other.shard_id)

    def __hash__(self) -> int:
        return hash((self.key, self.shard_id))

    def __reduce__(self) -> Any:
        return ShardedKey, (self.key, self.shard_id)

    def __repr__(self) -> str:
        return f"ShardedKey(key={self.key!r}, shard_id={self.shard_id!r})"


class _ShardKeys(DoFn):
    """(key, value) -> (ShardedKey(key, this DoFn copy's shard), value)."""

    def setup(self) -> None:
        self.shard_id = uuid.uuid4().bytes

    def process(self, kv: Tuple[Any, Any]) -> Iterator[Any]:
        yield ShardedKey(kv[0], self.shard_id), kv[1]


class _GroupIntoBatchesWithShardedKey(PTransform):
    """Beam's `GroupIntoBatches.WithShardedKey`: GroupIntoBatches over (ShardedKey, value),
    each key spread over the shards of the workers that see it."""

    def __init__(self, batch_size: int, max_buffering_duration_secs: Optional[float] = None,
                 clock: Any = None, label: Optional[str] = None) -> None:
        super().__init__(label)
        self.batches = GroupIntoBatches(batch_size, max_buffering_duration_secs, clock)

    def expand(self, pcoll: PCollection) -> PCollection:
        return pcoll | "ShardKeys" >> ParDo(_ShardKeys()) | "Batch" >> self.batches


class GroupIntoBatches(PTransform):
    """Beam's `GroupIntoBatches(batch_size, max_buffering_duration_secs=None, clock=None)`:
    each key's values as (key, [values]) batches of at most `batch_size`; `clock` (default
    `time.time`) is when a batch starts waiting."""

    def __init__(self, batch_size: int, max_buffering_duration_secs: Optional[float] = None,
                 clock: Any = None, label: Optional[str] = None) -> None:
        super().__init__(label)
        if batch_size <= 0:
            raise ValueError(f"batch_size must be a positive value, got {batch_size}")
        if max_buffering_duration_secs is not None and max_buffering_duration_secs < 0:
            raise ValueError("max_buffering_duration_secs must be a non negative value")
        self.batch_size = batch_size
        self.max_buffering_duration_secs = max_buffering_duration_secs
        self.clock = clock or time.time

    def expand(self, pcoll: PCollection) -> PCollection:
        return pcoll | "ParDo" >> ParDo(_GroupIntoBatchesFn(
            self.batch_size, self.max_buffering_duration_secs, self.clock))

    #: the batches of each key spread over shards (set below, as Beam nests it)
    WithShardedKey: Any = None


GroupIntoBatches.WithShardedKey = _GroupIntoBatchesWithShardedKey


class SortAndBatchElementsDoFn(DoFn):
    """Beam's SortAndBatchElements DoFn in the global window: a bundle's elements, sorted
    by size at the bundle's end and cut into batches of at most `max_batch_size` elements
    and `max_batch_weight` total size."""

    def __init__(self, min_batch_size: int, max_batch_size: int, max_batch_weight: int,
                 element_size_fn: Optional[Callable[[Any], int]] = None) -> None:
        self.min_batch_size = min_batch_size
        self.max_batch_size, self.max_batch_weight = max_batch_size, max_batch_weight
        self._size_fn = element_size_fn
        self._has_warned_type_error = False

    def _element_size_fn(self, element: Any) -> int:
        """The element's size: by `element_size_fn`, else `len(element)`, else 1 (saying
        so once)."""
        if self._size_fn is not None:
            return self._size_fn(element)
        try:
            return len(element)
        except TypeError:
            if not self._has_warned_type_error:
                self._has_warned_type_error = True
                _LOG.warning("SortAndBatchElements: an element of type %s does not support "
                             "len(); its size is taken as 1 (give element_size_fn)",
                             type(element).__name__)
            return 1

    def _batches(self, elements: List[Any], window: Any) -> Iterator[WindowedValue]:
        """`elements` sorted by size (stably), in batches, each at the end of `window`."""
        sized = sorted(((self._element_size_fn(e), i, e) for i, e in enumerate(elements)),
                       key=lambda t: t[:2])
        batch: List[Any] = []
        weight = 0
        for size, _, element in sized:
            if batch and (len(batch) >= self.max_batch_size
                          or weight + size > self.max_batch_weight):
                yield WindowedValue(batch, window.max_timestamp(), window)
                batch, weight = [], 0
            batch.append(element)
            weight += size
        if batch:
            yield WindowedValue(batch, window.max_timestamp(), window)

    def start_bundle(self) -> None:
        self._buffer: List[Any] = []

    def process(self, element: Any) -> None:
        self._buffer.append(element)

    def finish_bundle(self) -> Iterator[WindowedValue]:
        buffer, self._buffer = self._buffer, []
        return self._batches(buffer, GlobalWindow())


class WindowAwareSortAndBatchElementsDoFn(SortAndBatchElementsDoFn):
    """The same per window: a bundle's elements of each window, batched at the bundle's end
    or, once more than `_MAX_LIVE_WINDOWS` windows are buffered, the fullest window's
    early."""

    _MAX_LIVE_WINDOWS = 10

    def start_bundle(self) -> None:
        self._buffers: DefaultDict[Any, List[Any]] = collections.defaultdict(list)

    def _flush_window(self, window: Any) -> Iterator[WindowedValue]:
        """The batches of `window`'s buffered elements (none if it has none)."""
        return self._batches(self._buffers.pop(window, []), window)

    def process(self, element: Any,  # type: ignore[override]
                window: Any = DoFn.WindowParam) -> Iterator[WindowedValue]:
        self._buffers[window].append(element)
        if len(self._buffers) > self._MAX_LIVE_WINDOWS:
            fullest = max(self._buffers, key=lambda w: len(self._buffers[w]))
            yield from self._flush_window(fullest)

    def finish_bundle(self) -> Iterator[WindowedValue]:
        for window in list(self._buffers):
            yield from self._flush_window(window)

class SortAndBatchElements(PTransform):
    """Beam's `SortAndBatchElements`: a bundle's elements, per window, sorted by
    `element_size_fn` (default: `len`, else 1) and batched by count and total size — so
    each batch holds elements of similar size (less padding for models)."""

    def __init__(self, min_batch_size: int = 1, max_batch_size: int = 10000,
                 max_batch_weight: int = 10 ** 9,
                 element_size_fn: Optional[Callable[[Any], int]] = None,
                 label: Optional[str] = None) -> None:
        super().__init__(label)
        if min_batch_size < 1:
            raise ValueError(f"min_batch_size must be >= 1, got {min_batch_size}")
        if max_batch_size < min_batch_size:
            raise ValueError(f"max_batch_size ({max_batch_size}) must be >= "
                             f"min_batch_size ({min_batch_size})")
        if max_batch_weight < 1:
            raise ValueError(f"max_batch_weight must be >= 1, got {max_batch_weight}")
        if element_size_fn is not None and not callable(element_size_fn):
            raise TypeError(f"element_size_fn must be callable, got {element_size_fn!r}")
        self.args = (min_batch_size, max_batch_size, max_batch_weight, element_size_fn)

    def expand(self, pcoll: PCollection) -> PCollection:
        in_global = isinstance(pcoll.windowing.window_fn, GlobalWindows)
        fn = SortAndBatchElementsDoFn if in_global else WindowAwareSortAndBatchElementsDoFn
        return pcoll | "ParDo" >> ParDo(fn(*self.args))
