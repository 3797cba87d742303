"""Beam's `apache_beam.typehints.native_type_compatibility`: a hint in the spelling pomset
checks with (typing's: `tuple[int, str]` is `typing.Tuple[int, str]`)."""
from typing import Any, List, Sequence

from .._beam_names import missing
from ..sdk.type_hints import to_typing


def convert_to_beam_type(hint: Any) -> Any:
    """`hint` as pomset's type check spells it (typing's generics)."""
    return to_typing(hint)


def convert_to_beam_types(hints: Sequence[Any]) -> List[Any]:
    """Each of `hints` as pomset's type check spells it."""
    return [to_typing(h) for h in hints]


__all__ = ["convert_to_beam_type", "convert_to_beam_types"]
__getattr__ = missing(__name__, "apache_beam.typehints.native_type_compatibility")
