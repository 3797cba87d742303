"""Beam's `apache_beam.utils` package, for the modules of it Beam code imports names from:
`timestamp` and `windowed_value`."""
from . import timestamp, windowed_value

__all__ = ["timestamp", "windowed_value"]
