"""Beam's `apache_beam.options` package: `pomset.options.pipeline_options`."""
from . import pipeline_options
from .pipeline_options import (GoogleCloudOptions, PipelineOptions, SetupOptions,
                               StandardOptions, TypeOptions)

__all__ = ["GoogleCloudOptions", "PipelineOptions", "SetupOptions", "StandardOptions",
           "TypeOptions", "pipeline_options"]
