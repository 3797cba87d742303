"""Event time from what users' records hold: numbers since the epoch in a declared unit
(`timestamp_unit=`: s, ms, us or ns), ISO-8601 strings, datetimes, dates and Timestamps; and
a hint when numbers look like another unit than the one declared (a millisecond epoch read as
seconds lands in the year 55,000)."""
from __future__ import annotations

import datetime as _dt
import decimal
import math
import numbers
import warnings
from typing import Any, Optional, Tuple

from ..windowing import MAX_MICROS, MIN_MICROS, Timestamp
from ..windowing.time import to_micros
from .errors import TimeUnitWarning

#: microseconds in one unit of a numeric timestamp, as (numerator, denominator)
TIME_UNITS = {"s": (1_000_000, 1), "ms": (1_000, 1), "us": (1, 1), "ns": (1, 1_000)}
_NAMES = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
#: seconds since the epoch that a plausible event time lies between (1973 to 5138)
_PLAUSIBLE = (1e8, 1e11)


def time_unit(unit: Any) -> str:
    """`unit` checked to be one of TIME_UNITS; a ValueError naming them otherwise."""
    if unit not in TIME_UNITS:
        raise ValueError(f"timestamp_unit is one of {', '.join(TIME_UNITS)} (what one counts "
                         f"since the epoch), got {unit!r}")
    return unit


def event_time_micros(value: Any, unit: str = "s") -> int:
    """Event time (µs) from a record field: a number (or numeric string) of `unit`s since the
    epoch, an ISO-8601 string, a datetime or date (naive means UTC), a pm.Timestamp, or a
    pyarrow scalar holding one of these. Raises ValueError saying what is wrong."""
    if value is None:
        raise ValueError("is null")
    kind = type(value)
    if kind is float or kind is int:   # a JSON number: before the ABC checks, which cost more
        micros = _number_micros(value, value, unit)
    elif hasattr(value, "as_py") and not isinstance(value, (str, bytes)):
        return event_time_micros(value.as_py(), unit)
    elif isinstance(value, Timestamp):
        micros = value.micros
    elif isinstance(value, bool):
        raise ValueError(f"is a bool ({value!r}), not a time")
    elif isinstance(value, (_dt.datetime, _dt.date)):
        if not isinstance(value, _dt.datetime):
            value = _dt.datetime(value.year, value.month, value.day, tzinfo=_dt.timezone.utc)
        micros = to_micros(value)
    elif isinstance(value, (numbers.Real, decimal.Decimal)):
        micros = _number_micros(value, value, unit)
    elif isinstance(value, str):
        micros = _parse_time_string(value, unit)
    else:
        raise ValueError(f"is a {type(value).__name__} ({value!r}), not {_NAMES[unit]}, an "
                         f"ISO-8601 string or a datetime")
    if not MIN_MICROS < micros < MAX_MICROS:
        raise ValueError(f"{value!r} is out of the range of event time")
    return micros


def _number_micros(number: Any, original: Any, unit: str) -> int:
    num, den = TIME_UNITS[unit]
    # exact int first; a float (a JSON time's usual type) skips the ABC check, which costs
    # more than the rest
    kind = type(number)
    if kind is int or (kind is not float and isinstance(number, numbers.Integral)):
        n = int(number)   # to whole µs toward zero, as the columnar paths divide
        micros = n * num // den if n >= 0 else -(-n * num // den)
        if abs(micros) >= MAX_MICROS:
            raise ValueError(f"{original!r} is out of the range of event time")
        return micros
    x = float(number)
    if not math.isfinite(x):
        raise ValueError(f"is not a finite number ({original!r})")
    if abs(x * num / den) >= MAX_MICROS:
        raise ValueError(f"{original!r} is out of the range of event time")
    return round(x * num / den)


def _parse_time_string(text: str, unit: str) -> int:
    s = text.strip()
    if not s:
        raise ValueError("is an empty string")
    try:
        number: Any = int(s)
    except ValueError:
        try:
            number = float(s)
        except ValueError:
            number = None
    if number is not None:
        return _number_micros(number, text, unit)
    try:
        parsed = _dt.datetime.fromisoformat(s)
    except ValueError:
        raise ValueError(f"{text!r} is neither {_NAMES[unit]} nor an ISO-8601 "
                         f"time") from None
    return to_micros(parsed)


def likely_unit(number: float) -> Optional[str]:
    """The unit in which `number` since the epoch is a plausible time (1973 to 5138), the
    coarsest first; None if none is."""
    for unit, (num, den) in TIME_UNITS.items():
        if _PLAUSIBLE[0] <= abs(number) * num / den / 1e6 < _PLAUSIBLE[1]:
            return unit
    return None


def unit_mismatch(number: Any, unit: str) -> Optional[Tuple[str, str]]:
    """(the unit `number` looks like, what it is read as) when `number` read in `unit` is no
    plausible time but in another unit is; None otherwise (and for non-numbers)."""
    if isinstance(number, bool) or not isinstance(number, (numbers.Real, decimal.Decimal)):
        return None
    x = float(number)
    if not math.isfinite(x):
        return None
    num, den = TIME_UNITS[unit]
    if _PLAUSIBLE[0] <= abs(x) * num / den / 1e6 < _PLAUSIBLE[1]:
        return None
    likely = likely_unit(x)
    if likely is None:
        return None
    seconds = x * num / den / 1e6
    year = 1970 + seconds / 31_556_952
    return likely, f"year {year:,.0f}" if abs(year) >= 1 else "1970"


def warn_other_unit(who: str, field: str, number: Any, unit: str) -> None:
    """Warn (TimeUnitWarning) when a timestamp field's `number` looks like another unit than
    `unit`, naming the field, the value, where it lands and the unit to pass."""
    mismatch = unit_mismatch(number, unit)
    if mismatch is None:
        return
    likely, when = mismatch
    warnings.warn(f"{who}: timestamp field {field!r} holds {number!r}, which read as "
                  f"{_NAMES[unit]} is the {when}; if it counts {_NAMES[likely]}, pass "
                  f"timestamp_unit={likely!r}", TimeUnitWarning, stacklevel=3)
