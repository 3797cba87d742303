"""The local runner's progress: the shared status line (`runtime.progress`) fed from its
stages' metrics as bundles go by, with the share read of each source whose size is known,
and the summary at the end."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, TextIO, Tuple

from ...runtime.plan import READ
from ...runtime.progress import ProgressLine, Reads
from ...sdk.io.meter import ReadMeter
from .files import FileStreamStage
from .kafka import KafkaSourceStage
from .stages import SourceStage

ReadProgress = Callable[[], Optional[Tuple[int, int]]]


class Progress:
    """Redraws the status line from the stages' metrics every 64 bundles at most."""

    def __init__(self, stages: List[Any], quiet: bool, stream: TextIO = None, interval: float = 0.5,
                 force: bool = False) -> None:
        self.line = ProgressLine(quiet, stream, interval, force)
        self.stages = stages
        self.calls = 0
        self.metered: List[Any] = []
        self.sources: Dict[str, ReadProgress] = {}
        if self.line.enabled:
            for s in stages:
                if isinstance(s, SourceStage):
                    read = self._read_progress(s)
                    if read is not None:
                        self.sources[s.label] = read

    def _read_progress(self, stage: SourceStage) -> Optional[ReadProgress]:
        """How to ask a source how far its read has got, where its size is known: a bounded
        Kafka read its offsets, a `Create` its elements, a file source read as batch the
        meter put on it."""
        t = stage.node.transform
        if isinstance(stage, KafkaSourceStage):
            return stage.progress
        if isinstance(stage, FileStreamStage):   # its files are not all there at the start
            return None
        if stage.node.kind != READ:
            return None
        if stage.node.makes_bundles:
            count = t.element_count()
            return None if count is None else (lambda: (stage.read_count, count))
        t.meter = ReadMeter.of(t)
        self.metered.append(t)
        return t.meter.progress

    def _reads(self) -> Reads:
        reads = {label: read() for label, read in self.sources.items()}
        return {label: r for label, r in reads.items() if r is not None}

    def tick(self) -> None:
        if not self.line.enabled:
            return
        self.calls += 1
        if self.calls % 64 == 0:
            self.line.draw({s.label: s.metrics() for s in self.stages}, reads=self._reads())

    def note(self, text: str) -> None:
        """Show what the run is doing while no records move (the last windows firing)."""
        if self.line.enabled:
            self.line.draw({s.label: s.metrics() for s in self.stages}, note=text, now=True,
                           reads=self._reads())

    def status(self, text: str) -> None:
        """Show a streaming run's progress (`backlog.status_text`) on every line from now on,
        starting with this one: a run waiting for records draws it all the same."""
        if self.line.enabled:
            self.line.status = text
            self.line.draw({s.label: s.metrics() for s in self.stages}, reads=self._reads())

    def close(self) -> None:
        """Take the meters off the file sources: their read is over, however it ended."""
        for t in self.metered:
            t.meter = None
        self.metered.clear()

    def summary(self, metrics: Dict[str, Dict[str, int]]) -> None:
        self.line.summary(metrics)
