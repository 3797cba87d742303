"""TimestampCombiner: which event time a pane is output at."""
from __future__ import annotations

import enum


class TimestampCombiner(enum.Enum):
    """End of window (the default), or the earliest or latest element timestamp in the pane."""

    OUTPUT_AT_EOW = "OUTPUT_AT_EOW"
    OUTPUT_AT_EARLIEST = "OUTPUT_AT_EARLIEST"
    OUTPUT_AT_LATEST = "OUTPUT_AT_LATEST"

    def combine(self, a: int, b: int) -> int:
        if self is TimestampCombiner.OUTPUT_AT_LATEST:
            return a if a > b else b
        return a if a < b else b
