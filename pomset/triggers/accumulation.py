"""How a window's successive panes relate: discarding, accumulating, or accumulating and retracting."""
from __future__ import annotations

import enum


class AccumulationMode(enum.Enum):
    """DISCARDING: each pane holds what arrived since the last; ACCUMULATING: all so far;
    RETRACTING: all so far, preceded by a retraction (diff=-1) of the window's previous pane."""

    DISCARDING = "DISCARDING"
    ACCUMULATING = "ACCUMULATING"
    RETRACTING = "RETRACTING"
