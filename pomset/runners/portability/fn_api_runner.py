"""Beam's `apache_beam.runners.portability.fn_api_runner`: `FnApiRunner`, a runner object
that runs a pipeline on pomset's local runner (Beam's tests pin it)."""
from ..._beam_names import missing
from ...sdk.runners import BeamRunnerAlias


class FnApiRunner(BeamRunnerAlias):
    """Beam's in-process portable runner: pomset's local runner."""


__all__ = ["FnApiRunner"]
__getattr__ = missing(__name__, "apache_beam.runners.portability.fn_api_runner")
