"""Beam's `apache_beam.typehints.decorators`: the type-hint decorators and what they record."""
from .._beam_names import missing
from ..sdk.type_hints import IOTypeHints, TypeCheckError, with_input_types, with_output_types

__all__ = ["IOTypeHints", "TypeCheckError", "with_input_types", "with_output_types"]
__getattr__ = missing(__name__, "apache_beam.typehints.decorators")
