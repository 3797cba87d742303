"""Beam's `apache_beam.transforms.ptransform`: the PTransform base class and the
`ptransform_fn` decorator."""
from .._beam_names import missing
from ..sdk.ptransform import PTransform, ptransform_fn

__all__ = ["PTransform", "ptransform_fn"]
__getattr__ = missing(__name__, "apache_beam.transforms.ptransform")
