"""O+ deployed by Virtual Shared-Nothing parallelism (Gulisano et al., STRETCH §5-§7).

The instances of the operator share one input gate, one output gate and one state. The input
gate (`ScaleGate`) merges the operator's inputs, each sorted by timestamp, and every instance
reads every tuple, handling only the keys it is responsible for; the state is split into
`buckets` by a stable hash of the key, and a bucket-to-instance map (the paper's f_mu) says
who updates what, so no two instances touch one key. Each instance adds its outputs to the
output gate in timestamp order (outputs of one timestamp ordered by key hash, then per
window), which merges them into one stream the host reads.

Reconfiguration without state transfer (Alg. 4): `request(n)` is a control message with a new
instance count, timed at the input watermark when it came (gamma). When every tuple before
gamma is in, the instances process those tuples (the barrier), then one step swaps the map,
connects the new instances to both gates at the position of the old ones or disconnects the
leaving ones, and processing goes on: no state moves, so the step's time does not grow with
the state. The output is the same whatever the instance count and whenever it changes.

Hosts call `add` / `advance` per input, then `run`, which lets the instances process what is
ready (concurrently, on threads, when there are several) and returns the outputs now ready.
"""
from __future__ import annotations

import heapq
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import count
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...sdk.errors import UserCodeError
from ...traces.hashing import stable_hash
from ..elementwise import user_code_error
from .scalegate import CLOSED, ScaleGate

#: buckets of the shared state: the finest unit of responsibility, and the most instances
BUCKETS = 256

#: the elastic controller's thresholds (the paper's §8.4): load per instance above UPPER adds
#: instances, below LOWER removes them, either way to bring it to TARGET
UPPER, TARGET, LOWER = 0.9, 0.7, 0.45

_OUT = "out"


class Window:
    """One window instance of one key: what the user's functions see and change."""

    __slots__ = ("key", "start", "end", "states", "ts", "input", "hash", "seq")

    def __init__(self, key: Any, start: int, end: int, states: list, h: int) -> None:
        self.key, self.start, self.end, self.states = key, start, end, states
        self.hash, self.seq = h, 0
        self.ts = start
        self.input = 0

    @property
    def state(self) -> Any:
        """The state of the current input (of the only one, for a one-input operator)."""
        return self.states[self.input]

    @state.setter
    def state(self, value: Any) -> None:
        self.states[self.input] = value

    def __repr__(self) -> str:
        return f"Window(key={self.key!r}, start={self.start}, end={self.end})"


class _Bucket:
    """A share of the state: keys' window instances (per key, a dict from start to window, in
    ascending start order), their ends in a heap, and outputs not yet due."""

    __slots__ = ("windows", "ends", "out")

    def __init__(self) -> None:
        self.windows: Dict[Any, Dict[int, Window]] = {}
        self.ends: List[tuple] = []
        self.out: List[tuple] = []


class _Instance:
    """One o+_j: processes the input gate's tuples for the buckets mapped to it."""

    def __init__(self, op: "VSNDeployment", j: int) -> None:
        self.op = op
        self.j = j
        self.busy = 0.0

    def round(self, limit: Any) -> None:
        """Process the ready tuples before `limit`, then expire and flush up to it."""
        started = time.perf_counter()
        op, j = self.op, self.j
        owner, handle = op.owner, op.handle
        next_end = op.next_end[j]
        for ts, (i, value, keyed) in op.gate_in.get_many(j, before=limit):
            if ts >= next_end:
                next_end = op.expire(j, ts)
            for key, h, b in keyed:
                if owner[b] == j:
                    end = handle(b, key, h, ts, value, i)
                    if end < next_end:
                        next_end = end
        op.next_end[j] = next_end
        if limit >= next_end:
            op.next_end[j] = op.expire(j, limit)
        op.flush(j, limit)
        self.busy += time.perf_counter() - started


