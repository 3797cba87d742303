"""Beam's resource hints (`PTransform.with_resource_hints(min_ram=..., accelerator=...)`):
what a transform asks of the machines that run it, by name, each kept by its URN as bytes,
as Beam encodes them. pomset's runners place no work by resources, so the hints are
recorded on the transform (`get_resource_hints()`) and otherwise unused."""
from __future__ import annotations

import re
from typing import Any, Dict, Type

_UNITS = {"": 1, "B": 1, "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12,
          "KIB": 2 ** 10, "MIB": 2 ** 20, "GIB": 2 ** 30, "TIB": 2 ** 40}


class ResourceHint:
    """A kind of resource hint: its `urn`, and how a value given for it becomes bytes
    (`parse`; a string or number as its ASCII text by default). Register one under a name
    with `ResourceHint.register_resource_hint(name, cls)` for `with_resource_hints(name=)`."""

    urn: str = ""
    _by_name: Dict[str, Type["ResourceHint"]] = {}

    @classmethod
    def parse(cls, value: Any) -> Dict[str, bytes]:
        """The hint `value` as {urn: bytes}."""
        if isinstance(value, bytes):
            return {cls.urn: value}
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return {cls.urn: str(value).encode("ascii")}
        raise TypeError(f"{cls.__name__}: a resource hint's value is a string or a number, "
                        f"got {value!r}")

    @staticmethod
    def get_merged_value(outer_value: bytes, inner_value: bytes) -> bytes:
        """The value of a hint set on a composite and on a transform inside it: the inner's."""
        return inner_value

    @staticmethod
    def register_resource_hint(hint_name: str, hint_class: Type["ResourceHint"]) -> None:
        ResourceHint._by_name[hint_name] = hint_class

    @staticmethod
    def is_registered(name: str) -> bool:
        return name in ResourceHint._by_name

    @staticmethod
    def get_by_name(name: str) -> Type["ResourceHint"]:
        try:
            return ResourceHint._by_name[name]
        except KeyError:
            raise ValueError(f"unknown resource hint {name!r}; known: "
                             f"{sorted(ResourceHint._by_name)} (register one with "
                             f"ResourceHint.register_resource_hint)") from None


class AcceleratorHint(ResourceHint):
    """The accelerator a transform wants (`accelerator='type:nvidia-tesla-t4;count:1'`)."""

    urn = "beam:resources:accelerator:v1"


class MinRamHint(ResourceHint):
    """The memory a worker needs: bytes, or a size such as '4GB' or '512MiB'."""

    urn = "beam:resources:min_ram_bytes:v1"

    @classmethod
    def parse(cls, value: Any) -> Dict[str, bytes]:
        return {cls.urn: str(storage_bytes(value)).encode("ascii")}

    @staticmethod
    def get_merged_value(outer_value: bytes, inner_value: bytes) -> bytes:
        return max(outer_value, inner_value, key=int)


class CpuCountHint(ResourceHint):
    """The number of CPUs a worker needs."""

    urn = "beam:resources:cpu_count:v1"

    @classmethod
    def parse(cls, value: Any) -> Dict[str, bytes]:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"cpu_count must be a positive integer, got {value!r}")
        return {cls.urn: str(value).encode("ascii")}


def storage_bytes(value: Any) -> int:
    """A size in bytes: a number of bytes, or a string such as '10GB', '2.5 GiB', '100'."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    match = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", str(value))
    unit = match.group(2).upper() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(f"not a size: {value!r} (a number of bytes, or one with a unit: "
                         f"{', '.join(u for u in _UNITS if u)})")
    return int(float(match.group(1)) * _UNITS[unit])


for _name, _hint in (("accelerator", AcceleratorHint), ("min_ram", MinRamHint),
                     ("cpu_count", CpuCountHint)):
    ResourceHint.register_resource_hint(_name, _hint)


def parse_resource_hints(hints: Dict[str, Any]) -> Dict[str, bytes]:
    """`with_resource_hints`'s keyword arguments as {urn: bytes}."""
    parsed: Dict[str, bytes] = {}
    for name, value in hints.items():
        parsed.update(ResourceHint.get_by_name(name).parse(value))
    return parsed
