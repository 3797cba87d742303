"""Beam's `apache_beam.options.pipeline_options`: `PipelineOptions`, and the views Beam code
asks for with `options.view_as(...)`. pomset's flags are all on `PipelineOptions` (`--runner`,
`--streaming`, `--save_main_session`, ...), so `StandardOptions` and `SetupOptions` are views
of them."""
from __future__ import annotations

from .._beam_names import missing
from ..sdk.options import PipelineOptions


class StandardOptions(PipelineOptions):
    """Beam's `StandardOptions` (`runner`, `streaming`): pomset's own flags."""


class SetupOptions(PipelineOptions):
    """Beam's `SetupOptions` (`save_main_session`): pomset's own flags."""


__all__ = ["PipelineOptions", "SetupOptions", "StandardOptions"]
__getattr__ = missing(__name__, "apache_beam.options.pipeline_options")
