"""The local runner's progress: the shared status line (`runtime.progress`) fed from its
stages' metrics as bundles go by, and the summary at the end."""
from __future__ import annotations

from typing import Any, Dict, List, TextIO

from ...runtime.progress import ProgressLine


class Progress:
    """Redraws the status line from the stages' metrics every 64 bundles at most."""

    def __init__(self, stages: List[Any], quiet: bool, stream: TextIO = None, interval: float = 0.5,
                 force: bool = False) -> None:
        self.line = ProgressLine(quiet, stream, interval, force)
        self.stages = stages
        self.calls = 0

    def tick(self) -> None:
        if not self.line.enabled:
            return
        self.calls += 1
        if self.calls % 64 == 0:
            self.line.draw({s.label: s.metrics() for s in self.stages})

    def note(self, text: str) -> None:
        """Show what the run is doing while no records move (the last windows firing)."""
        if self.line.enabled:
            self.line.draw({s.label: s.metrics() for s in self.stages}, note=text, now=True)

    def summary(self, metrics: Dict[str, Dict[str, int]]) -> None:
        self.line.summary(metrics)
