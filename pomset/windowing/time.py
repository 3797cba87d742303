"""Event time as int64 microseconds, and the public `Timestamp` that wraps it.

Internally every stage passes plain ints (µs) so Arrow and Spark columns hold event time
natively; `Timestamp` is the user-facing view, accepted wherever the API takes a time.
"""
from __future__ import annotations

import datetime as _dt
import time as _time
from functools import total_ordering
from typing import Union

MICROS_PER_SECOND = 1_000_000
MIN_MICROS = -(2**62)
MAX_MICROS = 2**62
# The global window ends a day before the end of time, as in Beam, so the watermark
# reaching MAX_MICROS passes it (and its garbage-collection time) and fires it.
GLOBAL_WINDOW_MAX_MICROS = MAX_MICROS - 86_400 * MICROS_PER_SECOND

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_new = object.__new__


@total_ordering
class Timestamp:
    """A point in event or processing time; `int(ts)` and `float(ts)` give seconds."""

    __slots__ = ("micros",)

    def __init__(self, seconds: Union[int, float] = 0, micros: int = 0) -> None:
        if type(micros) is int and seconds == 0:
            self.micros = micros
        elif type(seconds) is int:
            self.micros = seconds * MICROS_PER_SECOND + int(micros)
        else:
            self.micros = int(round(seconds * MICROS_PER_SECOND)) + int(micros)

    @classmethod
    def from_micros(cls, micros: int) -> "Timestamp":
        ts = _new(cls)
        ts.micros = micros if type(micros) is int else int(micros)
        return ts

    @classmethod
    def of(cls, value: "TimeLike") -> "Timestamp":
        """Convert seconds (int/float), a datetime or a Timestamp."""
        return cls.from_micros(to_micros(value))

    @classmethod
    def now(cls) -> "Timestamp":
        """The wall clock's time now (Beam's `Timestamp.now()`)."""
        return cls.from_micros(now_micros())

    def to_datetime(self) -> _dt.datetime:
        return _EPOCH + _dt.timedelta(microseconds=self.micros)

    def __int__(self) -> int:
        return self.micros // MICROS_PER_SECOND

    def __float__(self) -> float:
        return self.micros / MICROS_PER_SECOND

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Timestamp):
            return self.micros == other.micros
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return self.micros == to_micros(other)
        return NotImplemented

    def __lt__(self, other: "TimeLike") -> bool:
        return self.micros < to_micros(other)

    def __hash__(self) -> int:
        return hash(self.micros / MICROS_PER_SECOND)  # equal to hash(seconds), as __eq__ is

    def __add__(self, seconds: Union[int, float]) -> "Timestamp":
        return Timestamp.from_micros(self.micros + duration_micros(seconds))

    def __sub__(self, other: Union["Timestamp", int, float]):
        if isinstance(other, Timestamp):
            return (self.micros - other.micros) / MICROS_PER_SECOND
        return Timestamp.from_micros(self.micros - duration_micros(other))

    def __repr__(self) -> str:
        if self.micros <= MIN_MICROS:
            return "Timestamp(MIN)"
        if self.micros >= MAX_MICROS:
            return "Timestamp(MAX)"
        return f"Timestamp({format_seconds(self.micros)})"


TimeLike = Union[Timestamp, int, float, _dt.datetime]

def now_micros() -> int:
    """The real clock (processing time), in µs since the epoch."""
    return _time.time_ns() // 1000


def timestamp_at(micros: int) -> Timestamp:
    """`Timestamp.from_micros` for an int, without the class method's dispatch (hot paths)."""
    ts = _new(Timestamp)
    ts.micros = micros
    return ts


MIN_TIMESTAMP = Timestamp.from_micros(MIN_MICROS)
MAX_TIMESTAMP = Timestamp.from_micros(MAX_MICROS)


def to_micros(value: TimeLike) -> int:
    """Event time in µs from seconds, a datetime or a Timestamp; a clear error otherwise."""
    if isinstance(value, Timestamp):
        return value.micros
    if isinstance(value, bool):
        raise TypeError(f"a timestamp must be seconds, a datetime or pm.Timestamp, not {value!r}")
    if isinstance(value, int):
        return value * MICROS_PER_SECOND
    if isinstance(value, float):
        return int(round(value * MICROS_PER_SECOND))
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * MICROS_PER_SECOND + delta.microseconds
    raise TypeError(
        f"a timestamp must be seconds (int or float), a datetime or pm.Timestamp, "
        f"not {type(value).__name__}: {value!r}")


class Duration:
    """A length of time (Beam's `Duration`): `Duration(seconds=1.5)`, `Duration(micros=10)`,
    `Duration.of(seconds)`; accepted wherever pomset takes seconds for a duration."""

    __slots__ = ("micros",)

    def __init__(self, seconds: Union[int, float] = 0, micros: int = 0) -> None:
        self.micros = duration_micros(seconds) + int(micros)

    @classmethod
    def of(cls, value: Union[int, float, _dt.timedelta, "Duration"]) -> "Duration":
        return cls(micros=duration_micros(value))

    def __float__(self) -> float:
        return self.micros / MICROS_PER_SECOND

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and self.micros == other.micros

    def __hash__(self) -> int:
        return hash(("Duration", self.micros))

    def __repr__(self) -> str:
        return f"Duration({format_seconds(self.micros)})"


def duration_micros(value: Union[int, float, _dt.timedelta, Duration]) -> int:
    """A duration in µs from seconds, a timedelta or a Duration."""
    if isinstance(value, Duration):
        return value.micros
    if isinstance(value, _dt.timedelta):
        return (value.days * 86_400 + value.seconds) * MICROS_PER_SECOND + value.microseconds
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"a duration must be seconds or a timedelta, not {value!r}")
    return int(round(value * MICROS_PER_SECOND))


def format_seconds(micros: int) -> str:
    """Seconds as a short decimal string, for reprs and file columns."""
    if micros % MICROS_PER_SECOND == 0:
        return str(micros // MICROS_PER_SECOND)
    return repr(micros / MICROS_PER_SECOND)
