"""Beam's `apache_beam.pipeline` module: `Pipeline` and the `PipelineOptions` it takes
(pomset.sdk.pipeline, pomset.options)."""
from ._beam_names import missing
from .options.pipeline_options import PipelineOptions
from .sdk.overrides import AppliedPTransform, PipelineVisitor, PTransformOverride
from .sdk.pipeline import Pipeline

__all__ = ["AppliedPTransform", "Pipeline", "PipelineOptions", "PipelineVisitor",
           "PTransformOverride"]
__getattr__ = missing(__name__, "apache_beam.pipeline")
