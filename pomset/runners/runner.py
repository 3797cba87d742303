"""Beam's `apache_beam.runners.runner`: the `PipelineResult` a run returns (Beam code
annotates with it), the same on every pomset runner."""
from .._beam_names import missing
from ..sdk.result import PipelineResult

__all__ = ["PipelineResult"]
__getattr__ = missing(__name__, "apache_beam.runners.runner")
