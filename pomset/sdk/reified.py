"""Beam's `TestWindowedValue`: an element as `assert_that(..., reify_windows=True)` shows it to
a matcher (value, timestamp, windows), to write expected elements with their windows."""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from ..windowing import Timestamp


class TestWindowedValue(NamedTuple):
    """A value with its timestamp and windows, compared as a whole by `equal_to`."""

    __test__ = False   # not a test class, though pytest's name rule says so

    value: Any
    timestamp: Any
    windows: Sequence[Any]


def as_test_windowed_value(element: Any) -> Any:
    """`element` (a pomset element or a TestWindowedValue) as a TestWindowedValue whose
    timestamp is a Timestamp and windows a tuple, so that equal ones compare equal; any
    other value as it is."""
    if isinstance(element, TestWindowedValue):
        return TestWindowedValue(element.value, Timestamp.of(element.timestamp),
                                 tuple(element.windows))
    if hasattr(element, "windows") and hasattr(element, "timestamp"):
        return TestWindowedValue(element.value, element.timestamp, tuple(element.windows))
    return element
