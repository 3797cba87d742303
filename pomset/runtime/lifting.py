"""Combiner lifting: a task's (key, value) elements folded into one partial accumulator per key
and window before the shuffle, which the grouping's kernel then merges (`KernelHost.partials`),
as Beam lifts a `CombinePerKey`. A shuffle then carries a row per key and window a task saw,
not one per element."""
from __future__ import annotations

from array import array
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..sdk.combinefn import Count, Mean, Sum, copy_combine_fn
from ..triggers.reducers import CombineReducer
from ..windowing import NO_FIRING, GlobalWindows, TimestampCombiner, WindowedValue
from . import combine_lifecycle
from .elementwise import user_code_error

# combines whose retract_input undoes an add_input from any accumulator, a fresh one included:
# a partial may hold the retraction of a value another task added
INVERTIBLE = (Sum, Count, Mean)


def liftable(fn: Any, strategy: Any, may_retract: bool, late_tag: Any) -> bool:
    """Whether a grouping's elements may be folded before its shuffle, as far as its combine
    and windows go: a combine that merges accumulators, over non-merging windows, with no late
    output (late elements go there as they came), and on input with retractions only if the
    combine's retraction inverts any addition (`INVERTIBLE`); not when the timestamp combiner
    moves each element's time in its window (OUTPUT_AT_EARLIEST_TRANSFORMED), which the
    grouping's kernel does. Its trigger must not tell the partials from the elements they
    fold either, which the runner's plan decides (a partial counts as one element)."""
    return (fn is not None and fn.can_merge() and not strategy.window_fn.is_merging()
            and late_tag is None and (not may_retract or type(fn) in INVERTIBLE)
            and strategy.timestamp_combiner.transform(strategy.window_fn) is None)


def liftable_in_streams(fn: Any, strategy: Any, may_retract: bool, late_tag: Any) -> bool:
    """Whether a streaming grouping's elements may be folded before its shuffle: `liftable`,
    and a micro-batch's partials fire as its elements would have, one by one: the trigger
    counts no elements, and every element the grouping keeps arrives before the watermark
    passes its window (no allowed lateness, or the global window), so that none can fire a
    pane on arrival (a late element fires its window at once under the default trigger, and
    a new window behind the watermark under any `AfterWatermark`)."""
    return (liftable(fn, strategy, may_retract, late_tag)
            and not strategy.trigger.counts_elements()
            and (strategy.allowed_lateness_us == 0 or isinstance(strategy.window_fn, GlobalWindows)))


class Tallied:
    """A partial accumulator with the times of the elements it folded, retractions included:
    a grouping whose input watermark has passed some of them counts its late and dropped
    elements by these, as it would have counted the elements one by one
    (`KernelHost.partials`, `TimedCombineHost.partials`). `times` is a list, or (as the
    columnar aggregators make it) their int64 array's bytes with the earliest and latest
    given: a partial all on one side of the watermark is then counted without reading them."""

    __slots__ = ("acc", "times", "lo", "hi")

    def __init__(self, acc: Any, times: Any, lo: Optional[int] = None,
                 hi: Optional[int] = None) -> None:
        self.acc, self.times = acc, times
        if lo is None or hi is None:
            listed = self.time_list()
            lo, hi = min(listed), max(listed)
        self.lo, self.hi = lo, hi

    def __reduce__(self) -> Any:
        return (Tallied, (self.acc, self.times, self.lo, self.hi))

    def rows(self) -> int:
        """How many elements it folded."""
        times = self.times
        return len(times) // 8 if isinstance(times, bytes) else len(times)

    def late(self, wm: int) -> int:
        """How many of its elements are behind the watermark `wm`."""
        if self.lo >= wm:
            return 0
        if self.hi < wm:
            return self.rows()
        return sum(1 for x in self.time_list() if x < wm)

    def time_list(self) -> List[int]:
        times = self.times
        return array("q", times).tolist() if isinstance(times, bytes) else times


def split_tallied(bundle: Sequence[WindowedValue]) -> Tuple[list, list]:
    """A bundle of (key, partial accumulator) elements as the plain partials and the
    `Tallied` ones, each in the bundle's order."""
    plain: list = []
    tallied: list = []
    for wv in bundle:
        (tallied if type(wv.value[1]) is Tallied else plain).append(wv)
    return plain, tallied


class PartialFold:
    """(key, value) elements folded into a partial accumulator per key (known by its pickled
    bytes) and window, at the earliest or latest of its elements' times as the timestamp
    combiner takes; retractions retract from it. With `tally`, each partial is `Tallied`
    with its elements' times (a streaming grouping counts late data by them; a batch one
    sees none)."""

    def __init__(self, fn: Any, combiner: TimestampCombiner, label: str,
                 tally: bool = False) -> None:
        self.fn, self.reducer = fn, CombineReducer(fn)
        self.combiner, self.label = combiner, label
        self.tally = tally
        self.parts: Dict[Tuple[bytes, Any], list] = {}
        self.owned = False

    @classmethod
    def own(cls, fn: Any, combiner: TimestampCombiner, label: str,
            tally: bool = False) -> "PartialFold":
        """A fold with a copy of `fn` of its own, set up now and torn down by `close`: a
        task's, whose function may run many times on the objects it unpickled once."""
        fold = cls(copy_combine_fn(fn), combiner, label, tally)
        combine_lifecycle.acquire([fold.fn])
        fold.owned = True
        return fold

    def close(self) -> None:
        """Tear down the fold's own copy of its CombineFn (`own`), once."""
        if self.owned:
            self.owned = False
            combine_lifecycle.release([self.fn])

    def __bool__(self) -> bool:
        return bool(self.parts)

    def add(self, elements: Sequence[WindowedValue], keys: Sequence[bytes]) -> None:
        """Fold `elements`, whose values are (key, value) pairs, `keys` their keys pickled."""
        parts, create = self.parts, self.reducer.create
        add, add_one = self.reducer.add, self.reducer.add_one
        # the timestamp combiner inlined (earliest, or latest): a call per element cost more
        latest = self.combiner is TimestampCombiner.OUTPUT_AT_LATEST
        tally = self.tally
        for wv, kb in zip(elements, keys):
            key, value = wv.value
            ts = wv.ts
            try:
                at = (kb, wv.window)
                part = parts.get(at)
                if part is None:
                    part = parts[at] = [key, create(), ts, []]
                elif (ts > part[2]) if latest else (ts < part[2]):
                    part[2] = ts
                part[1] = (add_one(part[1], value) if wv.diff == 1
                           else add(part[1], value, wv.diff))
            except Exception as e:
                raise user_code_error(self.label, wv.value, e) from e
            if tally:
                part[3].append(ts)

    def take(self) -> Tuple[List[WindowedValue], List[bytes]]:
        """The partials folded so far, as (key, accumulator) elements, with their pickled keys;
        the fold starts empty again."""
        parts, self.parts = self.parts, {}
        return ([WindowedValue.raw((key, Tallied(acc, times) if self.tally else acc), ts, window,
                                   NO_FIRING, 1)
                 for (_, window), (key, acc, ts, times) in parts.items()],
                [kb for kb, _ in parts])
