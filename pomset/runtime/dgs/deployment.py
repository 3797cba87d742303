"""A DGS step's deployment, what every runner hosts: it takes timestamped `(tag, value)` items
and watermarks, and gives the outputs the sequential program gives on the items sorted by
timestamp (ties in arrival order).

As the watermark passes, the items below it are sorted and numbered (an item's number, its
key, is its place in the sorted input) and dealt, a slice at a time, to the workers handling
their implementation tags, the events of a tag independent of itself spread over its lanes in
turn; after each slice every channel hears how far the input has come (the heartbeats, from
every input lane). The deployment waits until every worker is done with the input below the
watermark, and emits the outputs in key order. With one worker and no transport asked for,
it runs the sequential program itself. A checkpoint is the state joined at the root (the
paper's App. D.2) and the items not yet released."""
from __future__ import annotations

import random
from typing import Any, Dict, List, Optional, Tuple

from ...sdk.errors import UserCodeError
from .network import initial_states, spawn
from .worker import DGSUserError

_UNSET = object()

#: events dealt to the workers per slice (each slice ends with heartbeats on every lane)
SLICE = 8192


class DGSDeployment:
    """One DGS step. `leaves` is how many leaves the optimizer may give a plan (the program's
    own plan wins); `mode` is the transport: inline (the sequential program when the plan
    has one worker, else simulated without delays), simulated (seeded random delays),
    threads or processes."""

    def __init__(self, program: Any, trace: Any, leaves: int = 1, mode: str = "inline",
                 rng: Optional[random.Random] = None, slice_size: int = SLICE) -> None:
        self.program = program
        self.trace = trace
        self.leaves = leaves
        self.mode = mode
        self.rng = rng
        self.slice = slice_size
        self.plan = program.plan
        self.pending: List[Tuple[int, int, Any, Any]] = []   # (ts, arrival, tag, value)
        self.arrivals = 0
        self.next_key = 0
        self.state: Any = _UNSET     # the root's state while no transport runs
        self.net: Any = None
        self.done: List[int] = []
        self.unknown: Dict[Any, int] = {}

    # --- input ---

    def add(self, ts: int, item: Any) -> None:
        """One `(tag, value)` item at timestamp `ts` (µs)."""
        tag, value = item
        if tag not in self.trace.tags:
            raise UserCodeError(
                f"DGS {self.program.label!r}: an event's tag {tag!r} is not in the alphabet of "
                f"its trace type {sorted(map(repr, self.trace.tags))} (item {item!r})")
        self.pending.append((ts, self.arrivals, tag, value))
        self.arrivals += 1

    def advance(self, watermark: int) -> List[Tuple[int, Any]]:
        """Process every item below the watermark; the outputs `(ts, output)` in order."""
        ready = [p for p in self.pending if p[0] < watermark]
        if not ready:
            return []
        self.pending = [p for p in self.pending if p[0] >= watermark]
        ready.sort(key=_ts_arrival)
        if self.plan is None:
            self._choose_plan(ready)
        base = self.next_key
        self.next_key += len(ready)
        if self.net is None and len(self.plan.workers) == 1 and self.mode == "inline":
            return self._sequential(ready, base)
        self._start(base)
        return self._distributed(ready, base)

    def _choose_plan(self, ready: list) -> None:
        from ...traces.dgs.optimizer import optimize
        rates = self.program.rates
        if rates is None:
            rates = {}
            for _, _, tag, _ in ready:
                rates[tag] = rates.get(tag, 0) + 1
        self.plan = optimize(self.program, self.leaves, rates, self.trace)

    def _sequential(self, ready: list, base: int) -> List[Tuple[int, Any]]:
        state = self.program.init() if self.state is _UNSET else self.state
        update = self.program.update_of(self.program.initial_type)
        outs: List[Any] = []
        emit = outs.append
        result: List[Tuple[int, Any]] = []
        for ts, _, tag, value in ready:
            try:
                state = update(state, tag, value, emit)
            except Exception as exc:
                raise UserCodeError(str(DGSUserError(self.program.label, "w0",
                                                     (ts, tag, value), exc))) from exc
            if outs:
                result.extend((ts, o) for o in outs)
                outs.clear()
        self.state = state
        return result

    def _start(self, base: int) -> None:
        if self.net is not None:
            return
        state = self.program.init() if self.state is _UNSET else self.state
        self.state = _UNSET
        mode = "simulated" if self.mode == "inline" else self.mode
        states = initial_states(self.program, self.plan, state)
        self.net = spawn(mode, self.program, self.plan, self.trace, states, self.rng)
        self.done = [base] * len(self.plan.workers)

    def _distributed(self, ready: list, base: int) -> List[Tuple[int, Any]]:
        plan, net = self.plan, self.net
        lanes = {tag: plan.lanes(tag) for tag in self.trace.tags}
        owner = plan.owner
        end = base + len(ready)
        for start in range(0, len(ready), self.slice):
            part = ready[start:start + self.slice]
            by_tag: Dict[Any, list] = {}
            for i, (_, _, tag, value) in enumerate(part, base + start):
                by_tag.setdefault(tag, []).append((i, tag, value))
            low = base + start + len(part)
            for tag, n in lanes.items():
                events = by_tag.get(tag, [])
                for lane in range(n):
                    it = (tag, lane)
                    net.send(owner[it], ("in", it, events[lane::n] if n > 1 else events, low))
        produced: List[tuple] = []
        while min(self.done) < end:
            msg = net.receive()
            if msg is None:
                raise RuntimeError(f"DGS {self.program.label!r}: the workers stopped before "
                                   f"finishing the input (done {self.done}, input {end})")
            self._take(msg, produced)
        produced.sort(key=_key_n)
        return [(ready[k - base][0], out) for k, _, out in produced]

    def _take(self, msg: tuple, produced: list) -> Any:
        kind = msg[0]
        if kind == "out":
            produced.extend(msg[2])
        elif kind == "done":
            self.done[msg[1]] = max(self.done[msg[1]], msg[2])
        elif kind == "snap":
            return msg[1]
        elif kind == "err":
            self.close()
            raise UserCodeError(msg[2])
        return None

    # --- end, checkpoints ---

    def finish(self) -> List[Tuple[int, Any]]:
        """Everything left (the watermark reached the end of time), then the workers stop."""
        outs = self.advance(1 << 62)
        self.close()
        return outs

    def close(self) -> None:
        if self.net is not None:
            net, self.net = self.net, None
            net.close()

    def joined_state(self) -> Any:
        """The state of every event so far, joined at the root."""
        if self.net is None:
            return self.program.init() if self.state is _UNSET else self.state
        self.net.send(0, ("snap", self.next_key))
        while True:
            msg = self.net.receive()
            if msg is None:
                raise RuntimeError(f"DGS {self.program.label!r}: no checkpoint came back")
            state = self._take(msg, [])
            if msg[0] == "snap":
                return state

    def snapshot(self) -> Dict[str, Any]:
        return {"state": self.joined_state(), "pending": list(self.pending),
                "arrivals": self.arrivals, "next_key": self.next_key, "plan": self.plan}

    def restore(self, snap: Dict[str, Any]) -> None:
        self.close()
        self.state = snap["state"]
        self.pending = list(snap["pending"])
        self.arrivals = snap["arrivals"]
        self.next_key = snap["next_key"]
        self.plan = self.program.plan or snap["plan"]


def _ts_arrival(p: tuple) -> Tuple[int, int]:
    return (p[0], p[1])


def _key_n(o: tuple) -> Tuple[int, int]:
    return (o[0], o[1])
