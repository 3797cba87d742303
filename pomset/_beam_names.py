"""What a Beam name that pomset lacks answers: an AttributeError that names the Beam feature,
so a ported pipeline fails where it uses it, saying what is missing, not with a bare
`has no attribute`."""
from __future__ import annotations

from typing import Any, Callable


def missing(module: str, beam_module: str) -> Callable[[str], Any]:
    """A module `__getattr__` for `module`, whose names mirror Beam's `beam_module`."""
    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"{module} has no {name!r}: pomset does not support Beam's "
                             f"{beam_module}.{name} (docs/migrating-from-beam.md lists "
                             f"what it supports)")
    return __getattr__
