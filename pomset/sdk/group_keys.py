"""The key a `GroupBy` without aggregations gives its groups, as Beam's: one key field's value
as it is; several (or any, with `force_tuple_keys`) as a named tuple of the key fields, whose
`_fields` name them."""
from __future__ import annotations

from collections import namedtuple
from typing import Any, Dict, List, Sequence, Tuple

_KEY_TYPES: Dict[Tuple[str, ...], type] = {}


def _key(names: Tuple[str, ...], values: Tuple[Any, ...]) -> Any:
    """A key of the named tuple type of `names` (what a pickled key is remade by)."""
    return key_type(names)(*values)


def key_type(names: Sequence[str]) -> type:
    """The named tuple type `Key` of these key fields, one per set of names; it pickles as its
    names and values, so a key made on one worker is remade on another."""
    names = tuple(names)
    made = _KEY_TYPES.get(names)
    if made is None:
        base = namedtuple("Key", names, rename=True)  # type: ignore[misc]
        made = type("Key", (base,), {"__slots__": (), "__reduce__": lambda self: (
            _key, (names, tuple(self)))})
        _KEY_TYPES[names] = made
    return made


def group_key(names: Sequence[str], values: Sequence[Any], force_tuple: bool = False) -> Any:
    """The key of a row whose key fields `names` have `values`."""
    if len(names) == 1 and not force_tuple:
        return values[0]
    return key_type(names)(*values)


def group_keys(names: Sequence[str], columns: List[List[Any]]) -> List[Any]:
    """`group_key` of each row, the key fields given as columns (a columnar runner's)."""
    if len(names) == 1:
        return columns[0]
    make = key_type(names)
    return [make(*values) for values in zip(*columns)]
