"""Beam's `apache_beam.transforms.window` (`beam.window`) names: windows, WindowFns, time, and
the values that carry a time (`TimestampedValue`) or a time and window (`WindowedValue`)."""
from ._beam_names import missing
from .windowing import (BoundedWindow, Duration, FixedWindows, GlobalWindow, GlobalWindows,
                        IntervalWindow, NonMergingWindowFn, Sessions, SlidingWindows, Timestamp,
                        TimestampCombiner, TimestampedValue, WindowedValue, WindowFn)
from .windowing import MAX_TIMESTAMP, MIN_TIMESTAMP

__all__ = ["BoundedWindow", "Duration", "FixedWindows", "GlobalWindow", "GlobalWindows",
           "IntervalWindow", "NonMergingWindowFn", "Sessions", "SlidingWindows", "Timestamp",
           "TimestampCombiner", "TimestampedValue", "WindowedValue", "WindowFn", "MAX_TIMESTAMP",
           "MIN_TIMESTAMP"]
__getattr__ = missing(__name__, "apache_beam.transforms.window")
