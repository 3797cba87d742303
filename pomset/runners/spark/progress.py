"""The Spark runner's progress: the shared status line (`runtime.progress`) redrawn by a driver
thread that polls Spark (the running stages' tasks done, from the status tracker; a streaming
query's last micro-batch) and the run's counts so far, and the summary at the end. The same
thread has the run's Kafka brokers watched (`kafka_watch`): one that stops answering is warned
of and shown on the line, whether or not the line is drawn; for a query that reads Kafka or a
stream of files, the same thread makes the run's progress record (`runtime.backlog`, from the
query's last progress report: `spark.backlog`) and warns of a backlog that keeps growing."""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional

from ...runtime.backlog import Backlog, Record, status_text
from ...runtime.progress import ProgressLine
from ...sdk.io.kafka_watch import BrokerWatch
from .backlog import QuerySources, last_batch


class SparkProgress:
    """Set `metrics` (the run's counts so far) and, for a streaming run, `query` (and
    `follow` its sources' backlog); `start` and `stop` the polling around the run, then
    `summary`."""

    def __init__(self, spark: Any, quiet: bool, watch: BrokerWatch,
                 interval: float = 0.5) -> None:
        self.line = ProgressLine(quiet, interval=interval)
        self.watch = watch
        self.tracker = spark.sparkContext.statusTracker()
        self.metrics: Callable[[], Dict[str, Any]] = dict
        self.query: Optional[Any] = None
        self.sources: Optional[QuerySources] = None
        self.backlog: Optional[Backlog] = None
        self.busy: List[Any] = [None, 0]
        self.watermark: Callable[[], Optional[int]] = lambda: None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True, name="pomset-progress")

    def start(self) -> None:
        self.watch.start()
        if self.line.enabled or self.watch.clients:
            self._thread.start()

    def follow(self, sources: QuerySources, warn_after: float, busy: List[Any],
               watermark: Callable[[], Optional[int]]) -> None:
        """Make the progress record of the query's `sources` as it runs (`busy`: the id of
        the last micro-batch that read records and how many; `watermark`: the outputs'
        watermark so far)."""
        self.sources, self.busy, self.watermark = sources, busy, watermark
        self.backlog = Backlog(warn_after)
        if not self._thread.is_alive() and self._thread.ident is None:
            self._thread.start()

    def record(self) -> Optional[Record]:
        """The progress record now (None when the run follows no backlog)."""
        if self.backlog is None:
            return None
        last = self.query.lastProgress if self.query is not None else None
        busy = self.busy[0] is not None and self.query is not None
        batch = last_batch(self.query.recentProgress if busy else [], *self.busy)
        return self.backlog.update(self.sources.backlog(last, self.watch.latest),
                                   self.watermark(), *batch)

    def final_record(self) -> Optional[Record]:
        """Stop polling and make the run's last progress record, with the latest offsets
        asked for now."""
        self.stop()
        if self.backlog is None:
            return None
        self.watch.refresh()
        return self.record()

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
            try:
                record = self.record()
            except Exception:   # a progress report read mid-update: next time
                record = None
            if record is not None:
                self.line.status = status_text(record)
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
