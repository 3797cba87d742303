"""Beam's `apache_beam.options` package: `pomset.options.pipeline_options`."""
from . import pipeline_options
from .pipeline_options import PipelineOptions, SetupOptions, StandardOptions

__all__ = ["PipelineOptions", "SetupOptions", "StandardOptions", "pipeline_options"]
