"""TimestampCombiner: which event time a pane is output at."""
from __future__ import annotations

import enum
from typing import Any, Callable, Optional

from .time import timestamp_at, to_micros


class TimestampCombiner(enum.Enum):
    """End of window (the default), or the earliest or latest element timestamp in the pane;
    or, `OUTPUT_AT_EARLIEST_TRANSFORMED`, the earliest of the times the WindowFn's
    `get_transformed_output_time(window, timestamp)` gives the pane's elements."""

    OUTPUT_AT_EOW = "OUTPUT_AT_EOW"
    OUTPUT_AT_EARLIEST = "OUTPUT_AT_EARLIEST"
    OUTPUT_AT_LATEST = "OUTPUT_AT_LATEST"
    OUTPUT_AT_EARLIEST_TRANSFORMED = "OUTPUT_AT_EARLIEST_TRANSFORMED"

    def combine(self, a: int, b: int) -> int:
        if self is TimestampCombiner.OUTPUT_AT_LATEST:
            return a if a > b else b
        return a if a < b else b

    def transform(self, window_fn: Any) -> Optional[Callable[[Any, int], int]]:
        """What moves an element's time (µs) in its window before it is combined: the
        WindowFn's `get_transformed_output_time` under OUTPUT_AT_EARLIEST_TRANSFORMED, else
        None (the element's own time)."""
        if self is not TimestampCombiner.OUTPUT_AT_EARLIEST_TRANSFORMED:
            return None
        moved = window_fn.get_transformed_output_time

        def transform(window: Any, micros: int) -> int:
            return to_micros(moved(window, timestamp_at(micros)))
        return transform
