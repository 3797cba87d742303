"""Beam's `apache_beam.typehints.typehints`: the hints themselves and their consistency."""
from .._beam_names import missing
from ..sdk.type_hints import TypeVariable
from . import (Any, Collection, Dict, FrozenSet, Generator, Iterable, Iterator, KV, List,
               Mapping, Optional, Sequence, Set, Tuple, Union)
from ..sdk.type_hints import is_consistent_with

__all__ = ["Any", "Collection", "Dict", "FrozenSet", "Generator", "Iterable", "Iterator", "KV",
           "List", "Mapping", "Optional", "Sequence", "Set", "Tuple", "TypeVariable",
           "Union", "is_consistent_with"]
__getattr__ = missing(__name__, "apache_beam.typehints.typehints")
