"""What little the SDK knows about element types: key-value, not key-value, or unknown."""
from __future__ import annotations

import inspect
import typing
from typing import Any, Callable, Iterable, Optional

KV = "kv"
NOT_KV = "not-kv"
UNKNOWN = None


def kind_of_values(values: Iterable[Any]) -> Optional[str]:
    """KV when every value is a 2-tuple, NOT_KV when some value is not one."""
    seen = False
    for v in values:
        seen = True
        if not (isinstance(v, tuple) and len(v) == 2):
            return NOT_KV
    return KV if seen else UNKNOWN


def kind_of_type(tp: Any) -> Optional[str]:
    """Kind from a type hint: tuple[K, V] and Tuple[K, V] are KV; plain scalars are not."""
    if tp is inspect.Signature.empty or tp is None or tp is Any:
        return UNKNOWN
    origin = typing.get_origin(tp)
    if origin is tuple:
        args = typing.get_args(tp)
        return KV if len(args) == 2 and args[1] is not Ellipsis else NOT_KV
    if tp in (int, float, str, bytes, bool, dict, list, set):
        return NOT_KV
    return UNKNOWN


def kind_of_return(fn: Callable) -> Optional[str]:
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        return UNKNOWN
    return kind_of_type(hints.get("return", inspect.Signature.empty))


def element_kind(fn: Callable) -> Optional[str]:
    """Kind of what a FlatMap function yields, from an Iterable[...] return hint."""
    try:
        ret = typing.get_type_hints(fn).get("return")
    except Exception:
        return UNKNOWN
    args = typing.get_args(ret) if ret is not None else ()
    return kind_of_type(args[0]) if len(args) == 1 else UNKNOWN
