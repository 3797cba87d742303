"""Beam's `apache_beam.typehints`: the type hints (`typehints.Tuple[int, str]`, `KV`, `Any`, or
typing's own), `with_input_types`/`with_output_types` decorators and `TypeCheckError`."""
from .._beam_names import missing
from ..sdk.type_hints import (HINT_NAMES, IOTypeHints, TypeCheckError, is_consistent_with,
                              with_input_types, with_output_types)

TypeVariable = HINT_NAMES["TypeVariable"]
Any = HINT_NAMES["Any"]
Union = HINT_NAMES["Union"]
Optional = HINT_NAMES["Optional"]
Tuple = HINT_NAMES["Tuple"]
List = HINT_NAMES["List"]
Dict = HINT_NAMES["Dict"]
Set = HINT_NAMES["Set"]
FrozenSet = HINT_NAMES["FrozenSet"]
Iterable = HINT_NAMES["Iterable"]
Iterator = HINT_NAMES["Iterator"]
Generator = HINT_NAMES["Generator"]
Sequence = HINT_NAMES["Sequence"]
Collection = HINT_NAMES["Collection"]
Mapping = HINT_NAMES["Mapping"]
KV = HINT_NAMES["KV"]

from . import decorators, native_type_compatibility, row_type, typehints  # noqa: E402 (need the above)

__all__ = ["Any", "Collection", "Dict", "FrozenSet", "Generator", "IOTypeHints", "Iterable",
           "Iterator", "KV", "List", "Mapping", "Optional", "Sequence", "Set", "Tuple",
           "TypeCheckError", "TypeVariable", "Union", "decorators", "is_consistent_with",
           "native_type_compatibility", "row_type", "typehints", "with_input_types", "with_output_types"]
__getattr__ = missing(__name__, "apache_beam.typehints")
