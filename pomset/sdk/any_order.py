"""Beam's `testing.util.contains_in_any_order`: an expected value that equals any iterable
with the same elements, each as many times, in any order (a grouping's values, say)."""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterable


class InAnyOrder:
    """Equal to an iterable holding the same elements as `items`, in any order."""

    def __init__(self, items: Iterable[Any]) -> None:
        self._counts = Counter(items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, InAnyOrder):
            return self._counts == other._counts
        try:
            return self._counts == Counter(other)  # type: ignore[call-overload]
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(frozenset(self._counts.items()))

    def __repr__(self) -> str:
        return f"InAnyOrder({sorted(self._counts.elements(), key=repr)!r})"


def contains_in_any_order(items: Iterable[Any]) -> InAnyOrder:
    """An expected value for `equal_to` that matches `items` in any order."""
    return InAnyOrder(items)
