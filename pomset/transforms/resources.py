"""Beam's `apache_beam.transforms.resources`: resource hints, recorded on the transforms
that set them (`with_resource_hints`)."""
from .._beam_names import missing
from ..sdk.resource_hints import (AcceleratorHint, CpuCountHint, MinRamHint, ResourceHint,
                                  parse_resource_hints)

__all__ = ["AcceleratorHint", "CpuCountHint", "MinRamHint", "ResourceHint",
           "parse_resource_hints"]
__getattr__ = missing(__name__, "apache_beam.transforms.resources")
