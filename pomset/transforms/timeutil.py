"""Beam's `apache_beam.transforms.timeutil`: the time domains of timers."""
from .._beam_names import missing
from ..sdk.userstate import TimeDomain

__all__ = ["TimeDomain"]
__getattr__ = missing(__name__, "apache_beam.transforms.timeutil")
