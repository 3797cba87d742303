"""Beam's `apache_beam.testing.test_stream`: `TestStream`, a scripted source of elements,
watermark and processing time, its events, and `WindowedValueHolder`."""
from .._beam_names import missing
from ..sdk.test_stream import (ElementEvent, Event, ProcessingTimeEvent, TestStream,
                               WatermarkEvent, WindowedValueHolder)

__test__ = False   # not a test module for pytest to collect

__all__ = ["ElementEvent", "Event", "ProcessingTimeEvent", "TestStream", "WatermarkEvent",
           "WindowedValueHolder"]
__getattr__ = missing(__name__, "apache_beam.testing.test_stream")
