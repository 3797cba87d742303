"""Elements: `WindowedValue` (value, timestamp, window, pane, diff) and `TimestampedValue`."""
from __future__ import annotations

from typing import Any, List, Sequence, Union

from .beam_keywords import beam_keywords
from .pane import NO_FIRING, PaneInfo
from .time import Timestamp, TimeLike, timestamp_at, to_micros
from .windows import GLOBAL_WINDOW, BoundedWindow


class WindowedValue:
    """One element in one window; `diff` is +1 for a datum, -1 for a retraction. A DoFn that
    returns or yields one sets its output's time and window. `window` may be given as Beam
    gives its `windows`, a list, when it holds one window (one WindowedValue per window
    stands for Beam's in several), or none: a value in no window (its `window` None), which
    only carries a value and a time (as Beam's TestStream reads one)."""

    __slots__ = ("value", "ts", "window", "pane", "diff")

    @beam_keywords(windows="window", pane_info="pane")
    def __init__(self, value: Any, timestamp: TimeLike,
                 window: Union[BoundedWindow, Sequence[BoundedWindow]] = GLOBAL_WINDOW,
                 pane: PaneInfo = NO_FIRING, diff: int = 1) -> None:
        if isinstance(window, (list, tuple)):
            if len(window) > 1:
                raise ValueError(f"a WindowedValue is in one window, got {len(window)} "
                                 f"({window!r}): make one WindowedValue per window")
            window = window[0] if window else None
        self.value = value
        self.ts = to_micros(timestamp)
        self.window = window
        self.pane = pane
        self.diff = diff

    @classmethod
    def raw(cls, value: Any, ts: int, window: BoundedWindow, pane: PaneInfo, diff: int) -> "WindowedValue":
        wv = cls.__new__(cls)
        wv.value = value
        wv.ts = ts
        wv.window = window
        wv.pane = pane
        wv.diff = diff
        return wv

    @property
    def timestamp(self) -> Timestamp:
        return timestamp_at(self.ts)

    @property
    def windows(self) -> List[BoundedWindow]:
        """Beam's name: the windows the value is in (here, its one window), a list as Beam's
        DoFn.WindowedValueParam gives them."""
        return [self.window]

    def with_value(self, value: Any) -> "WindowedValue":
        return WindowedValue.raw(value, self.ts, self.window, self.pane, self.diff)

    @property
    def pane_info(self) -> PaneInfo:
        """Beam's name for `pane` (Beam's constructor takes `pane_info=`, and `windows=`)."""
        return self.pane

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, WindowedValue) and self.value == other.value
                and self.ts == other.ts and self.window == other.window
                and self.pane == other.pane and self.diff == other.diff)

    def __hash__(self) -> int:
        return hash((self.ts, self.window, self.diff))

    def __reduce__(self):
        return (WindowedValue.raw, (self.value, self.ts, self.window, self.pane, self.diff))

    def __repr__(self) -> str:
        sign = "" if self.diff == 1 else f", diff={self.diff}"
        return f"WindowedValue({self.value!r}, {self.timestamp!r}, {self.window!r}, {self.pane!r}{sign})"


class TimestampedValue:
    """A value with an event time, for `Create` inputs and DoFn outputs."""

    __slots__ = ("value", "ts")

    def __init__(self, value: Any, timestamp: TimeLike) -> None:
        self.value = value
        self.ts = timestamp.micros if type(timestamp) is Timestamp else to_micros(timestamp)

    @property
    def timestamp(self) -> Timestamp:
        return timestamp_at(self.ts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimestampedValue) and (self.value, self.ts) == (other.value, other.ts)

    def __hash__(self) -> int:
        return hash(self.ts)

    def __repr__(self) -> str:
        return f"TimestampedValue({self.value!r}, {self.timestamp!r})"
