"""Beam's `apache_beam.typehints.row_type`: the type of rows with named, typed fields."""
from .._beam_names import missing
from ..sdk.row_type import RowTypeConstraint

__all__ = ["RowTypeConstraint"]
__getattr__ = missing(__name__, "apache_beam.typehints.row_type")
