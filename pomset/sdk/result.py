"""What a run returns, on every runner: the elements each PCollection received, and metrics."""
from __future__ import annotations

from typing import Any, Dict, List

from .errors import PipelineConstructionError


class PipelineResult:
    """`collect(pcoll)` gives the WindowedValues a PCollection received (in the order the
    runner produced them, where it has one)."""

    state = "DONE"

    def __init__(self, record: Dict[int, list], metrics: Dict[str, Dict[str, int]],
                 elapsed: float) -> None:
        self._record = record
        self._metrics = metrics
        self.elapsed = elapsed

    def collect(self, pcoll: Any) -> List[Any]:
        try:
            return list(self._record[id(pcoll)])
        except KeyError:
            raise PipelineConstructionError(
                f"{pcoll!r} was not recorded: run with --collect=all to collect intermediate "
                f"PCollections") from None

    def metrics(self) -> Dict[str, Dict[str, int]]:
        """Per stage: elements received and emitted, late, dropped, dead-lettered."""
        return {k: dict(v) for k, v in self._metrics.items()}

    def counter(self, name: str) -> int:
        """A metric summed over stages (e.g. 'late', 'dropped', 'dead_lettered')."""
        return sum(m.get(name, 0) for m in self._metrics.values())

    def wait_until_finish(self) -> str:
        return self.state
