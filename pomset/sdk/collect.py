"""Beam's `combiners.ToList()`, `ToDict()`, `ToSet()`: transforms that gather a window's
elements into one list, dict (of (key, value) elements) or set."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

from .combinefn import CombineFn, K, T, V, ToDict as ToDictCombineFn, ToList as ToListCombineFn
from .combinefn import ToSet as ToSetCombineFn
from .core import CombineGlobally, CombinePerKey
from .type_hints import with_input_types, with_output_types


class _Gather(CombineGlobally):
    """CombineGlobally of a fixed CombineFn; `PerKey()` gathers per key instead."""

    fn_class: type = CombineFn

    def __init__(self, label: Optional[str] = None) -> None:
        super().__init__(self.fn_class(), label=label)

    def default_label(self) -> str:
        return type(self).__name__

    @classmethod
    def Globally(cls, label: Optional[str] = None) -> "_Gather":
        return cls(label)

    @classmethod
    def PerKey(cls) -> Any:
        return CombinePerKey(cls.fn_class())


@with_input_types(T)
@with_output_types(List[T])
class ToList(_Gather):
    """A window's elements, as one list."""

    fn_class = ToListCombineFn


@with_input_types(Tuple[K, V])
@with_output_types(Dict[K, V])
class ToDict(_Gather):
    """A window's (key, value) elements, as one dict."""

    fn_class = ToDictCombineFn


@with_input_types(T)
@with_output_types(Set[T])
class ToSet(_Gather):
    """A window's distinct elements, as one set."""

    fn_class = ToSetCombineFn
