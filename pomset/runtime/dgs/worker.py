"""A DGS worker (the paper's Sec. 3.4, event processing) as a state machine over messages, so
one implementation runs on every transport: the tests' simulated network with random delays,
threads, and processes.

A leaf updates its state with each event its mailbox releases. A worker with children, to
handle an event (its own, or a join request from its parent), first sends its children join
requests and waits for their states; it joins them, then either updates the joined state with
its event and forks it back down, or sends it up and waits for its parent's forked state,
which it forks down. After each turn a worker tells its children how far its channels have
come (they may not pass a join request still to come) and the sink how far it is done.

A worker reads its own channels' events from the epoch's input (`feed`). Messages are tuples:
`("jr", key, tag)` and `("pg", low)` from the parent, `("st", child, state)` from a child,
`("fk", state)` from the parent, `("snap", key)` to the root from the deployment. To the sink
(`SINK`): `("out", worker, [(key, n, output), ...])`, `("done", worker,
frontier, events read)`, `("snap", state)`."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from .mailbox import PARENT, Mailbox

#: the destination of outputs and progress reports
SINK = -1
#: slices of input a worker may hold unreleased: reading on while it waits for a join
#: (parsing a stream it reads itself is much of its work) keeps it busy
READ_AHEAD = 8


class _Snap:
    """The tag of a checkpoint's join request: it depends on every tag."""

    def __repr__(self) -> str:
        return "SNAPSHOT"

    def __reduce__(self) -> Any:
        return (_snap, ())


SNAP = _Snap()


def _snap() -> _Snap:
    return SNAP


