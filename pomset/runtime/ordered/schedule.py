"""Schedulers of the ordered-parallel core (Prasaad et al., Sec. 6): which operator a free
worker serves next, and for how long.

A `Board` holds the operators' worklists and what the workers measure on them: cost per
element (c), selectivity (s) and, from ingress, cumulative selectivity (cs), workers on each
(w) and its most (M: one for a stateful operator, the workers for a stateless one). A worker
asks `take` for work, runs what it got, and reports with `done`; `take` picks among the
schedulable operators (work waiting, w < M) by the board's policy (urgent ones first: work
a running operator waits for) and hands out one time slice of elements (at least one item). The policies are the paper's:

- `QST` (queue-size throttling) pushes from ingress: the earliest operator whose output
  queue is under its threshold T = C * cs / sum(cs);
- `LP` (last in pipeline) pulls from egress: the latest operator with work;
- `ET` (estimated time): the highest I * c / (w + 1), the time its worklist would take with
  one worker more;
- `CT` (current throughput): the lowest (T_w + w * slice) / (c * ca), the ingress elements
  it gets through in the current window, so the bottleneck gets the next worker. The
  extracted text divides by cs; we divide by ca, the elements reaching the operator per
  element entering the pipeline (cs of the operator before it), which is what turns the
  elements it processes into ingress elements and stays defined for a filter that emits
  nothing;

and `Shuffled`, a seeded random pick, which tests use to explore interleavings.
"""
from __future__ import annotations

import random
import threading
import time
from collections import deque
from typing import Any, Callable, Dict, List, Optional, Tuple

#: seconds a worker spends on one operator before it asks again (the paper's s)
SLICE = 0.002
#: seconds over which CT measures each operator's worker time (the paper's w)
WINDOW = 0.25
#: cost per element assumed before an operator has been measured
UNMEASURED_COST = 1e-6


class Operator:
    """One operator's worklist and measurements. `run(items)` does the work of a slice and
    returns the elements it emitted; `order` places it in the pipeline (ingress first);
    `outputs` are the operators its output queue feeds (for QST). An `urgent` operator's
    items are work that an operator already running waits for (the buckets of a grouping
    its release is folding): a free worker takes them before the policy picks, as the
    paper's partitioned stateful operator takes up to one worker per partition once chosen."""

    def __init__(self, name: str, order: float, limit: int,
                 run: Callable[[List[Any]], int], urgent: bool = False) -> None:
        self.name = name
        self.order = order
        self.limit = limit
        self.run = run
        self.urgent = urgent
        self.outputs: List["Operator"] = []
        self.items: deque = deque()
        self.queued = 0
        self.workers = 0
        self.cost = UNMEASURED_COST
        self.received = 0
        self.emitted = 0
        self.window_time = 0.0

    def selectivity(self) -> float:
        """Elements out per element in, measured so far (one until measured)."""
        return self.emitted / self.received if self.received else 1.0

    def __repr__(self) -> str:
        return (f"Operator({self.name!r}, I={self.queued}, w={self.workers}/{self.limit}, "
                f"c={self.cost:.2e}, s={self.selectivity():.2f})")


class Policy:
    """Picks one of the schedulable operators (or None: everything is throttled, wait)."""

    name = ""

    def pick(self, board: "Board", ready: List[Operator]) -> Optional[Operator]:
        raise NotImplementedError


class QST(Policy):
    """Queue-size throttling: the earliest operator whose output queue is under its share
    of the board's capacity."""

    name = "qst"

    def pick(self, board: "Board", ready: List[Operator]) -> Optional[Operator]:
        cs = {id(op): board.cumulative(op) for op in board.operators}
        total = sum(cs.values()) or 1.0
        capacity = board.capacity()
        for op in ready:
            if not op.outputs:
                return op
            threshold = capacity * cs[id(op)] / total
            if sum(o.queued for o in op.outputs) < threshold:
                return op
        return None


class LP(Policy):
    """Last in pipeline: the latest operator with work."""

    name = "lp"

    def pick(self, board: "Board", ready: List[Operator]) -> Optional[Operator]:
        return ready[-1]


class ET(Policy):
    """Estimated time: the operator whose worklist would take longest with one more worker."""

    name = "et"

    def pick(self, board: "Board", ready: List[Operator]) -> Optional[Operator]:
        return max(ready, key=lambda op: op.queued * op.cost / (op.workers + 1))


class CT(Policy):
    """Current throughput: the operator that gets through the fewest ingress elements in the
    current window, counting the slices its workers are in."""

    name = "ct"

    def pick(self, board: "Board", ready: List[Operator]) -> Optional[Operator]:
        def through(op: Operator) -> float:
            return ((op.window_time + op.workers * board.slice)
                    / (op.cost * board.arriving(op)))
        return min(ready, key=through)


