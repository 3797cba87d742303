"""Beam's `apache_beam.pvalue` (`beam.pvalue`) names: PCollection, side-input views, tagged
outputs, Row."""
from ._beam_names import missing
from .sdk.dofn import TaggedOutput
from .sdk.pvalue import (AsDict, AsIter, AsList, AsSingleton, EmptySideInput, PBegin,
                         PCollection, PValue)
from .sdk.schema import Row

__all__ = ["AsDict", "AsIter", "AsList", "AsSingleton", "EmptySideInput", "PBegin", "PCollection",
           "PValue", "Row", "TaggedOutput"]
__getattr__ = missing(__name__, "apache_beam.pvalue")
