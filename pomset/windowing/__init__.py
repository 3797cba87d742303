"""Where in event time: timestamps, windows, WindowFns, timestamp combiners, panes, elements."""
from .pane import NO_FIRING, PaneInfo, PaneTiming
from .time import (MAX_MICROS, MAX_TIMESTAMP, MIN_MICROS, MIN_TIMESTAMP, Duration, Timestamp,
                   duration_micros, now_micros, to_micros)
from .timestamp_combiner import TimestampCombiner
from .value import TimestampedValue, WindowedValue
from .windowfns import (AssignedWindows, FixedWindows, GlobalWindows, IdentityWindowFn,
                        NonMergingWindowFn, Sessions, SlidingWindows, WindowFn, merge_overlapping, overlapping_runs)
from .windows import GLOBAL_WINDOW, BoundedWindow, GlobalWindow, IntervalWindow

__all__ = [
    "NO_FIRING", "PaneInfo", "PaneTiming", "MAX_MICROS", "MAX_TIMESTAMP", "MIN_MICROS",
    "MIN_TIMESTAMP", "Duration", "Timestamp", "duration_micros", "now_micros", "to_micros", "TimestampCombiner",
    "TimestampedValue", "WindowedValue", "AssignedWindows", "FixedWindows", "GlobalWindows",
    "IdentityWindowFn", "NonMergingWindowFn",
    "Sessions", "SlidingWindows", "WindowFn", "merge_overlapping", "overlapping_runs",
    "GLOBAL_WINDOW",
    "BoundedWindow", "GlobalWindow", "IntervalWindow",
]
