"""Beam's `beam.core`: `apache_beam.transforms.core` as Beam's top-level package exposes it,
the names of pomset.transforms.core."""
from .transforms.core import *  # noqa: F401,F403
from .transforms.core import __all__, __getattr__  # noqa: F401
