"""Beam's `Reify` transforms: an element's timestamp or window made part of its value, for
code that needs them as data."""
from __future__ import annotations

from typing import Any, Iterator, Tuple

from ..windowing import TimestampedValue
from .core import ParDo
from .dofn import DoFn


class _Timestamp(DoFn):
    def process(self, element: Any, timestamp: Any = DoFn.TimestampParam) -> Iterator[Any]:
        yield TimestampedValue(element, timestamp)


class _Window(DoFn):
    def process(self, element: Any, timestamp: Any = DoFn.TimestampParam,
                window: Any = DoFn.WindowParam) -> Iterator[Any]:
        yield element, timestamp, window


class _TimestampInValue(DoFn):
    def process(self, kv: Tuple[Any, Any],
                timestamp: Any = DoFn.TimestampParam) -> Iterator[Any]:
        yield kv[0], TimestampedValue(kv[1], timestamp)


class _WindowInValue(DoFn):
    def process(self, kv: Tuple[Any, Any], timestamp: Any = DoFn.TimestampParam,
                window: Any = DoFn.WindowParam) -> Iterator[Any]:
        yield kv[0], (kv[1], timestamp, window)


class Reify:
    """Beam's `Reify.Timestamp()`, `.Window()`, `.TimestampInValue()`, `.WindowInValue()`."""

    @staticmethod
    def Timestamp() -> ParDo:
        """Each element as `TimestampedValue(element, its timestamp)`."""
        return ParDo(_Timestamp(), label="Reify.Timestamp")

    @staticmethod
    def Window() -> ParDo:
        """Each element as `(element, its timestamp, its window)`."""
        return ParDo(_Window(), label="Reify.Window")

    @staticmethod
    def TimestampInValue() -> ParDo:
        """Each (key, value) as `(key, TimestampedValue(value, its timestamp))`."""
        return ParDo(_TimestampInValue(), label="Reify.TimestampInValue")

    @staticmethod
    def WindowInValue() -> ParDo:
        """Each (key, value) as `(key, (value, its timestamp, its window))`."""
        return ParDo(_WindowInValue(), label="Reify.WindowInValue")
