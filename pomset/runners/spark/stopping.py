"""A streaming query stopped by Ctrl-C or SIGTERM (`runtime.stop`), between two micro-batches.

The signal only marks the stop asked (PySpark's own SIGINT handler, which calls into the JVM
from the handler while the main thread waits on the same py4j connection, is replaced while
the run goes). The driver's main thread waits for the query in short steps; once a stop is
asked it waits for the micro-batch `foreachBatch` is delivering to finish (its Kafka
transaction committed) and for Spark to record it in its commit log, then stops the query
from the Python side. A micro-batch that starts after the stop was asked
fails at once, before it writes anything, so Spark does not commit it and a resumed run runs
it again; py4j's log of that failure is dropped. Spark's JVM ignores SIGINT (PySpark starts it
so), and PySpark's worker daemon runs in a process group of its own, so the terminal's Ctrl-C
reaches neither."""
from __future__ import annotations

import logging
import os
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

from ...runtime.stop import Committed, StopRequest

#: how often the driver looks whether a stop was asked while the query runs (seconds)
_POLL_S = 0.2
#: how long a stop waits for Spark to record the last micro-batch delivered (seconds)
_COMMIT_WAIT_S = 10.0


class StopRequested(Exception):
    """Raised in `foreachBatch` by a micro-batch that starts after a stop was asked."""


class _DropStopRequested(logging.Filter):
    """Drops py4j's log of a callback that raised `StopRequested`."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, StopRequested)


class QueryStop:
    """The Spark side of one query's stop: `batch` around each micro-batch's delivery,
    `wait` for the query."""

    def __init__(self, stop: StopRequest, checkpoint: str) -> None:
        self.stop, self.checkpoint = stop, checkpoint
        self.gate = threading.Lock()   # held while a micro-batch is delivered
        self.delivered: Optional[int] = None   # the last micro-batch delivered

    @contextmanager
    def batch(self, batch_id: int) -> Iterator[None]:
        """Deliver one micro-batch, unless a stop was asked (`StopRequested`)."""
        with self.gate:
            if self.stop.requested:
                raise StopRequested("the run is stopping")
            yield
            self.delivered = batch_id

    def wait(self, query: Any) -> None:
        """Until the query ends, or a stop is asked: then stop it once no micro-batch is
        being delivered."""
        callbacks = logging.getLogger("py4j.clientserver")
        dropped = _DropStopRequested()
        callbacks.addFilter(dropped)
        try:
            while not self.stop.requested:
                try:
                    if query.awaitTermination(_POLL_S):
                        return
                except Exception:
                    if not self.stop.requested:   # a micro-batch refused: the stop under way
                        raise
            with self.gate:   # the micro-batch under way is delivered first
                delivered = self.delivered
            deadline = time.monotonic() + _COMMIT_WAIT_S
            while (delivered is not None and query.isActive and time.monotonic() < deadline
                   and (last_commit(self.checkpoint) or -1) < delivered):
                time.sleep(_POLL_S / 4)
            query.stop()
        finally:
            callbacks.removeFilter(dropped)


def last_commit(checkpoint: str) -> Optional[int]:
    """The last micro-batch Spark's commit log in `checkpoint` records, if any."""
    commits = os.path.join(checkpoint, "commits")
    if not os.path.isdir(commits):
        return None
    return max((int(n) for n in os.listdir(commits) if n.isdigit()), default=None)


def committed(checkpoint: str, resumable: bool, output: Any,
              mark: Callable[[], Optional[int]]) -> Callable[[], Committed]:
    """What the query has committed, for the stop line: its last micro-batch in the
    checkpoint (named when the run can resume from it), and with Kafka output the last
    transaction's id and mark (`mark()`)."""
    def now() -> Committed:
        last = mark() if output is not None else None
        kafka = f"{output.transactional_id} (mark {last})" if last is not None else None
        return Committed("micro-batch", last_commit(checkpoint),
                         checkpoint if resumable else None, kafka)
    return now
