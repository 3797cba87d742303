"""The transports a synchronization plan's workers run on, all with the same `WorkerCore`s:
`Simulated` (one thread; every message waits in its channel, FIFO per pair of workers, and a
seeded random choice of channel delivers next: random channel delays, for the tests),
and workers on threads or forked processes (`_Spawned`: each reads its inbox, and its input
while the inbox is empty; processes are for Python-bound updates, which threads would run one
at a time). The sink's messages (outputs, progress, checkpoints, errors) come back through
`receive`."""
from __future__ import annotations

import gc
import multiprocessing
import multiprocessing.queues
import queue
import random
import threading
import traceback
from collections import deque
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...traces.dgs.streams import StreamError
from .worker import SINK, DGSUserError, WorkerCore

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
        try:
            left, right = fj.fork(s, *(plan.workers[k].subtree_tags() for k in kids))
        except Exception as exc:
            raise DGSUserError(program.label, plan.workers[i].name, None, exc, "fork") from exc
        down(kids[0], left)
        down(kids[1], right)
    down(0, state)
    return states


class Simulated:
    """All workers in this thread; `pump` delivers messages one at a time, from a channel
    chosen at random (seeded; without a generator, the first), and lets a worker read its
    next slice of input as if that were a channel too, until nothing is left."""

    def __init__(self, program: Any, plan: Any, trace: Any, states: List[Any], epoch: Any,
                 rng: Optional[random.Random] = None) -> None:
        self.rng = rng
        self.channels: Dict[Tuple[int, int], deque] = {}
        self.sink: deque = deque()
        self.cores = [WorkerCore(program, plan, i, trace, states[i], self._sender(i))
                      for i in range(len(plan.workers))]
        for core in self.cores:
            core.start(epoch)

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
            busy: List[Any] = [c for c, q in self.channels.items() if q]
            busy += [core for core in self.cores if core.can_feed()]
            if not busy:
                return
            pick = self.rng.choice(busy) if self.rng is not None else busy[0]
            if isinstance(pick, WorkerCore):
                pick.feed()
            else:
                self.cores[pick[1]].on(self.channels[pick].popleft())

    def receive(self, block: bool = True) -> Optional[tuple]:
        if not self.sink:
            self.pump()
        return self.sink.popleft() if self.sink else None

    def close(self) -> None:
        self.channels.clear()


class _SafeQueue(multiprocessing.queues.Queue):
    """A process queue on which a message that does not pickle (in the thread that sends it,
    after `put` returned) becomes the sending worker's error (`on_error`), where a plain one
    drops it with a traceback on stderr: an output lost, or a state that never comes and a
    run that waits for ever. (concurrent.futures' process pool overrides the same hook.)"""

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx=ctx)
        self.on_error: Optional[Callable[[BaseException, Any], None]] = None

    def _on_queue_feeder_error(self, e: BaseException, obj: Any) -> None:
        if self.on_error is None:
            super()._on_queue_feeder_error(e, obj)
        else:
            self.on_error(e, obj)


def _serve(core_args: tuple, epoch: Any, inbox: Any, sink: Any, outboxes: List[Any]) -> None:
    """A worker's loop: take a message and let the core handle it; while none is waiting and
    it has room, read its next slice of input. A failure goes to the sink."""
    program, plan, wid, trace, state = core_args

    def send(dest: int, msg: tuple) -> None:
        (sink if dest == SINK else outboxes[dest]).put(msg)

    def unsent(exc: BaseException, msg: Any) -> None:
        kind = {"out": "outputs", "st": "state", "fk": "forked states", "snap": "joined state"
                }.get(msg[0], f"message {msg[0]!r}") if isinstance(msg, tuple) and msg else msg
        sink.put(("err", wid, f"DGS {program.label!r}: worker {plan.workers[wid].name!r} could "
                              f"not send its {kind} to another process: {type(exc).__name__}: "
                              f"{exc} (with workers in processes, a program's outputs and "
                              f"states must pickle)"))
    for box in [sink] + list(outboxes):
        if isinstance(box, _SafeQueue):
            box.on_error = unsent
    try:
        core = WorkerCore(program, plan, wid, trace, state, send)
        core.start(epoch)
        while True:
            try:
                msg = inbox.get(not core.can_feed())
            except queue.Empty:
                core.feed()
                continue
            if msg[0] == "stop":
                return
            core.on(msg)
    except BaseException as exc:   # the driver re-raises it; this worker stops
        text = str(exc) if isinstance(exc, (DGSUserError, StreamError)) else "".join(
            traceback.format_exception(type(exc), exc, exc.__traceback__))
        sink.put(("err", wid, text))


class _Spawned:
    """Workers on threads or processes, each with an inbox queue."""

    def __init__(self, program: Any, plan: Any, trace: Any, states: List[Any], epoch: Any,
                 processes: bool) -> None:
        n = len(plan.workers)
        self.label = program.label
        self.names = [w.name for w in plan.workers]
        #: how long `receive` waits before it looks for dead worker processes
        self.poll = 0.5 if processes else None
        if processes:
            ctx = multiprocessing.get_context("fork")
            self.inboxes = [_SafeQueue(ctx) for _ in range(n)]
            self.sink = _SafeQueue(ctx)
            make = ctx.Process
        else:
            self.inboxes = [queue.SimpleQueue() for _ in range(n)]
            self.sink = queue.SimpleQueue()
            make = threading.Thread
        self.workers = [make(target=_serve, daemon=True,
                             args=((program, plan, i, trace, states[i]), epoch,
                                   self.inboxes[i], self.sink, self.inboxes))
                        for i in range(n)]
        if processes:
            gc.freeze()   # the children inherit the heap: their collections leave it unread
        try:
            for w in self.workers:
                w.start()
        finally:
            if processes:
                gc.unfreeze()

    def send(self, wid: int, msg: tuple) -> None:
        self.inboxes[wid].put(msg)

    def receive(self, block: bool = True) -> Optional[tuple]:
        while True:
            try:
                return self.sink.get(block, self.poll if block else None)
            except queue.Empty:
                if not block:
                    return None
            dead = self._dead()
            if dead is not None:
                return dead

    def _dead(self) -> Optional[tuple]:
        """A worker process that ended (killed, or `os._exit` in a user function: workers
        end only when told to) never reports: its error, after what it sent before."""
        for wid, w in enumerate(self.workers):
            code = getattr(w, "exitcode", None)
            if code is not None:
                try:
                    return self.sink.get(True, 1.0)
                except queue.Empty:
                    return ("err", wid, f"DGS {self.label!r}: worker {self.names[wid]!r} "
                                        f"(process {w.pid}) died with exit code {code} before "
                                        f"it finished its input")
        return None

    def close(self) -> None:
        for box in self.inboxes:
            box.put(STOP)
        for w in self.workers:
            w.join(timeout=10)
            if isinstance(w, multiprocessing.process.BaseProcess) and w.is_alive():
                w.terminate()


def spawn(mode: str, program: Any, plan: Any, trace: Any, states: List[Any], epoch: Any,
          rng: Optional[random.Random] = None) -> Any:
    """The transport for `mode` (simulated, threads or processes), its workers reading
    `epoch`'s input."""
    if mode == "simulated":
        return Simulated(program, plan, trace, states, epoch, rng)
    if mode in ("threads", "processes"):
        return _Spawned(program, plan, trace, states, epoch, mode == "processes")
    raise ValueError(f"unknown DGS transport {mode!r}: simulated, threads or processes")
