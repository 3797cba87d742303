"""Beam's `TestWindowedValue`: an element as `assert_that(..., reify_windows=True)` shows it to
a matcher (value, timestamp, windows, pane), to write expected elements with their windows."""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from ..windowing import Timestamp


class TestWindowedValue(NamedTuple):
    """A value with its timestamp, windows and (where given) pane, compared as a whole by
    `equal_to`; expected values without a pane match an element in any pane."""

    __test__ = False   # not a test class, though pytest's name rule says so

    value: Any
    timestamp: Any
    windows: Sequence[Any]
    pane_info: Any = None


def as_test_windowed_value(element: Any, panes: bool = False) -> Any:
    """`element` (a pomset element or a TestWindowedValue) as a TestWindowedValue whose
    timestamp is a Timestamp and windows a tuple, so that equal ones compare equal, with its
    pane where `panes` (else none: a TestWindowedValue keeps the pane it was given); any
    other value as it is."""
    if isinstance(element, TestWindowedValue):
        return TestWindowedValue(element.value, Timestamp.of(element.timestamp),
                                 tuple(element.windows), element.pane_info)
    if hasattr(element, "windows") and hasattr(element, "timestamp"):
        return TestWindowedValue(element.value, element.timestamp, tuple(element.windows),
                                 getattr(element, "pane", None) if panes else None)
    return element
