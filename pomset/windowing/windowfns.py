"""WindowFns: `assign_windows` puts an element in windows; merging ones also `merge_windows`.

The two halves are the paper's AssignWindows and MergeWindows. Built-ins override
`assign_micros` (µs in, windows out) so the hot path never builds a `Timestamp`; a user subclass
overrides `assign_windows(timestamp, element)` and, to merge, `merge_windows(windows)`, or
Beam's protocol: `assign(WindowFn.AssignContext)` and `merge(WindowFn.MergeContext)`
(`NonMergingWindowFn` for one that does not merge). Each WindowFn answers both protocols.
"""
from __future__ import annotations

import bisect
from operator import attrgetter
from typing import Any, Iterable, List, Optional, Sequence, Tuple

from .beam_keywords import beam_keywords
from .pane import NO_FIRING, PaneInfo
from .time import MICROS_PER_SECOND, MIN_TIMESTAMP, Timestamp, duration_micros, to_micros
from .value import WindowedValue
from .windows import GLOBAL_WINDOW, BoundedWindow, IntervalWindow
from .time import TimeLike

MergeResult = List[Tuple[List[BoundedWindow], BoundedWindow]]
_max_ts = attrgetter("max_ts")


class _AssignContext:
    """What Beam's `WindowFn.assign` is given: the element's `timestamp` (a `Timestamp`), the
    `element`, and the `window` it is in (None where the runner does not say)."""

    def __init__(self, timestamp: TimeLike, element: Any = None,
                 window: Optional[BoundedWindow] = None) -> None:
        self.timestamp = Timestamp.of(timestamp)
        self.element = element
        self.window = window


class _MergeContext:
    """What Beam's `WindowFn.merge` is given: one key's active `windows`; the WindowFn calls
    `merge(to_be_merged, merge_result)` for each group of them it merges (a subclass says
    what a merge does)."""

    def __init__(self, windows: Iterable[BoundedWindow]) -> None:
        self.windows = list(windows)

    def merge(self, to_be_merged: Iterable[BoundedWindow], merge_result: BoundedWindow) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement merge(to_be_merged, "
                                  f"merge_result)")


class _Collect(_MergeContext):
    """A merge context that keeps what a Beam-style `merge` merged, as `merge_windows` gives it."""

    def __init__(self, windows: Iterable[BoundedWindow]) -> None:
        super().__init__(windows)
        self.result: MergeResult = []

    def merge(self, to_be_merged: Iterable[BoundedWindow], merge_result: BoundedWindow) -> None:
        group = list(to_be_merged)
        if group != [merge_result]:   # a window merged into itself alone is no merge
            self.result.append((group, merge_result))


