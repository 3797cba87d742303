"""Windows: `IntervalWindow` covers [start, end); the `GlobalWindow` spans all of event time."""
from __future__ import annotations

from .time import (GLOBAL_WINDOW_MAX_MICROS, MIN_MICROS, Timestamp, TimeLike,
                   format_seconds, timestamp_at, to_micros)


class BoundedWindow:
    """Base of all windows; `max_ts` is the last µs the window covers."""

    __slots__ = ()
    max_ts: int
    start_us: int = MIN_MICROS   # where a window with no start of its own sorts

    def max_timestamp(self) -> Timestamp:
        return timestamp_at(self.max_ts)

    @property
    def end_micros(self) -> int:
        return self.max_ts + 1


class IntervalWindow(BoundedWindow):
    """The half-open event-time interval [start, end)."""

    __slots__ = ("start_us", "max_ts", "_hash")

    def __init__(self, start: TimeLike, end: TimeLike) -> None:
        self._set(to_micros(start), to_micros(end))

    def _set(self, start_us: int, end_us: int) -> None:
        if end_us <= start_us:
            raise ValueError(f"an IntervalWindow needs start < end, got [{start_us}µs, {end_us}µs)")
        self.start_us = start_us
        self.max_ts = end_us - 1
        self._hash = hash((start_us, end_us))

    @classmethod
    def from_micros(cls, start_us: int, end_us: int) -> "IntervalWindow":
        w = cls.__new__(cls)
        w.start_us = start_us
        w.max_ts = end_us - 1
        w._hash = hash((start_us, end_us))
        return w

    @property
    def start(self) -> Timestamp:
        return timestamp_at(self.start_us)

    @property
    def end(self) -> Timestamp:
        return timestamp_at(self.max_ts + 1)

    def contains(self, micros: int) -> bool:
        return self.start_us <= micros <= self.max_ts

    def intersects(self, other: "IntervalWindow") -> bool:
        return self.start_us <= other.max_ts and other.start_us <= self.max_ts

    def span(self, other: "IntervalWindow") -> "IntervalWindow":
        return IntervalWindow.from_micros(min(self.start_us, other.start_us),
                                          max(self.max_ts, other.max_ts) + 1)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, IntervalWindow) and self.start_us == other.start_us
                and self.max_ts == other.max_ts)

    def __lt__(self, other: "IntervalWindow") -> bool:
        return (self.start_us, self.max_ts) < (other.start_us, other.max_ts)

    def __hash__(self) -> int:
        return self._hash

    def __getstate__(self):
        return (self.start_us, self.max_ts + 1)

    def __setstate__(self, state) -> None:
        self._set(*state)

    def __repr__(self) -> str:
        return f"IntervalWindow({format_seconds(self.start_us)}, {format_seconds(self.max_ts + 1)})"

    def __str__(self) -> str:
        """As Beam prints a window: `[start, end)`, in seconds as floats."""
        return f"[{float(self.start)}, {float(self.end)})"


class GlobalWindow(BoundedWindow):
    """The single window covering all of event time (a singleton)."""

    __slots__ = ()
    _instance = None
    max_ts = GLOBAL_WINDOW_MAX_MICROS
    start_us = MIN_MICROS

    def __new__(cls) -> "GlobalWindow":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def contains(self, micros: int) -> bool:
        return True

    @property
    def start(self) -> Timestamp:
        """The start of time (Beam's `GlobalWindow().start`)."""
        return timestamp_at(MIN_MICROS)

    @property
    def end(self) -> Timestamp:
        """Just after its last µs, a day before the end of time (Beam's `end`)."""
        return timestamp_at(self.max_ts + 1)

    def __reduce__(self):
        return (GlobalWindow, ())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GlobalWindow)

    def __lt__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 0x61_0bA1

    def __repr__(self) -> str:
        return "GlobalWindow()"


GLOBAL_WINDOW = GlobalWindow()
