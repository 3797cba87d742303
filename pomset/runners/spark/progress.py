"""The Spark runner's progress: the shared status line (`runtime.progress`) redrawn by a driver
thread that polls Spark (the running stages' tasks done, from the status tracker; a streaming
query's last micro-batch) and the run's counts so far, and the summary at the end. The same
thread has the run's Kafka brokers watched (`kafka_watch`): one that stops answering is warned
of and shown on the line, whether or not the line is drawn."""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Optional

from ...runtime.progress import ProgressLine
from ...sdk.io.kafka_watch import BrokerWatch


class SparkProgress:
    """Set `metrics` (the run's counts so far) and, for a streaming run, `query`; `start` and
    `stop` the polling around the run, then `summary`."""

    def __init__(self, spark: Any, quiet: bool, watch: BrokerWatch,
                 interval: float = 0.5) -> None:
        self.line = ProgressLine(quiet, interval=interval)
        self.watch = watch
        self.tracker = spark.sparkContext.statusTracker()
        self.metrics: Callable[[], Dict[str, Any]] = dict
        self.query: Optional[Any] = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True, name="pomset-progress")

    def start(self) -> None:
        self.watch.start()
        if self.line.enabled or self.watch.clients:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.watch.stop()

    def summary(self, metrics: Dict[str, Dict[str, int]]) -> None:
        self.line.summary(metrics)

    def _poll(self) -> None:
        while not self._stop.wait(self.line.interval):
            stalled = self.watch.check()
            if not self.line.enabled:
                continue
            try:
                self.line.draw(self.metrics(), " ".join(filter(None, (stalled, self._note()))))
            except Exception:   # a count read mid-update, a query not started: next time
                continue

    def _note(self) -> str:
        """Spark's side: tasks done in the running stages; a query's micro-batches so far."""
        stages = [self.tracker.getStageInfo(s) for s in self.tracker.getActiveStageIds()]
        stages = [s for s in stages if s is not None]
        note = (f"tasks {sum(s.numCompletedTasks for s in stages)}/"
                f"{sum(s.numTasks for s in stages)}" if stages else "")
        last = self.query.lastProgress if self.query is not None else None
        if last:
            note += f" micro-batch {last['batchId']} ({last['numInputRows']} rows)"
        return note.strip()
