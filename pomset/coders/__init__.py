"""Beam's `apache_beam.coders` names that pipeline code passes around, above all to state specs
(`BagStateSpec("buffer", VarIntCoder())`), and `coders.registry`; the implementations are in
pomset.sdk.coders."""
from __future__ import annotations

from .._beam_names import missing
from ..sdk.coders import (BooleanCoder, BytesCoder, Coder, FastPrimitivesCoder, FloatCoder,
                          GlobalWindowCoder, IntervalWindowCoder, IterableCoder, ListCoder,
                          PickleCoder, StrUtf8Coder, TupleCoder, VarIntCoder, registry)
from . import coders, typecoders

__all__ = ["BooleanCoder", "BytesCoder", "Coder", "FastPrimitivesCoder", "FloatCoder",
           "GlobalWindowCoder", "IntervalWindowCoder", "IterableCoder", "ListCoder", "PickleCoder",
           "StrUtf8Coder", "TupleCoder", "VarIntCoder", "coders", "registry", "typecoders"]
__getattr__ = missing(__name__, "apache_beam.coders")
