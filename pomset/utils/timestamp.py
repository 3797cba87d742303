"""Beam's `apache_beam.utils.timestamp`: `Timestamp`, `Duration` and the ends of time."""
from .._beam_names import missing
from ..windowing import MAX_TIMESTAMP, MIN_TIMESTAMP, Duration, Timestamp

__all__ = ["Duration", "MAX_TIMESTAMP", "MIN_TIMESTAMP", "Timestamp"]
__getattr__ = missing(__name__, "apache_beam.utils.timestamp")
