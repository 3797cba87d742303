"""Beam's `apache_beam.coders.typecoders`: the registry of a coder per Python type
(pomset.sdk.coders)."""
from __future__ import annotations

from .._beam_names import missing
from ..sdk.coders import CoderRegistry, registry

__all__ = ["CoderRegistry", "registry"]
__getattr__ = missing(__name__, "apache_beam.coders.typecoders")
