"""The reorder buffers of the ordered-parallel core (Prasaad et al., Sec. 3): whatever order
workers finish their units in, and whatever the ring's size, outputs 1..n leave exactly once
and in order, and never two senders at a time."""
from __future__ import annotations

import random
import threading
import time

from hypothesis import given, settings, strategies as st

from pomset.runtime.ordered import LockedReorder, NonBlockingReorder


class Downstream:
    """Records what is sent, and fails the test if two threads send at once."""

    def __init__(self) -> None:
        self.sent: list = []
        self.inside = 0
        self.overlaps = 0
        self.lock = threading.Lock()

    def __call__(self, output) -> None:
        with self.lock:
            self.inside += 1
            if self.inside > 1:
                self.overlaps += 1
        self.sent.append(output)
        with self.lock:
            self.inside -= 1


def _buffer(kind: str, size: int, downstream: Downstream):
    return NonBlockingReorder(size, downstream) if kind == "non-blocking" else LockedReorder(downstream)


@settings(max_examples=200, deadline=None)
@given(order=st.permutations(range(1, 41)), size=st.integers(1, 45),
       kind=st.sampled_from(["non-blocking", "locked"]))
def test_one_thread_any_completion_order_releases_each_once_in_order(order, size, kind):
    down = Downstream()
    buf = _buffer(kind, size, down)
    pending = list(order)
    while pending:   # a unit the ring has no slot for is offered again later
        retry = [serial for serial in pending if not buf.send(serial, f"o{serial}")]
        assert len(retry) < len(pending), "no unit could be added: the ring is stuck"
        pending = retry
    assert down.sent == [f"o{i}" for i in range(1, 41)]


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), threads=st.integers(2, 6), size=st.integers(1, 12),
       kind=st.sampled_from(["non-blocking", "locked"]))
def test_concurrent_workers_release_each_once_in_order(seed, threads, size, kind):
    n = 300
    down = Downstream()
    buf = _buffer(kind, size, down)
    order = list(range(1, n + 1))
    random.Random(seed).shuffle(order)
    # workers take units roughly in serial order (a shuffled window of a few) as a worklist
    # does, so the ring, however small, always has room for some of them
    order = sorted(order, key=lambda s: s + random.Random(seed + s).randint(0, size))
    work = iter(order)
    take = threading.Lock()

    def worker() -> None:
        while True:
            with take:
                serial = next(work, None)
            if serial is None:
                return
            while not buf.send(serial, serial):
                time.sleep(0)   # yield, as a worker doing other work would

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in pool)
    assert down.sent == list(range(1, n + 1))
    assert down.overlaps == 0


def test_a_ring_of_one_slot_takes_only_the_next_serial():
    down = Downstream()
    buf = NonBlockingReorder(1, down)
    assert not buf.send(2, "b")
    assert buf.send(1, "a")
    assert buf.send(2, "b")
    assert down.sent == ["a", "b"]
