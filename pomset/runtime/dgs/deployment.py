"""A DGS step's deployment, what every runner hosts: it takes timestamped `(tag, value)` items
and watermarks, and gives the outputs the sequential program gives on the items sorted by
timestamp (ties in arrival order).

Each move of the watermark ends an epoch: the items below it are sorted (an item's key is its
place in the sorted input) and indexed by tag, and the plan's workers start, from the state
joined at the root after the previous epoch forked down the tree; each reads its own
channels from the epoch's input a slice at a time, with a heartbeat at each slice's end (the
events of a tag independent of itself are dealt to its lanes in runs). When every worker is
done with the epoch, the root joins the tree's states (the paper's App. D.2: that state is
the checkpoint) and the workers stop; the outputs go on in key order. With one worker and no
transport asked for, or an epoch too small to be worth starting workers for, the deployment
runs the workers in its own thread. Given input streams instead (`run_streams`), the whole
input is one run whose workers read their own streams (`streams.py`)."""
from __future__ import annotations

import random
from bisect import bisect_left
from operator import itemgetter
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from ...sdk.errors import UserCodeError
from ...traces.dgs.optimizer import optimize as optimize_plan
from ...traces.dgs.streams import StreamError, merged_items, timestamp_of
from .epoch import EpochInput, index_tags
from .mailbox import NEVER
from .network import initial_states, spawn
from .streams import StreamInput
from .worker import DGSUserError

_UNSET = object()

#: events a worker reads per slice of its input (each slice ends with heartbeats)
SLICE = 8192
#: an epoch with fewer events runs in the deployment's thread, not on started workers
MIN_PARALLEL = 20_000

_ts = itemgetter(0)