class Shuffled(Policy):
    """A seeded random pick among the schedulable operators: for tests, which run a
    pipeline under many interleavings and expect the same output from each."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def pick(self, board: "Board", ready: List[Operator]) -> Optional[Operator]:
        return self.rng.choice(ready)


POLICIES: Dict[str, Callable[[], Policy]] = {"qst": QST, "lp": LP, "et": ET, "ct": CT}
#: the default: the paper finds CT best on every TPCx-BB query, LP close on some
DEFAULT_POLICY = "ct"


def policy_named(name: str, seed: int = 0) -> Policy:
    """The policy `--schedule=name` asks for."""
    if name == "random":
        return Shuffled(seed)
    if name not in POLICIES:
        raise ValueError(f"--schedule is one of {', '.join([*POLICIES, 'random'])}; "
                         f"got {name!r}")
    return POLICIES[name]()


class Board:
    """The operators, their worklists and measurements, and the policy that picks among them.
    Every method is safe to call from any thread."""

    def __init__(self, policy: Policy, slice_seconds: float = SLICE,
                 window: float = WINDOW) -> None:
        self.policy = policy
        self.slice = slice_seconds
        self.window = window
        self.operators: List[Operator] = []
        self.ingress = 0
        self.roots = 0
        self.in_flight = 1
        self.closed = False
        self.changed = threading.Condition()
        self._window_start = time.perf_counter()

    def add(self, op: Operator) -> Operator:
        """Add an operator (before the workers start)."""
        self.operators.append(op)
        self.operators.sort(key=lambda o: o.order)
        return op

    def cumulative(self, op: Operator) -> float:
        """cs: elements `op` emits per element entering the pipeline (one until measured)."""
        if not self.ingress or not op.received:
            return 1.0
        return op.emitted / self.ingress

    def arriving(self, op: Operator) -> float:
        """ca: elements reaching `op` per element entering the pipeline (one until measured)."""
        if not self.ingress or not op.received:
            return 1.0
        return op.received / self.ingress

    def capacity(self) -> float:
        """QST's C: the elements the units in flight hold, at the mean unit's size."""
        mean = self.ingress / self.roots if self.roots else 1.0
        return max(self.in_flight * mean, 1.0)

    def enter(self, size: int) -> None:
        """A bundle of `size` elements enters the pipeline (for selectivities since ingress)."""
        with self.changed:
            self.ingress += size
            self.roots += 1

    def put(self, op: Operator, item: Any, size: int) -> None:
        """Add an item of `size` elements to `op`'s worklist."""
        with self.changed:
            op.items.append((item, size))
            op.queued += size
            self.changed.notify()

    def take(self) -> Optional[Tuple[Operator, List[Any], int]]:
        """Wait for work: (operator, items, their elements), or None once closed. The
        operator counts one more worker until `done`."""
        with self.changed:
            while True:
                if self.closed:
                    return None
                ready = [op for op in self.operators if op.items and op.workers < op.limit]
                urgent = [op for op in ready if op.urgent]
                op = urgent[0] if urgent else self.policy.pick(self, ready) if ready else None
                if op is not None:
                    break
                self.changed.wait()
            budget = self.slice / op.cost
            items, size = [], 0
            while op.items and (not items or size < budget):
                item, n = op.items.popleft()
                items.append(item)
                size += n
            op.queued -= size
            op.workers += 1
            return op, items, size

    def done(self, op: Operator, received: int, emitted: int, seconds: float) -> None:
        """A worker finished a slice on `op`: update its measurements."""
        with self.changed:
            op.workers -= 1
            op.received += received
            op.emitted += emitted
            if received:
                per = seconds / received
                op.cost = per if op.cost == UNMEASURED_COST else 0.8 * op.cost + 0.2 * per
            now = time.perf_counter()
            if now - self._window_start > self.window:
                self._window_start = now
                for o in self.operators:
                    o.window_time = 0.0
            op.window_time += seconds
            self.changed.notify_all()

    def serve(self) -> None:
        """A worker's loop: take work, run it, report, until the board closes."""
        while True:
            got = self.take()
            if got is None:
                return
            op, items, size = got
            start = time.perf_counter()
            emitted = 0
            try:
                emitted = op.run(items)
            finally:
                self.done(op, size, emitted, time.perf_counter() - start)

    def close(self) -> None:
        """Stop every worker once it finishes what it runs."""
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def snapshot(self) -> List[Tuple[str, int, float, float]]:
        """(name, elements received, cost per element, selectivity) per operator."""
        with self.changed:
            return [(op.name, op.received, op.cost, op.selectivity()) for op in self.operators]

