"""Beam's `apache_beam.runners.direct.direct_runner`: `DirectRunner` and its variants, each a
runner object that runs a pipeline on pomset's local runner (Beam's tests pin them)."""
from ..._beam_names import missing
from ...sdk.runners import BeamRunnerAlias


class DirectRunner(BeamRunnerAlias):
    """Beam's DirectRunner: pomset's local runner."""


class BundleBasedDirectRunner(DirectRunner):
    """Beam's bundle-based DirectRunner: pomset's local runner."""


class SwitchingDirectRunner(DirectRunner):
    """Beam's DirectRunner that picks its engine: pomset's local runner."""


__all__ = ["BundleBasedDirectRunner", "DirectRunner", "SwitchingDirectRunner"]
__getattr__ = missing(__name__, "apache_beam.runners.direct.direct_runner")
