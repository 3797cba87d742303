"""Worklists of a partitioned stateful operator (Prasaad et al., Sec. 4): items of many
partitions, each partition's items processed in the order they were added, never by two
workers at once.

`HybridQueue` is the paper's scheme (Fig. 7): one queue per partition holds the items, a
master queue holds their partitions in arrival order, and a count per partition says how many
of its items are waiting for the worker that owns it. A worker takes the next partition from
the master queue; if nobody owns that partition the worker owns it and processes its items
until the count falls to zero, else it delegates the item to the owner (the count goes up)
and moves on, so no worker ever waits for another. `PartitionedQueue` is the baseline the
paper measures it against: each partition belongs to one worker for good (Volcano's
exchange), so a hot partition's worker lags while the others idle.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable, List

#: `operate(partition, item)`; it must not raise (a consumer that stops half-way leaves the
#: partition owned), so callers catch and record errors inside it
Operate = Callable[[int, Any], None]


class HybridQueue:
    """Items in `partitions` partitions, consumed by any number of workers at once."""

    def __init__(self, partitions: int) -> None:
        if partitions < 1:
            raise ValueError(f"a hybrid queue needs at least one partition, got {partitions}")
        self.partitions = partitions
        self._queues = [deque() for _ in range(partitions)]
        self._master: deque = deque()
        self._count = [0] * partitions
        self._lock = threading.Lock()   # stands for the paper's atomic fetch_add/fetch_sub

    def add(self, partition: int, item: Any) -> None:
        """Add an item (the paper's addInput): after every item added to `partition` before."""
        self._queues[partition].append(item)
        self._master.append(partition)

    def consume(self, operate: Operate) -> int:
        """Process items until the master queue is empty (consumeInputs); returns how many
        this worker processed, its own and those delegated to it."""
        master, queues, count, lock = self._master, self._queues, self._count, self._lock
        done = 0
        while True:
            try:
                p = master.popleft()
            except IndexError:
                return done
            with lock:
                owned = count[p] == 0
                count[p] += 1
            if not owned:
                continue   # the owner processes this item too
            queue = queues[p]
            while True:
                operate(p, queue.popleft())
                done += 1
                with lock:
                    count[p] -= 1
                    more = count[p] > 0
                if not more:
                    break


class PartitionedQueue:
    """Items in `partitions` partitions, partition p consumed only by worker p % workers."""

    def __init__(self, partitions: int, workers: int) -> None:
        if partitions < 1 or workers < 1:
            raise ValueError(f"a partitioned queue needs partitions and workers, got "
                             f"{partitions} and {workers}")
        self.partitions = partitions
        self.workers = workers
        self._queues: List[deque] = [deque() for _ in range(workers)]

    def add(self, partition: int, item: Any) -> None:
        self._queues[partition % self.workers].append((partition, item))

    def consume(self, worker: int, operate: Operate) -> int:
        """Process worker `worker`'s items until its queue is empty; returns how many."""
        queue = self._queues[worker]
        done = 0
        while True:
            try:
                p, item = queue.popleft()
            except IndexError:
                return done
            operate(p, item)
            done += 1
