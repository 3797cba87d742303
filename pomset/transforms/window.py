"""Beam's `apache_beam.transforms.window`: the names of `pomset.window`."""
from ..window import *  # noqa: F401,F403
from ..window import __all__, __getattr__  # noqa: F401
