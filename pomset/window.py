"""Beam's `apache_beam.transforms.window` (`beam.window`) names: windows, WindowFns, time."""
from ._beam_names import missing
from .windowing import (BoundedWindow, Duration, FixedWindows, GlobalWindow, GlobalWindows,
                        IntervalWindow, Sessions, SlidingWindows, Timestamp, TimestampCombiner,
                        TimestampedValue, WindowFn)

__all__ = ["BoundedWindow", "Duration", "FixedWindows", "GlobalWindow", "GlobalWindows",
           "IntervalWindow", "Sessions", "SlidingWindows", "Timestamp", "TimestampCombiner",
           "TimestampedValue", "WindowFn"]
__getattr__ = missing(__name__, "apache_beam.transforms.window")
