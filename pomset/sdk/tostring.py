"""Beam's `ToString` transforms: each element as a string (whole, an iterable's items
joined, or a key-value pair joined)."""
from __future__ import annotations

from .core import Map


class ToString:
    """Beam's `ToString.Element()`, `.Iterables(delimiter)` and `.Kvs(delimiter)`."""

    @staticmethod
    def Element() -> Map:
        """`str(element)` for each element."""
        return Map(str, label="ToString.Element")

    @staticmethod
    def Iterables(delimiter: str = ",") -> Map:
        """Each iterable element's items, as strings, joined by `delimiter`."""
        return Map(lambda items: delimiter.join(str(i) for i in items),
                   label="ToString.Iterables")

    @staticmethod
    def Kvs(delimiter: str = ",") -> Map:
        """Each (key, value) element as `key<delimiter>value`."""
        return Map(lambda kv: f"{kv[0]}{delimiter}{kv[1]}", label="ToString.Kvs")
