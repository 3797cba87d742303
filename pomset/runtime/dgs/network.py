"""The transports a synchronization plan's workers run on, all with the same `WorkerCore`s:
`Simulated` (one thread; every message waits in its channel, FIFO per pair of workers, and a
seeded random choice of channel delivers next: random channel delays, for the tests),
`Threads` and `Processes` (a worker per thread or forked process, each reading its inbox;
processes are for Python-bound updates, which threads would run one at a time). The sink's
messages (outputs, progress, checkpoints, errors) come back through `receive`."""
from __future__ import annotations

import multiprocessing
import queue
import random
import threading
import traceback
from collections import deque
from typing import Any, Dict, List, Optional, Tuple

from .worker import SINK, WorkerCore

#: the message that ends a worker's loop
STOP = ("stop",)


def initial_states(program: Any, plan: Any, state: Any) -> List[Any]:
    """Each worker's state when the run starts from `state` at the root: forked down the
    tree (a worker with children keeps none while they hold its parts)."""
    states: List[Any] = [None] * len(plan.workers)

    def down(i: int, s: Any) -> None:
        kids = plan.children(i)
        if not kids:
            states[i] = s
            return
        types = [plan.state_type(program, j) for j in [i] + kids]
        fj = program.fork_join(*types)
        left, right = fj.fork(s, *(plan.workers[k].subtree_tags() for k in kids))
        down(kids[0], left)
        down(kids[1], right)
    down(0, state)
    return states


class Simulated:
    """All workers in this thread; `pump` delivers messages one at a time, from a channel
    chosen at random (seeded), until none is left."""

    def __init__(self, program: Any, plan: Any, trace: Any, states: List[Any],
                 rng: Optional[random.Random] = None) -> None:
        self.rng = rng
        self.channels: Dict[Tuple[int, int], deque] = {}
        self.sink: deque = deque()
        self.cores = [WorkerCore(program, plan, i, trace, states[i], self._sender(i))
                      for i in range(len(plan.workers))]
        for core in self.cores:
            core.start()

    def _sender(self, src: int) -> Any:
        def send(dest: int, msg: tuple) -> None:
            if dest == SINK:
                self.sink.append(msg)
            else:
                self.channels.setdefault((src, dest), deque()).append(msg)
        return send

    def send(self, wid: int, msg: tuple) -> None:
        self.channels.setdefault((SINK, wid), deque()).append(msg)

    def pump(self) -> None:
        while True:
            busy = [c for c, q in self.channels.items() if q]
            if not busy:
                return
            c = self.rng.choice(busy) if self.rng is not None else busy[0]
            self.cores[c[1]].on(self.channels[c].popleft())

    def receive(self, block: bool = True) -> Optional[tuple]:
        if not self.sink:
            self.pump()
        return self.sink.popleft() if self.sink else None

    def close(self) -> None:
        self.channels.clear()


def _serve(core_args: tuple, inbox: Any, sink: Any, outboxes: List[Any]) -> None:
    """A worker's loop: take a message, let the core handle it; a failure goes to the sink."""
    program, plan, wid, trace, state = core_args

    def send(dest: int, msg: tuple) -> None:
        (sink if dest == SINK else outboxes[dest]).put(msg)
    try:
        core = WorkerCore(program, plan, wid, trace, state, send)
        core.start()
        while True:
            msg = inbox.get()
            if msg[0] == "stop":
                return
            core.on(msg)
    except BaseException as exc:   # the driver re-raises it; this worker stops
        text = str(exc) if type(exc).__name__ == "DGSUserError" else "".join(
            traceback.format_exception(type(exc), exc, exc.__traceback__))
        sink.put(("err", wid, text))


class _Spawned:
    """Workers on threads or processes, each with an inbox queue."""

    def __init__(self, program: Any, plan: Any, trace: Any, states: List[Any],
                 processes: bool) -> None:
        n = len(plan.workers)
        if processes:
            ctx = multiprocessing.get_context("fork")
            self.inboxes = [ctx.Queue() for _ in range(n)]
            self.sink = ctx.Queue()
            make = ctx.Process
        else:
            self.inboxes = [queue.SimpleQueue() for _ in range(n)]
            self.sink = queue.SimpleQueue()
            make = threading.Thread
        self.workers = [make(target=_serve, daemon=True,
                             args=((program, plan, i, trace, states[i]), self.inboxes[i],
                                   self.sink, self.inboxes))
                        for i in range(n)]
        for w in self.workers:
            w.start()

    def send(self, wid: int, msg: tuple) -> None:
        self.inboxes[wid].put(msg)

    def receive(self, block: bool = True) -> Optional[tuple]:
        try:
            return self.sink.get(block)
        except queue.Empty:
            return None

    def close(self) -> None:
        for box in self.inboxes:
            box.put(STOP)
        for w in self.workers:
            w.join(timeout=10)
            if isinstance(w, multiprocessing.process.BaseProcess) and w.is_alive():
                w.terminate()


def spawn(mode: str, program: Any, plan: Any, trace: Any, states: List[Any],
          rng: Optional[random.Random] = None) -> Any:
    """The transport for `mode`: simulated, threads or processes."""
    if mode == "simulated":
        return Simulated(program, plan, trace, states, rng)
    if mode in ("threads", "processes"):
        return _Spawned(program, plan, trace, states, mode == "processes")
    raise ValueError(f"unknown DGS transport {mode!r}: simulated, threads or processes")
