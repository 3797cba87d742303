"""Beam's `apache_beam.transforms.error_handling`: the ErrorHandler that gathers the dead
letters of several transforms for one consumer."""
from .._beam_names import missing
from ..sdk.error_handler import ErrorHandler

__all__ = ["ErrorHandler"]
__getattr__ = missing(__name__, "apache_beam.transforms.error_handling")
