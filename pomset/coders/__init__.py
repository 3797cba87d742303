"""Beam's `apache_beam.coders` names that pipeline code passes around, above all to state specs
(`BagStateSpec("buffer", VarIntCoder())`): pomset keeps elements and state as Python values,
so a coder given there is accepted and not used. Each still encodes and decodes values of its
type, for code that calls it (with pickle where Beam has a wire format of its own: the bytes
are not Beam's)."""
from __future__ import annotations

import pickle
from typing import Any, Sequence

from .._beam_names import missing


class Coder:
    """Encodes values to bytes and back."""

    def encode(self, value: Any) -> bytes:
        return pickle.dumps(value, protocol=5)

    def decode(self, encoded: bytes) -> Any:
        return pickle.loads(encoded)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class BytesCoder(Coder):
    def encode(self, value: bytes) -> bytes:
        return bytes(value)

    def decode(self, encoded: bytes) -> bytes:
        return encoded


class StrUtf8Coder(Coder):
    def encode(self, value: str) -> bytes:
        return value.encode("utf-8")

    def decode(self, encoded: bytes) -> str:
        return encoded.decode("utf-8")


class VarIntCoder(Coder):
    """Integers, as a signed LEB128 varint."""

    def encode(self, value: int) -> bytes:
        n = value & (2 ** 64 - 1)
        out = bytearray()
        while True:
            byte, n = n & 0x7F, n >> 7
            out.append(byte | (0x80 if n else 0))
            if not n:
                return bytes(out)

    def decode(self, encoded: bytes) -> int:
        n = shift = 0
        for byte in encoded:
            n |= (byte & 0x7F) << shift
            shift += 7
        return n - 2 ** 64 if n >= 2 ** 63 else n


class FloatCoder(Coder):
    pass


class BooleanCoder(Coder):
    pass


class PickleCoder(Coder):
    pass


class FastPrimitivesCoder(Coder):
    pass


class _Composite(Coder):
    def __init__(self, *components: Any) -> None:
        self.components = components


class ListCoder(_Composite):
    def __init__(self, elem_coder: Coder) -> None:
        super().__init__(elem_coder)


class IterableCoder(ListCoder):
    pass


class TupleCoder(_Composite):
    def __init__(self, components: Sequence[Coder]) -> None:
        super().__init__(*components)


__all__ = ["BooleanCoder", "BytesCoder", "Coder", "FastPrimitivesCoder", "FloatCoder",
           "IterableCoder", "ListCoder", "PickleCoder", "StrUtf8Coder", "TupleCoder",
           "VarIntCoder"]
__getattr__ = missing(__name__, "apache_beam.coders")
