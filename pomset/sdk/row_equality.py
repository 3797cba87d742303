"""Beam's `row_namedtuple_equals_fn`: a Row and a NamedTuple with the same fields and values
are equal, for `equal_to(..., equals_fn=)` on schema'd PCollections."""
from __future__ import annotations

from typing import Any, Dict, Optional

from .schema import Row


def _fields(value: Any) -> Optional[Dict[str, Any]]:
    if isinstance(value, Row):
        return dict(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return value._asdict()
    return None


def row_namedtuple_equals_fn(expected: Any, actual: Any) -> bool:
    """Whether `expected` and `actual` are equal, a Row and a NamedTuple (at any depth) being
    equal when they have the same field names with equal values; other values by `==`."""
    want, got = _fields(expected), _fields(actual)
    if want is None and got is None:
        return bool(expected == actual)
    if want is None or got is None or list(want) != list(got):
        return False
    return all(row_namedtuple_equals_fn(want[k], got[k]) for k in want)
