"""Beam's `apache_beam.utils.windowed_value`: `WindowedValue`, `PaneInfo` and the pane timings
(`PaneInfoTiming`, pomset's `PaneTiming`)."""
from .._beam_names import missing
from ..windowing import NO_FIRING, PaneInfo, PaneTiming, WindowedValue

#: Beam's name for the timing of a pane (EARLY, ON_TIME, LATE, UNKNOWN)
PaneInfoTiming = PaneTiming
#: Beam's name for the pane of an element no grouping has fired (first, last, UNKNOWN)
PANE_INFO_UNKNOWN = NO_FIRING

__all__ = ["PANE_INFO_UNKNOWN", "PaneInfo", "PaneInfoTiming", "WindowedValue"]
__getattr__ = missing(__name__, "apache_beam.utils.windowed_value")
