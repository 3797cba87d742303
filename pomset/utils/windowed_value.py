"""Beam's `apache_beam.utils.windowed_value`: `WindowedValue`, `PaneInfo` and the pane timings
(`PaneInfoTiming`, pomset's `PaneTiming`)."""
from .._beam_names import missing
from ..windowing import PaneInfo, PaneTiming, WindowedValue

#: Beam's name for the timing of a pane (EARLY, ON_TIME, LATE, UNKNOWN)
PaneInfoTiming = PaneTiming

__all__ = ["PaneInfo", "PaneInfoTiming", "WindowedValue"]
__getattr__ = missing(__name__, "apache_beam.utils.windowed_value")