class WorkerCore:
    """Worker `wid` of `plan` running `program`, starting from `state`; `send(dest, msg)`
    carries its messages (dest: a worker's index or SINK)."""

    def __init__(self, program: Any, plan: Any, wid: int, trace: Any, state: Any,
                 send: Callable[[int, tuple], None]) -> None:
        node = plan.workers[wid]
        self.wid = wid
        self.name = node.name
        self.label = program.label
        self.send = send
        self.parent = plan.parent[wid]
        self.children = plan.children(wid)
        self.update = program.update_of(plan.state_type(program, wid))
        if self.children:
            kids = [plan.state_type(program, c) for c in self.children]
            self.fj = program.fork_join(plan.state_type(program, wid), *kids)
            self.preds = [plan.workers[c].subtree_tags() for c in self.children]

        def depends(a: Any, b: Any) -> bool:
            return a is SNAP or b is SNAP or trace.depends(a, b)
        self.depends = depends
        self.inputs = node.tags
        self.parent_tags = None if self.parent is None else frozenset(
            t for a in plan.ancestors(wid) for t, _ in plan.workers[a].tags)
        self.mailbox: Any = None
        self.state = state
        self.feeder: Any = None
        self.turn: Optional[Tuple[str, Any]] = None   # what the worker waits for, with its event
        self.states: Dict[int, Any] = {}
        self.told = (-1, -1)   # the progress last sent to the children and to the sink
        self.read = 0   # input events read

    def start(self, epoch: Any) -> None:
        """Begin reading the worker's channels from the epoch's input (`EpochInput`, or
        `StreamInput`: streams it reads itself), and report where it stands (a worker with no
        channels has nothing to wait for). The input names the channels: one per
        implementation tag, or per stream of one."""
        self.mailbox = Mailbox(epoch.channels(self.inputs), self.parent_tags, self.depends,
                               total=bool(self.children))
        self.feeder = epoch.feeder(self.mailbox.tags)
        self._pump()

    def can_feed(self) -> bool:
        """Whether the worker has input left to read and room for it (it reads a slice when
        it has less than `READ_AHEAD` buffered, or when a channel still to read holds it
        back)."""
        feeder = self.feeder
        return not feeder.done and (self.mailbox.pending() < READ_AHEAD * feeder.epoch.slice
                                    or feeder.behind(self.mailbox.frontier()))

    def feed(self) -> None:
        """Read the next slice of the worker's channels into its mailbox, with a heartbeat at
        the slice's end on each, then handle what that releases."""
        for it, events, low in self.feeder.next():
            self.read += len(events)
            self.mailbox.put(it, events, low)
        self._pump()

    def on(self, msg: tuple) -> None:
        """Take one message, then release and handle all the mailbox allows."""
        kind = msg[0]
        if kind == "jr":
            # a later request has a greater key, except after a checkpoint's: its key is the
            # next input event's, which may be an ancestor's and bring a request of that key
            low = msg[1] if msg[2] is SNAP else msg[1] + 1
            self.mailbox.put(PARENT, [(msg[1], msg[2], None)], low)
        elif kind == "pg":
            self.mailbox.put(PARENT, [], msg[1])
        elif kind == "st":
            self.states[msg[1]] = msg[2]
            if len(self.states) == len(self.children):
                self._joined()
        elif kind == "fk":
            self.turn = None
            self._fork_down(msg[1])
        elif kind == "snap":   # sent to the root only when every worker is done up to msg[1]
            self._start(("snap", (msg[1], SNAP, None)))
        else:
            raise ValueError(f"worker {self.name!r}: unknown message {kind!r}")
        self._pump()

    def _pump(self) -> None:
        mailbox = self.mailbox
        while self.turn is None:
            if self.children:
                event, request = mailbox.release_one()
                if event is None:
                    break
                self._start(("parent" if request else "own", event))
                continue
            events, request = mailbox.release()
            if events:
                self._update(events)
            if request is not None:
                self._start(("parent", request))
            elif not events:
                break
        self._report()

    def _update(self, events: list) -> None:
        update, state = self.update, self.state
        outs: List[Any] = []
        emit = outs.append
        produced: List[tuple] = []
        for event in events:
            key, tag, value = event
            try:
                state = update(state, tag, value, emit)
            except Exception as exc:
                raise DGSUserError(self.label, self.name, event, exc) from exc
            if outs:
                produced.extend((key, n, o) for n, o in enumerate(outs))
                outs.clear()
        self.state = state
        if produced:
            self.send(SINK, ("out", self.wid, produced))

    def _start(self, turn: Tuple[str, Any]) -> None:
        """Begin handling an event that needs the children's states (or, at a leaf, the
        parent's join request)."""
        self.turn = turn
        key, tag, _ = turn[1]
        if not self.children:
            self.states = {}
            self._joined_state(self.state)
            return
        self.states = {}
        for c in self.children:
            self.send(c, ("jr", key, tag))

    def _joined(self) -> None:
        left, right = (self.states[c] for c in self.children)
        try:
            joined = self.fj.join(left, right)
        except Exception as exc:
            raise DGSUserError(self.label, self.name, self.turn[1], exc, "join") from exc
        self.states = {}
        self._joined_state(joined)

    def _joined_state(self, state: Any) -> None:
        kind, event = self.turn
        if kind == "own":
            self.state = state
            self._update([event])
            self.turn = None
            self._fork_down(self.state)
        elif kind == "snap":
            self.turn = None
            self.send(SINK, ("snap", state))
            self._fork_down(state)
        else:
            self.state = None
            self.send(self.parent, ("st", self.wid, state))
            # the turn ends when the parent's forked state comes back ("fk")

    def _fork_down(self, state: Any) -> None:
        if not self.children:
            self.state = state
            return
        try:
            left, right = self.fj.fork(state, *self.preds)
        except Exception as exc:
            raise DGSUserError(self.label, self.name, None, exc, "fork") from exc
        self.state = None
        for c, s in zip(self.children, (left, right)):
            self.send(c, ("fk", s))

    def _report(self) -> None:
        # a checkpoint's request may still come, at the epoch's end
        frontier = min(self.mailbox.frontier(), self.feeder.epoch.end)
        if self.children and frontier > self.told[0]:
            for c in self.children:
                self.send(c, ("pg", frontier))
        done = frontier if self.turn is None else min(frontier, self.turn[1][0])
        if done > self.told[1]:
            self.send(SINK, ("done", self.wid, done, self.read))
        self.told = (max(self.told[0], frontier), max(self.told[1], done))


class DGSUserError(Exception):
    """A program's function failed: the step, the worker, the event and the traceback."""

    def __init__(self, label: str, worker: str, event: Any, exc: BaseException,
                 function: str = "update") -> None:
        import traceback
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        where = "" if event is None else f" on event {event[1]!r}: {event[2]!r}"
        super().__init__(f"DGS {label!r}: {function} failed in worker {worker!r}{where}: "
                         f"{type(exc).__name__}: {exc}\n\nOriginal traceback:\n{tb}")
