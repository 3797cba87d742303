"""Coders: each encodes and decodes values of its type (with pickle where Beam has a wire
format of its own: the bytes are not Beam's). pomset keeps elements and state as Python
values, so a coder given to a state spec is accepted and not used; the registry maps a type to
the coder Beam code registers for it."""
from __future__ import annotations

import pickle
import struct
from typing import Any, Dict, Sequence, Type

from ..windowing import GLOBAL_WINDOW, GlobalWindow, IntervalWindow


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


class IntervalWindowCoder(Coder):
    """IntervalWindows, as their start and end in µs (two big-endian signed 64-bit ints)."""

    _LAYOUT = struct.Struct(">qq")

    def encode(self, value: IntervalWindow) -> bytes:
        return self._LAYOUT.pack(value.start_us, value.max_ts + 1)

    def decode(self, encoded: bytes) -> IntervalWindow:
        return IntervalWindow.from_micros(*self._LAYOUT.unpack(encoded))


class GlobalWindowCoder(Coder):
    """The global window, as no bytes (there is only one)."""

    def encode(self, value: GlobalWindow) -> bytes:
        return b""

    def decode(self, encoded: bytes) -> GlobalWindow:
        return GLOBAL_WINDOW


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


class CoderRegistry:
    """Beam's `coders.registry`: the coder registered for a Python type, for code that asks
    for it; a type with none gets FastPrimitivesCoder, as in Beam."""

    def __init__(self) -> None:
        self._coders: Dict[type, Type[Coder]] = {}

    def register_coder(self, typehint_type: type, typehint_coder_class: Type[Coder]) -> None:
        """Use `typehint_coder_class` for values of `typehint_type`."""
        coder = typehint_coder_class
        if not (isinstance(coder, type) and issubclass(coder, Coder)):
            raise TypeError(f"register_coder takes a Coder subclass, got {typehint_coder_class!r}")
        self._coders[typehint_type] = coder

    def get_coder(self, typehint: Any) -> Coder:
        """A coder for values of `typehint`: the registered one, else FastPrimitivesCoder."""
        if isinstance(typehint, type):
            for cls in typehint.__mro__:
                if cls in self._coders:
                    return self._coders[cls]()
        return FastPrimitivesCoder()


registry = CoderRegistry()
