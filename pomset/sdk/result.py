"""What a run returns, on every runner: the elements each PCollection received, and metrics."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..windowing import Timestamp, now_micros
from .errors import PipelineConstructionError
from .user_metrics import USER, MetricResult, MetricsFilter, Snapshot, query


class MetricResults(dict):
    """Per step, the counts the runner keeps (received, emitted, late, dropped,
    dead-lettered…); `query` gives the user metrics the steps' DoFns updated, as Beam's
    `result.metrics().query()` does."""

    def __init__(self, counts: Dict[str, Dict[str, int]], user: Dict[str, Snapshot]) -> None:
        super().__init__(counts)
        self.user = user

    def query(self, filter: Optional[MetricsFilter] = None) -> Dict[str, List[MetricResult]]:
        """{"counters": [...], "distributions": [...], "gauges": [...]}, each a `MetricResult`
        (its `key.step`, `key.metric.namespace`, `key.metric.name`, `committed`), those
        `filter` matches."""
        return query(self.user, filter)


class PipelineResult:
    """`collect(pcoll)` gives the WindowedValues a PCollection received (in the order the
    runner produced them, where it has one); `collect_timed(pcoll)` gives each with the
    processing time at which it was produced."""

    state = "DONE"

    def __init__(self, record: Dict[int, list], metrics: Dict[str, Dict[str, int]],
                 elapsed: float, times: Optional[Dict[int, List[Tuple[int, int]]]] = None) -> None:
        self._record = record
        self._metrics = {label: {k: v for k, v in counts.items() if k != USER}
                         for label, counts in metrics.items()}
        self._user = {label: counts[USER] for label, counts in metrics.items()
                      if counts.get(USER)}
        self.elapsed = elapsed
        # per PCollection: (index, processing time µs) where the elements from index on were
        # produced at that time; without them, everything at the end of the run
        self._times = times or {}
        self._ended = now_micros()

    def collect(self, pcoll: Any) -> List[Any]:
        """The elements `pcoll` received; it must have been kept by the run (see
        `Pipeline.recorded`), else a `PipelineConstructionError` says how to keep it."""
        try:
            return list(self._record[id(pcoll)])
        except KeyError:
            name = getattr(pcoll, "label", None) or repr(pcoll)
            raise PipelineConstructionError(
                f"PCollection {name!r} was not kept for result.collect: by default a run keeps "
                f"only the PCollections no transform reads (and of those none when a source "
                f"never ends); mark it with .keep() before running, or run with "
                f"--collect=all to keep every one") from None

    def collect_timed(self, pcoll: Any) -> List[Tuple[Timestamp, Any]]:
        """(processing time, element) for each element `collect` gives: the runner's clock
        when it produced the element (a TestStream's own clock when the pipeline has one)."""
        elements = self.collect(pcoll)
        marks = self._times.get(id(pcoll)) or [(0, self._ended)]
        out = []
        for i, (start, pt) in enumerate(marks):
            end = marks[i + 1][0] if i + 1 < len(marks) else len(elements)
            at = Timestamp.from_micros(pt)
            out += [(at, wv) for wv in elements[start:end]]
        return out

    def metrics(self) -> MetricResults:
        """Per stage: elements received and emitted, late, dropped, dead-lettered; and the
        user metrics (`.query()`)."""
        return MetricResults({k: dict(v) for k, v in self._metrics.items()}, self._user)

    def counter(self, name: str) -> int:
        """A metric summed over stages (e.g. 'late', 'dropped', 'dead_lettered')."""
        return sum(m.get(name, 0) for m in self._metrics.values())

    def wait_until_finish(self) -> str:
        return self.state
