"""Beam's `apache_beam.transforms.combiners`: the names of `pomset.combiners`."""
from ..combiners import *  # noqa: F401,F403
from ..combiners import __all__, __getattr__  # noqa: F401