class WindowFn:
    """Base class for windowing functions; subclass it for custom windowing, with pomset's
    `assign_windows`/`merge_windows` or Beam's `assign`/`merge` (see the module docstring)."""

    AssignContext = _AssignContext
    MergeContext = _MergeContext
    #: whether a WindowInto with it leaves each element in the window it is in
    keeps_windows = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A subclass (even of a built-in) that overrides the public assign_windows (or Beam's
        # assign) is custom: the runner must call its override, not an inherited built-in
        # fast path.
        if ({"assign_windows", "assign"} & cls.__dict__.keys()
                and "assign_micros" not in cls.__dict__):
            cls.assign_micros = WindowFn.assign_micros
        # Likewise a subclass that overrides merge_windows (or Beam's merge) must not inherit
        # a built-in's incremental merge.
        if {"merge_windows", "merge"} & cls.__dict__.keys() and "merge_new" not in cls.__dict__:
            cls.merge_new = WindowFn.merge_new

    def assign_windows(self, timestamp: Timestamp, element: Any) -> Iterable[BoundedWindow]:
        if self._assigns_by_context():
            return list(self.assign(_AssignContext(timestamp, element)))
        if type(self).assign_micros is not WindowFn.assign_micros:   # a built-in: its fast path
            return self.assign_micros(to_micros(timestamp), element)
        raise NotImplementedError(f"{type(self).__name__} must implement "
                                  f"assign_windows(timestamp, element) (or Beam's "
                                  f"assign(context))")

    def assign(self, context: _AssignContext) -> List[BoundedWindow]:
        """Beam's protocol: the windows of the element `context` describes (its timestamp and
        value)."""
        return list(self.assign_windows(context.timestamp, context.element))

    def _assigns_by_context(self) -> bool:
        """Whether this is a Beam-style subclass, whose own `assign` says the windows."""
        return type(self).assign is not WindowFn.assign

    def merge_windows(self, windows: Sequence[BoundedWindow]) -> MergeResult:
        """Group the active windows of one key: [(windows_to_merge, merged_window), ...]."""
        if type(self).merge is not WindowFn.merge:   # Beam's protocol: what its merge merges
            context = _Collect(windows)
            self.merge(context)
            return context.result
        raise NotImplementedError(f"{type(self).__name__} is not a merging WindowFn")

    def merge(self, context: _MergeContext) -> None:
        """Beam's protocol: merge `context.windows`, calling `context.merge(to_be_merged,
        merge_result)` for each group merged (nothing, for a WindowFn that does not merge)."""
        if self.is_merging():
            for to_be_merged, result in self.merge_windows(context.windows):
                context.merge(to_be_merged, result)

    def get_transformed_output_time(self, window: BoundedWindow,
                                    input_timestamp: Timestamp) -> Timestamp:
        """The time an element at `input_timestamp` in `window` counts for in its pane's output
        time under `TimestampCombiner.OUTPUT_AT_EARLIEST_TRANSFORMED` (the earliest of these
        over the pane's elements): by default the element's own; a subclass may move it."""
        return input_timestamp

    def merge_new(self, active: Sequence[BoundedWindow], new: BoundedWindow) -> MergeResult:
        """merge_windows over one key's active windows (sorted by start), `new` (just added)
        among them. The other active windows are the result of earlier merges, which a
        built-in may use to look only at what `new` can merge with."""
        return self.merge_windows(list(active))

    def is_merging(self) -> bool:
        return (type(self).merge_windows is not WindowFn.merge_windows
                or type(self).merge is not WindowFn.merge)

    def is_builtin(self) -> bool:
        return type(self).assign_micros is not WindowFn.assign_micros

    def assign_micros(self, ts: int, value: Any) -> Sequence[BoundedWindow]:
        """`assign_windows` with the time in µs, which the runners call: a built-in's fast
        path builds no `Timestamp`."""
        return list(self.assign_windows(Timestamp.from_micros(ts), value))

    def side_input_window(self, main_window: BoundedWindow) -> BoundedWindow:
        """The window of this (side input's) windowing that a main-input window reads."""
        windows = self.assign_micros(main_window.max_ts, None)
        return windows[-1] if windows else GLOBAL_WINDOW

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({args})"


class NonMergingWindowFn(WindowFn):
    """Beam's base of the WindowFns that never merge windows (GlobalWindows, FixedWindows,
    SlidingWindows): its `merge` merges nothing."""

    def is_merging(self) -> bool:
        return False

    def merge(self, context: _MergeContext) -> None:
        """Nothing to merge."""


class GlobalWindows(NonMergingWindowFn):
    """Every element in the single global window (the default)."""

    _ONE = [GLOBAL_WINDOW]

    @classmethod
    def windowed_value(cls, value: Any, timestamp: Any = MIN_TIMESTAMP,
                       pane_info: PaneInfo = NO_FIRING) -> WindowedValue:
        """Beam's: a WindowedValue of `value` in the global window at `timestamp` (the start
        of time unless given)."""
        return WindowedValue(value, timestamp, GLOBAL_WINDOW, pane_info)

    @classmethod
    def windowed_value_at_end_of_window(cls, value: Any) -> WindowedValue:
        """Beam's: a WindowedValue of `value` in the global window, at its end."""
        return cls.windowed_value(value, GLOBAL_WINDOW.max_timestamp())

    def assign_micros(self, ts: int, value: Any) -> List[BoundedWindow]:
        return self._ONE

    def side_input_window(self, main_window: BoundedWindow) -> BoundedWindow:
        return GLOBAL_WINDOW


_CACHE_LIMIT = 4096


class FixedWindows(NonMergingWindowFn):
    """Tumbling windows of `size` seconds, aligned to `offset`."""

    # The windows recently assigned, by start µs, each as the (immutable) sequence assign_micros
    # returns: elements of one window share one window object (fewer allocations; dict lookups downstream hit by identity). A slot, so it is
    # not in __dict__ and takes no part in equality or repr.
    __slots__ = ("_cache",)

    def __init__(self, size: float, offset: float = 0) -> None:
        self.size_us = duration_micros(size)
        if self.size_us <= 0:
            raise ValueError(f"FixedWindows size must be positive, got {size!r}")
        self.offset_us = duration_micros(offset) % self.size_us
        self._cache: dict = {}

    def assign_micros(self, ts: int, value: Any) -> Sequence[BoundedWindow]:
        start = ts - (ts - self.offset_us) % self.size_us
        cache = self._cache
        assigned = cache.get(start)
        if assigned is None:
            if len(cache) >= _CACHE_LIMIT:
                cache.clear()
            assigned = cache[start] = (IntervalWindow.from_micros(start, start + self.size_us),)
        return assigned

    def __repr__(self) -> str:
        return f"FixedWindows({self.size_us / MICROS_PER_SECOND:g}{_offset(self.offset_us)})"


class SlidingWindows(NonMergingWindowFn):
    """Windows of `size` seconds starting every `period` seconds; an element is in size/period of them."""

    __slots__ = ("_cache",)   # as FixedWindows: recent windows by start µs

    def __init__(self, size: float, period: float, offset: float = 0) -> None:
        self.size_us = duration_micros(size)
        self.period_us = duration_micros(period)
        if self.size_us <= 0 or self.period_us <= 0:
            raise ValueError(f"SlidingWindows size and period must be positive, got {size!r}, {period!r}")
        self.offset_us = duration_micros(offset) % self.period_us
        self._cache: dict = {}

    def assign_micros(self, ts: int, value: Any) -> List[BoundedWindow]:
        size, period = self.size_us, self.period_us
        start = ts - (ts - self.offset_us) % period
        cache = self._cache
        out = []
        while start > ts - size:
            w = cache.get(start)
            if w is None:
                if len(cache) >= _CACHE_LIMIT:
                    cache.clear()
                w = cache[start] = IntervalWindow.from_micros(start, start + size)
            out.append(w)
            start -= period
        return out

    def __repr__(self) -> str:
        return (f"SlidingWindows({self.size_us / MICROS_PER_SECOND:g}, "
                f"{self.period_us / MICROS_PER_SECOND:g}{_offset(self.offset_us)})")


def _offset(offset_us: int) -> str:
    """The offset argument of a repr, when it is not 0 (a repr names every parameter)."""
    return f", offset={offset_us / MICROS_PER_SECOND:g}" if offset_us else ""


def merge_overlapping(windows: Sequence[IntervalWindow]) -> MergeResult:
    """Merge intersecting interval windows into their span (what Sessions does)."""
    return [(group, span) for group, span in overlapping_runs(sorted(windows)) if len(group) > 1]


def overlapping_runs(items: Sequence[Any], window_of: Any = None) -> List[Tuple[list, Any]]:
    """`items` (sorted by their interval windows' starts; `window_of` gives an item's window,
    by default the item itself) cut into runs whose windows overlap one after another, each
    with their span (a run of one: its window)."""
    result: List[Tuple[list, Any]] = []
    group: list = []
    span = None
    for item in items:
        w = item if window_of is None else window_of(item)
        if span is not None and w.start_us <= span.max_ts:
            group.append(item)
            if w.max_ts > span.max_ts:
                span = IntervalWindow.from_micros(span.start_us, w.max_ts + 1)
        else:
            if group:
                result.append((group, span))
            group, span = [item], w
    if group:
        result.append((group, span))
    return result


class Sessions(WindowFn):
    """Per-key sessions: each element opens [t, t + gap); overlapping windows merge."""

    @beam_keywords(gap_size="gap")
    def __init__(self, gap: float) -> None:
        self.gap_us = duration_micros(gap)
        if self.gap_us <= 0:
            raise ValueError(f"Sessions gap must be positive, got {gap!r}")

    def assign_micros(self, ts: int, value: Any) -> List[BoundedWindow]:
        return [IntervalWindow.from_micros(ts, ts + self.gap_us)]

    def merge_windows(self, windows: Sequence[BoundedWindow]) -> MergeResult:
        return merge_overlapping(windows)

    def merge_new(self, active: Sequence[BoundedWindow], new: BoundedWindow) -> MergeResult:
        # The other active windows came out of earlier merges, so no two of them overlap and,
        # sorted by start, they are sorted by end too: the only group is `new` with the
        # windows it overlaps, and merge_overlapping over that run gives exactly that group
        # and its span.
        group = self.overlapping(active, new)
        return merge_overlapping(group) if len(group) > 1 else []

    @staticmethod
    def overlapping(active: Sequence[BoundedWindow], new: BoundedWindow) -> List[BoundedWindow]:
        """The windows of `active` (sorted by start; apart from `new`, if it is among them, no
        two overlap, as earlier merges leave them) that overlap `new`, in order: a run found
        by bisection."""
        lo, hi = new.start_us, new.max_ts
        i = bisect.bisect_left(active, lo, key=_max_ts)
        run = []
        while i < len(active) and active[i].start_us <= hi:
            if active[i].max_ts >= lo:
                run.append(active[i])
            i += 1
        return run

    def __repr__(self) -> str:
        return f"Sessions({self.gap_us / MICROS_PER_SECOND:g})"


class AssignedWindows(WindowFn):
    """Keeps the windows elements already carry: what a grouping's output is windowed by
    after a merging WindowFn, whose windows cannot be re-assigned from timestamps."""

    def assign_micros(self, ts: int, value: Any) -> List[BoundedWindow]:
        raise TypeError("AssignedWindows cannot assign windows from timestamps")

    def side_input_window(self, main_window: BoundedWindow) -> BoundedWindow:
        return main_window


class IdentityWindowFn(NonMergingWindowFn):
    """Beam's `util._IdentityWindowFn`: keeps the window each element is already in (a
    WindowInto with it changes no element), windows encoded by `window_coder`."""

    keeps_windows = True

    def __init__(self, window_coder: Any = None) -> None:
        self._window_coder = window_coder

    def assign(self, context: _AssignContext) -> List[BoundedWindow]:
        if context.window is None:
            raise ValueError(f"context.window should not be None: {self!r} keeps the window "
                             f"an element is in, and this one ({context.element!r}) has none")
        return [context.window]

    def assign_micros(self, ts: int, value: Any) -> List[BoundedWindow]:
        raise TypeError("IdentityWindowFn keeps an element's window; it assigns none from a "
                        "timestamp")

    def get_window_coder(self) -> Any:
        """The coder of the windows it keeps (as it was given)."""
        return self._window_coder

    def side_input_window(self, main_window: BoundedWindow) -> BoundedWindow:
        return main_window
