"""Beam's `apache_beam.transforms.trigger`: the names of `pomset.trigger`."""
from ..trigger import *  # noqa: F401,F403
from ..trigger import __all__, __getattr__  # noqa: F401