class DGSDeployment:
    """One DGS step. `leaves` is how many leaves the optimizer may give a plan (the program's
    own plan wins); `mode` is the transport: inline (the sequential program when the plan
    has one worker, else the workers in this thread), simulated (in this thread, channels
    delivered in a seeded random order: random delays), threads or processes."""

    def __init__(self, program: Any, trace: Any, leaves: int = 1, mode: str = "inline",
                 rng: Optional[random.Random] = None, slice_size: int = SLICE,
                 min_parallel: int = MIN_PARALLEL) -> None:
        self.program = program
        self.trace = trace
        self.leaves = leaves
        self.mode = mode
        self.rng = rng
        self.slice = slice_size
        self.min_parallel = min_parallel
        self.plan = program.plan
        self.pending: List[Tuple[int, Any]] = []   # (ts, (tag, value)) in arrival order
        self.next_key = 0
        self.state: Any = _UNSET     # the state joined at the root after the last epoch
        self.net: Any = None
        self.done: List[int] = []
        self.read: List[int] = []   # events each worker read in the last run

    # --- input ---

    def add(self, ts: int, item: Any) -> None:
        """One `(tag, value)` item at timestamp `ts` (µs)."""
        self.pending.append((ts, item))

    def extend(self, items: List[Tuple[int, Any]]) -> None:
        """`(ts, (tag, value))` items, in arrival order."""
        self.pending.extend(items)

    def advance(self, watermark: int) -> List[Tuple[int, Any]]:
        """Process every item below the watermark; the outputs `(ts, output)` in order."""
        pending = self.pending
        if not pending:
            return []
        pending.sort(key=_ts)   # stable: ties keep their arrival order
        cut = bisect_left(pending, watermark, key=_ts)
        if cut == 0:
            return []
        ready, self.pending = pending[:cut], pending[cut:]
        by_tag = index_tags(ready)
        self._check_tags(by_tag, ready)
        if self.plan is None:
            self._choose_plan(by_tag)
        base = self.next_key
        self.next_key += len(ready)
        if len(self.plan.workers) == 1 and self.mode == "inline":
            return self._sequential(ready)
        return self._epoch(ready, base, by_tag)

    def _check_tags(self, by_tag: Dict[Any, Sequence[int]], ready: list) -> None:
        for tag, places in by_tag.items():
            if tag not in self.trace.tags:
                raise UserCodeError(
                    f"DGS {self.program.label!r}: an event's tag {tag!r} is not in the alphabet "
                    f"of its trace type {sorted(map(repr, self.trace.tags))} (item "
                    f"{ready[places[0]][1]!r})")

    def _choose_plan(self, by_tag: Dict[Any, Sequence[int]]) -> None:
        rates = self.program.rates
        if rates is None:
            rates = {tag: len(places) for tag, places in by_tag.items()}
        self.plan = optimize_plan(self.program, self.leaves, rates, self.trace)

    def _root_state(self) -> Any:
        return self.program.init() if self.state is _UNSET else self.state

    def _sequential(self, ready: Iterable[Tuple[int, Any]]) -> List[Tuple[int, Any]]:
        state = self._root_state()
        update = self.program.update_of(self.program.initial_type)
        outs: List[Any] = []
        emit = outs.append
        result: List[Tuple[int, Any]] = []
        n = 0
        for n, (ts, (tag, value)) in enumerate(ready, 1):
            try:
                state = update(state, tag, value, emit)
            except Exception as exc:
                raise UserCodeError(str(DGSUserError(self.program.label, "w0",
                                                     (ts, tag, value), exc))) from exc
            if outs:
                result.extend((ts, o) for o in outs)
                outs.clear()
        self.state = state
        self.read = [n]
        return result

    def _epoch(self, ready: list, base: int, by_tag: Dict[Any, Sequence[int]]
               ) -> List[Tuple[int, Any]]:
        plan = self.plan
        lanes = {tag: plan.lanes(tag) for tag in self.trace.tags}
        epoch = EpochInput(ready, base, by_tag, lanes, self.slice)
        mode = self.mode
        if mode == "inline" or (mode in ("threads", "processes")
                                and len(ready) < self.min_parallel):
            mode = "simulated"
        return self._run(epoch, mode, lambda key: ready[key - base][0])

    def run_streams(self, streams: Sequence[Any], rates: Optional[Dict[Any, float]] = None
                    ) -> List[Tuple[int, Any]]:
        """The whole input as streams (`pm.dgs.Stream`) that the plan's workers read
        themselves, each its own channels' (with one worker and no transport asked for, the
        sequential program over them merged, in this thread); the outputs `(ts, output)` in
        order. `rates` (per tag) choose the plan when the program fixes none."""
        if self.pending or self.state is not _UNSET:
            raise RuntimeError(f"DGS {self.program.label!r}: a deployment reads its streams "
                               f"once, from the program's initial state")
        if self.plan is None:
            self.plan = optimize_plan(self.program, self.leaves,
                                      self.program.rates or rates or {}, self.trace)
        try:
            if len(self.plan.workers) == 1 and self.mode == "inline":
                return self._sequential(merged_items(streams))
            lanes = {tag: self.plan.lanes(tag) for tag in self.trace.tags}
            mode = "simulated" if self.mode == "inline" else self.mode
            return self._run(StreamInput(streams, lanes, self.slice), mode, timestamp_of)
        except StreamError as exc:
            raise UserCodeError(str(exc)) from exc

    def _run(self, epoch: Any, mode: str, timestamp: Callable[[int], int]
             ) -> List[Tuple[int, Any]]:
        """Start the plan's workers on `mode`'s transport over the epoch's input, from the
        root's state forked down, until every worker is done with it; the root's joined
        state is kept. The outputs, in key order, at their events' timestamps."""
        plan = self.plan
        try:
            states = initial_states(self.program, plan, self._root_state())
        except DGSUserError as exc:
            raise UserCodeError(str(exc)) from exc
        rng = self.rng if self.mode == "simulated" else None
        self.net = spawn(mode, self.program, plan, self.trace, states, epoch, rng)
        self.done = [epoch.base] * len(plan.workers)
        self.read = [0] * len(plan.workers)
        try:
            produced: List[tuple] = []
            while min(self.done) < epoch.end:
                msg = self._receive()
                if msg is None:
                    raise RuntimeError(f"DGS {self.program.label!r}: the workers stopped before "
                                       f"finishing the input (done {self.done}, input "
                                       f"{epoch.end})")
                self._take(msg, produced)
            self.state = self._joined(epoch.end, produced)
        finally:
            self.close()
        produced.sort(key=_key_n)
        return [(timestamp(k), out) for k, _, out in produced]

    def _joined(self, key: int, produced: list) -> Any:
        """Ask the root to join the tree's states at `key` (every worker is done below it)."""
        self.net.send(0, ("snap", key))
        while True:
            msg = self._receive()
            if msg is None:
                raise RuntimeError(f"DGS {self.program.label!r}: the joined state never came")
            state = self._take(msg, produced)
            if msg[0] == "snap":
                return state

    def _receive(self) -> Optional[tuple]:
        """The transport's next message to the sink. On the simulated transport the workers
        run in this thread, so a user function's failure is raised here: it becomes the
        UserCodeError that the other transports send as an "err" message."""
        try:
            return self.net.receive()
        except DGSUserError as exc:
            self.close()
            raise UserCodeError(str(exc)) from exc

    def _take(self, msg: tuple, produced: list) -> Any:
        kind = msg[0]
        if kind == "out":
            produced.extend(msg[2])
        elif kind == "done":
            self.done[msg[1]] = max(self.done[msg[1]], msg[2])
            self.read[msg[1]] = msg[3]
        elif kind == "snap":
            return msg[1]
        elif kind == "err":
            self.close()
            raise UserCodeError(msg[2])
        return None

    # --- end, checkpoints ---

    def finish(self) -> List[Tuple[int, Any]]:
        """Everything left (the watermark reached the end of time)."""
        return self.advance(NEVER)

    def close(self) -> None:
        if self.net is not None:
            net, self.net = self.net, None
            net.close()

    def joined_state(self) -> Any:
        """The state of every event so far, joined at the root."""
        return self._root_state()

    def snapshot(self) -> Dict[str, Any]:
        return {"state": self.joined_state(), "pending": list(self.pending),
                "next_key": self.next_key}

    def restore(self, snap: Dict[str, Any]) -> None:
        self.close()
        self.state = snap["state"]
        self.pending = list(snap["pending"])
        self.next_key = snap["next_key"]


def _key_n(o: tuple) -> Tuple[int, int]:
    return (o[0], o[1])
