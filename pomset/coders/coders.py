"""Beam's `apache_beam.coders.coders`: the coder classes (pomset.sdk.coders)."""
from __future__ import annotations

from .._beam_names import missing
from ..sdk.coders import (BooleanCoder, BytesCoder, Coder, FastPrimitivesCoder, FloatCoder,
                          GlobalWindowCoder, IntervalWindowCoder, IterableCoder, ListCoder,
                          PickleCoder, StrUtf8Coder, TupleCoder, VarIntCoder)

__all__ = ["BooleanCoder", "BytesCoder", "Coder", "FastPrimitivesCoder", "FloatCoder",
           "GlobalWindowCoder", "IntervalWindowCoder", "IterableCoder", "ListCoder",
           "PickleCoder", "StrUtf8Coder", "TupleCoder", "VarIntCoder"]
__getattr__ = missing(__name__, "apache_beam.coders.coders")
