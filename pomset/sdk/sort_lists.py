"""Beam's `testing.util.SortLists`: each element with the lists in it sorted, so a test can
compare grouped values (`(key, [values])`), whose order a grouping does not fix."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .core import Map


def sort_lists(value: Any) -> Any:
    """`value` with each list (and other iterable but a str or bytes) sorted, and the tuples
    and dicts in it gone through the same way."""
    if isinstance(value, list):
        return sorted(value)
    if isinstance(value, tuple):
        return tuple(sort_lists(v) for v in value)
    if isinstance(value, dict):
        return {k: sort_lists(v) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return sorted(value)
    return value


#: the transform: `grouped | SortLists`
SortLists = Map(sort_lists, label="SortLists")