class VSNDeployment:
    """An `OPlus` step run by `parallelism` instances (at most `max_parallelism`) that share
    its state. Not thread-safe itself: one host thread calls it."""

    def __init__(self, spec: Any, label: str, inputs: int, parallelism: Optional[int] = None,
                 max_parallelism: Optional[int] = None) -> None:
        self.spec = spec
        self.label = label
        self.inputs = inputs
        n = parallelism or spec.parallelism
        self.max = max(n, max_parallelism or spec.most_instances)
        if self.max > BUCKETS:
            raise ValueError(f"{label}: at most {BUCKETS} instances, got {self.max}")
        self.advance_by, self.size = spec.advance, spec.size
        self.single = spec.window == "single"
        self.keyfns = [spec.key_function(i) for i in range(inputs)]
        self.buckets = [_Bucket() for _ in range(BUCKETS)]
        self.instances = [_Instance(self, j) for j in range(self.max)]
        self.active = list(range(n))
        self.owner = [b % n for b in range(BUCKETS)]
        self.owned = self._owned()
        self.next_end = [CLOSED] * self.max
        self.gate_in = ScaleGate(sources=range(inputs), readers=self.active)
        self.gate_out = ScaleGate(sources=self.active, readers=[_OUT])
        self.pool: Optional[ThreadPoolExecutor] = None
        self.controls: List[Tuple[Any, int]] = []
        self.reconfigurations: List[Dict[str, Any]] = []
        self._ties = count()

    # --- the host's side ----------------------------------------------------------------------
    def add(self, index: int, items: List[Tuple[int, Any]]) -> None:
        """Input `index`'s tuples (ts, value), in timestamp order, each with its keys."""
        keys, label = self.keyfns[index], self.label
        rows = []
        for ts, value in items:
            keyed = [_keyed(k) for k in keys_of(label, keys, value)]
            rows.append((ts, None, (index, value, keyed)))
        self.gate_in.add_many(index, rows)

    def add_keyed(self, index: int, items: List[Tuple[int, Any, Any]]) -> None:
        """`add` for tuples (ts, value, key) whose keys were taken already, one key each (a
        shared-nothing host duplicates each tuple to its keys first)."""
        self.gate_in.add_many(index, [(ts, None, (index, value, [_keyed(key)]))
                                      for ts, value, key in items])

    def advance(self, index: int, wm: int) -> None:
        """Input `index` has nothing more before `wm`."""
        self.gate_in.advance(index, wm)

    def request(self, n: int) -> None:
        """Change to `n` instances at the first watermark past the current one."""
        if not isinstance(n, int) or not 1 <= n <= self.max:
            raise ValueError(f"{self.label}: parallelism must be 1 to {self.max} (its "
                             f"max_parallelism), got {n!r}")
        self.controls.append((self.gate_in.frontier(), n))

    def run(self) -> List[Tuple[int, Any]]:
        """Let the instances process everything ready; the outputs now ready, (ts, value) in
        order."""
        while True:
            frontier = self.gate_in.frontier()
            if self.controls and self.controls[0][0] <= frontier:
                gamma, n = self.controls.pop(0)
                self._round(gamma)          # the barrier: everything before gamma is done
                self._reconfigure(gamma, n)
                continue
            self._round(frontier)
            return self.gate_out.get_many(_OUT)

    def hold(self) -> Any:
        """The earliest timestamp an output still to come may have."""
        return self.gate_out.frontier()

    @property
    def parallelism(self) -> int:
        return len(self.active)

    def load(self) -> float:
        """The instances' busy time so far, in seconds (the elastic controller's measure)."""
        return sum(i.busy for i in self.instances)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None

    # --- rounds and reconfiguration -----------------------------------------------------------
    def _round(self, limit: Any) -> None:
        if limit == float("-inf"):
            return
        active = [self.instances[j] for j in self.active]
        if len(active) == 1:
            active[0].round(limit)
            return
        if self.pool is None:
            self.pool = ThreadPoolExecutor(self.max, f"pomset-{self.label}")
        futures = [self.pool.submit(inst.round, limit) for inst in active]
        errors = [f.exception() for f in futures]
        for e in errors:
            if e is not None:
                raise e

    def _reconfigure(self, gamma: Any, n: int) -> None:
        """Swap the map and connect or disconnect instances: nothing of the state moves. Its
        record holds the step's CPU time (`time.thread_time`), which what else the machine
        runs meanwhile does not add to."""
        started = time.thread_time()
        old = self.active
        new = list(range(n))
        joining = [j for j in new if j not in old]
        leaving = [j for j in old if j not in new]
        if joining:
            self.gate_in.add_readers(joining, like=old[0])
            self.gate_out.add_sources(joining, like=old[0])
        if leaving:
            self.gate_in.remove_readers(leaving)
            self.gate_out.remove_sources(leaving)
        self.owner = [b % n for b in range(BUCKETS)]
        self.active = new
        self.owned = self._owned()
        for j in new:
            self.next_end[j] = min((self.buckets[b].ends[0][0] for b in self.owned[j]
                                    if self.buckets[b].ends), default=CLOSED)
        self.reconfigurations.append(dict(at=gamma, before=len(old), after=n,
                                          cpu_seconds=time.thread_time() - started))

    def _owned(self) -> List[List[int]]:
        owned: List[List[int]] = [[] for _ in range(self.max)]
        for b, j in enumerate(self.owner):
            owned[j].append(b)
        return owned

    # --- one key's windows (called by the instance that owns the key's bucket) ----------------
    def handle(self, b: int, key: Any, h: int, ts: int, value: Any, i: int) -> Any:
        """Tuple (ts, value) of input `i` falls in key `key`'s windows: create and update
        them. Returns the earliest end among the windows it created (CLOSED if none)."""
        bucket = self.buckets[b]
        wins = bucket.windows.get(key)
        if wins is None:
            wins = bucket.windows[key] = {}
        advance, size = self.advance_by, self.size
        first = ((ts - size) // advance + 1) * advance
        if self.single:
            starts = [next(iter(wins))] if wins else [first]
        else:
            starts = range(first, ts // advance * advance + 1, advance)
        earliest = CLOSED
        update = self.spec.update
        for start in starts:
            w = wins.get(start)
            if w is None:
                w = self._create(bucket, wins, key, h, start)
                if w.end < earliest:
                    earliest = w.end
            w.ts, w.input = ts, i
            call_user(self.label, "update", value, update, w, value, self._emitter(bucket, w))
        return earliest

    def _create(self, bucket: _Bucket, wins: Dict[int, Window], key: Any, h: int,
                start: int) -> Window:
        initial = self.spec.initial
        w = wins[start] = Window(key, start, start + self.size,
                                 [initial() for _ in range(self.inputs)], h)
        heapq.heappush(bucket.ends, (w.end, h, next(self._ties), key))
        return w

    @staticmethod
    def _emitter(bucket: _Bucket, w: Window) -> Callable[[Any], None]:
        out = bucket.out

        def emit(value: Any) -> None:
            out.append((w.end - 1, (w.hash, w.seq), value))
            w.seq += 1
        return emit

    def expire(self, j: int, wm: Any) -> Any:
        """Instance `j` reached watermark `wm`: output, then slide or drop, every window of its
        buckets that ended by then. Returns the earliest end left among them."""
        spec, advance, single = self.spec, self.advance_by, self.single
        earliest = CLOSED
        for b in self.owned[j]:
            bucket = self.buckets[b]
            ends = bucket.ends
            while ends and ends[0][0] <= wm:
                end, h, _, key = heapq.heappop(ends)
                wins = bucket.windows.get(key)
                w = None if not wins else wins.get(end - self.size)
                if w is None or w.end != end:
                    continue
                w.ts = end - 1
                call_user(self.label, "output", repr(w), spec.output, w,
                          self._emitter(bucket, w))
                del wins[w.start]
                if single:
                    w.start += advance
                    w.end += advance
                    call_user(self.label, "slide", repr(w), spec.slide, w)
                    if any(w.states):
                        wins[w.start] = w
                        heapq.heappush(ends, (w.end, h, next(self._ties), key))
                if not wins:
                    del bucket.windows[key]
            if ends and ends[0][0] < earliest:
                earliest = ends[0][0]
        return earliest

    def flush(self, j: int, wm: Any) -> None:
        """Hand instance `j`'s outputs before `wm` to the output gate, in order; it will add
        nothing before `wm` from now on."""
        due = []
        for b in self.owned[j]:
            bucket = self.buckets[b]
            if not bucket.out:
                continue
            keep = []
            for row in bucket.out:
                (due if row[0] < wm else keep).append(row)
            bucket.out = keep
        due.sort(key=lambda row: (row[0], row[1]))
        self.gate_out.add_many(j, due)
        self.gate_out.advance(j, wm)

    # --- checkpoints --------------------------------------------------------------------------
    def snapshot(self) -> Dict[str, Any]:
        """The state a restarted run needs (after `run`: nothing left in the gates but the
        input tuples not yet ready)."""
        return dict(buckets=[(b.windows, b.ends, b.out) for b in self.buckets],
                    pending=self.gate_in.pending(), frontiers=self.gate_in.frontiers(),
                    active=len(self.active), controls=list(self.controls),
                    next_end=list(self.next_end))

    def restore(self, data: Dict[str, Any]) -> None:
        for bucket, (windows, ends, out) in zip(self.buckets, data["buckets"]):
            bucket.windows, bucket.ends, bucket.out = windows, ends, out
        n = data["active"]
        if n != len(self.active):
            self._reconfigure(None, n)
            self.reconfigurations.clear()
        self.next_end = list(data["next_end"]) + [CLOSED] * (self.max - len(data["next_end"]))
        self.controls = list(data["controls"])
        pending = data["pending"]
        for index, wm in data["frontiers"].items():
            self.gate_in.add_many(index, pending.get(index, []))
            self.gate_in.advance(index, wm)


def call_user(label: str, what: str, subject: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)`, one of the operator's functions (`what`): its error as a `UserCodeError`
    naming the step, the function and the value or window it failed on."""
    try:
        return fn(*args)
    except UserCodeError:
        raise
    except Exception as e:
        raise user_code_error(f"{label} ({what})", subject, e) from e


def keys_of(label: str, keys: Callable[[Any], Any], value: Any) -> list:
    """The keys a multi-key function gives a tuple."""
    return list(call_user(label, "keys", value, keys, value))


def _keyed(key: Any) -> Tuple[Any, int, int]:
    h = stable_hash(key)
    return key, h, h % BUCKETS


def elastic_target(load: float, n: int, most: int) -> int:
    """The instance count the paper's controller picks for `load` (busy instances' worth of
    work) on `n` instances: unchanged between LOWER and UPPER per instance, else the fewest
    that bring it to TARGET or below (within 1..`most`)."""
    per = load / n
    if LOWER <= per <= UPPER:
        return n
    want = max(1, -(-load // TARGET))
    return int(min(most, want))
