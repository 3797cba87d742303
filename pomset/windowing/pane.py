"""PaneInfo: where a pane sits among the firings of its window (Beam's fields)."""
from __future__ import annotations

import enum
from typing import NamedTuple


class PaneTiming(enum.Enum):
    """EARLY before the watermark passes the window, ON_TIME the first pane after, LATE the rest."""

    EARLY = "EARLY"
    ON_TIME = "ON_TIME"
    LATE = "LATE"
    UNKNOWN = "UNKNOWN"


class PaneInfo(NamedTuple):
    """Timing, index among the window's panes, index among its non-early panes, first, last."""

    is_first: bool
    is_last: bool
    timing: PaneTiming
    index: int
    nonspeculative_index: int

    def __repr__(self) -> str:
        flags = "".join(f for f, on in ((" first", self.is_first), (" last", self.is_last)) if on)
        return f"PaneInfo({self.timing.value} #{self.index}/{self.nonspeculative_index}{flags})"


# What an element carries before any grouping: Beam's PANE_INFO_NO_FIRING.
NO_FIRING = PaneInfo(True, True, PaneTiming.UNKNOWN, 0, 0)
