"""Beam's `apache_beam.options.pipeline_options`: `PipelineOptions`, and the views Beam code
asks for with `options.view_as(...)`. pomset's flags are all on `PipelineOptions` (`--runner`,
`--streaming`, `--save_main_session`, `--allow_unsafe_triggers`, `--temp_location`,
`--project`, ...), so each view is a view of them."""
from __future__ import annotations

from .._beam_names import missing
from ..sdk.options import PipelineOptions


class StandardOptions(PipelineOptions):
    """Beam's `StandardOptions` (`runner`, `streaming`): pomset's own flags."""


class SetupOptions(PipelineOptions):
    """Beam's `SetupOptions` (`save_main_session`): pomset's own flags."""


class TypeOptions(PipelineOptions):
    """Beam's `TypeOptions` (`pipeline_type_check`, `runtime_type_check`,
    `performance_runtime_type_check`, `type_check_strictness`, `allow_unsafe_triggers`):
    pomset's own flags."""


class GoogleCloudOptions(PipelineOptions):
    """Beam's `GoogleCloudOptions` (`project`, `region`, `job_name`, `temp_location`,
    `staging_location`, `service_account_email`): flags pomset accepts so Beam code that
    passes or reads them runs (`project` is None unless given), and has no use for but
    `temp_location`, a local directory where the local runner spills large groupings: it runs
    nothing on Google Cloud, and a pipeline that would reach it fails where it uses the IO
    that would (`beam.io.WriteToBigQuery`, ...), naming it."""


__all__ = ["GoogleCloudOptions", "PipelineOptions", "SetupOptions", "StandardOptions",
           "TypeOptions"]
__getattr__ = missing(__name__, "apache_beam.options.pipeline_options")
