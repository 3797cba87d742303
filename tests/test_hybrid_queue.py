"""The worklists of partitioned stateful operators (Prasaad et al., Sec. 4, Theorem 4.1): with
items added while workers consume, every item is processed exactly once, each partition's in
the order they were added, and never by two workers at a time; the partitioned baseline keeps
each partition on its one worker."""
from __future__ import annotations

import random
import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

from pomset.runtime.ordered import HybridQueue, PartitionedQueue


class Recorder:
    """`operate` for the queues: records (partition, item, worker) and counts overlaps, two
    workers inside one partition at once."""

    def __init__(self, partitions: int, seed: int) -> None:
        self.done: list = []
        self.inside = [0] * partitions
        self.overlaps = 0
        self.lock = threading.Lock()
        self.rng = random.Random(seed)

    def operate(self, worker: int):
        def op(p: int, item) -> None:
            with self.lock:
                self.inside[p] += 1
                if self.inside[p] > 1:
                    self.overlaps += 1
                pause = self.rng.random() < 0.2
            if pause:
                time.sleep(0.0002)
            with self.lock:
                self.done.append((p, item, worker))
                self.inside[p] -= 1
        return op


def _run(queue_kind: str, items: list, partitions: int, workers: int, seed: int) -> Recorder:
    rec = Recorder(partitions, seed)
    q = (HybridQueue(partitions) if queue_kind == "hybrid"
         else PartitionedQueue(partitions, workers))
    added = threading.Event()

    def consumer(w: int) -> None:
        op = rec.operate(w)
        while True:
            finished = added.is_set()
            if queue_kind == "hybrid":
                q.consume(op)
            else:
                q.consume(w, op)
            if finished:
                return
            time.sleep(0.0001)

    threads = [threading.Thread(target=consumer, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for i, p in enumerate(items):
        q.add(p, i)
        if i % 7 == 0:
            time.sleep(0.0001)
    added.set()
    for t in threads:
        t.join()
    return rec


@settings(max_examples=60, deadline=None)
@given(partitions=st.integers(1, 6), workers=st.integers(1, 4), seed=st.integers(0, 1000),
       kind=st.sampled_from(["hybrid", "partitioned"]), data=st.data())
def test_each_item_once_in_partition_order_one_worker_at_a_time(partitions, workers, seed,
                                                                kind, data):
    items = data.draw(st.lists(st.integers(0, partitions - 1), max_size=120))
    rec = _run(kind, items, partitions, workers, seed)
    assert sorted(i for _, i, _ in rec.done) == list(range(len(items)))
    assert rec.overlaps == 0
    for p in range(partitions):
        mine = [i for q, i, _ in rec.done if q == p]
        assert mine == [i for i, q in enumerate(items) if q == p]
    if kind == "partitioned":
        assert all(w == p % workers for p, _, w in rec.done)


def test_hybrid_workers_share_partitions_under_skew():
    """One hot partition and many cold ones: the cold ones' items spread over both workers,
    while the partitioned baseline leaves each partition to its one worker."""
    items = [0 if i % 2 else 1 + i % 9 for i in range(400)]
    rec = _run("hybrid", items, 10, 2, 0)
    workers_of = {}
    for p, _, w in rec.done:
        workers_of.setdefault(p, set()).add(w)
    assert any(len(ws) == 2 for ws in workers_of.values())


@pytest.mark.parametrize("args", [(0,), (0, 2), (3, 0)])
def test_bad_sizes_are_refused(args):
    with pytest.raises(ValueError):
        HybridQueue(*args) if len(args) == 1 else PartitionedQueue(*args)
