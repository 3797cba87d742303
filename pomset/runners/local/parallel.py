"""The ordered-parallel executor (Prasaad et al., "Scaling Ordered Stream Processing on
Shared-Memory Multicores"): the sequential executor's results, with the stateless steps run
by several workers.

Every bundle the driver hands over, and every step of its own (a clock tick, a watermark
move), is a unit with a serial number. A bundle whose consumers include stateless steps
(ParDos without side inputs, WindowInto, Flatten) is worked on by the workers, which run it
through their own copies of the stateless steps it reaches and note, in the order the
sequential executor would make them, what those steps emit and what they hand to the other
steps. Units then leave through the non-blocking reorder buffer in serial order to the
release, which one worker at a time runs: it counts what the stateless steps did, records
what is recorded, and runs the rest of the pipeline on what they handed over, as the
sequential executor would. So every stateful step sees the same calls in the same order, and
the output is the sequential executor's.

The workers' work is a board of operators, each with its worklist (`runtime/ordered/schedule`):
with threads, one per stateless step (a task is one part of a bundle given to that step; what
it hands to another stateless step becomes a task there, its events kept in their place), the
release, and the buckets of partitioned groupings; a free worker asks the board, and the
`--schedule` policy (the paper's CT, LP, QST or ET) picks the operator it serves for one time
slice. With processes, a bundle goes through every stateless step it reaches in one process,
while a thread waits for it.

Workers are threads (`--worker_mode=threads`: they overlap work that releases the GIL, Arrow
and numpy, and the driver's reading) or processes (`processes`: for Python-bound steps; they
are forked once per run and each keeps its copies of the steps). In `auto` mode, the default,
workers are threads and take only the bundles that reach a step releasing the GIL (a batched
DoFn, a columnar step); the others run inline, in order, as the sequential executor runs them,
since threads would only contend for the interpreter over them. A DoFn is copied for each
worker, as Beam deserializes one per worker; its `teardown` runs on the thread workers' copies
at the end of the run, and on the process workers' never (Beam's teardown is best-effort).
"""
from __future__ import annotations

import copy
import multiprocessing
import multiprocessing.util
import threading
from concurrent.futures import Executor, ProcessPoolExecutor
from functools import partial
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...runtime.ordered import NonBlockingReorder
from ...runtime.ordered.schedule import DEFAULT_POLICY, Board, Operator, policy_named
from ...sdk.errors import PipelineConstructionError
from ...runtime.metrics import add_counts
from ...runtime.packing import pack, unpack
from ...runtime.partitioned import PartitionedHost, new_buckets
from .executor import SequentialExecutor, handoffs
from .lanes import Failed, LanePool, ProcessLanes, RemoteInstances, ThreadLanes
from .stages import (AssignWindowsStage, FlattenStage, GroupStage, ParDoStage, Stage,
                     stage_for)
from .templates import TemplateStage

#: units in flight per worker: enough to keep every worker busy while the next in order runs
UNITS_PER_WORKER = 4
#: buckets per worker thread of a partitioned grouping: enough that a hot key's bucket leaves
#: the others to spread over the rest of the workers
BUCKETS_PER_THREAD = 4

_EMIT, _HAND, _SUB = 0, 1, 2


def runs_anywhere(stage: Stage) -> bool:
    """Whether a stage is stateless, so that any worker may run any of its bundles."""
    return (type(stage) in (ParDoStage, AssignWindowsStage, FlattenStage)
            and not stage.node.side_inputs)


def releases_gil(stage: Stage) -> bool:
    """Whether a stateless stage spends its time where threads run in parallel: a batched
    DoFn (numpy, pandas, Arrow over whole batches) or a columnar step (Arrow compute)."""
    return isinstance(stage, ParDoStage) and (stage.runner.batch is not None
                                              or stage.native is not None)


def worker_copy(node: Any) -> Any:
    """The node with a DoFn of its own (functions are shared: they keep no state)."""
    t = node.transform
    if not node.has_dofn:
        return node
    try:
        fn = copy.deepcopy(t.fn)
    except Exception as e:
        raise PipelineConstructionError(
            f"{node.label}: its DoFn cannot be copied for each worker ({e}); run it with "
            "--workers=1 or keep only copyable things on the DoFn") from e
    mine = copy.copy(t)
    mine.fn = fn
    return node.with_transform(mine)


def hand_on(bundle: Any, consumers: List[tuple], events: list, copies: Dict[int, Stage],
            spawn: Optional[Callable[..., None]]) -> None:
    """Hand a bundle to its consumers as the sequential executor would, noting in `events`
    what happens: a consumer with a copy here runs it now (`spawn` None) or in a task of its
    own (`spawn(stage index, input, part, events of the task)`, its place in `events` kept
    by the task's own list); a hand-over to any other stage is noted for the release."""
    for consumer, index, part in handoffs(bundle, consumers):
        mine = copies.get(consumer.index)
        if mine is None:
            events.append((_HAND, consumer.index, index, part))
        elif spawn is None:
            mine.receive(index, part)
        else:
            child: list = []
            events.append((_SUB, child))
            spawn(consumer.index, index, part, child)


def flatten(events: list) -> list:
    """The events of a unit in the sequential executor's order: each task's in its place."""
    out: list = []
    stack = [iter(events)]
    while stack:
        for event in stack[-1]:
            if event[0] == _SUB:
                stack.append(iter(event[1]))
                break
            out.append(event)
        else:
            stack.pop()
    return out


class _Worker:
    """One worker's copies of the stateless stages, and the events the sequential executor
    would make of what they are given: emissions of the stateless stages (`_EMIT`, stage
    index, tag, the bundle or, where nothing records it, its size) and hand-overs to the
    other stages (`_HAND`, stage index, input, part). A worker process runs a bundle through
    every stateless stage it reaches (`run`); a worker thread runs one stage on one part
    (`task`), and what that stage hands to another stateless stage becomes a task of its own
    (`_SUB`: the new task's events, in their place)."""

    def __init__(self, executor: "ParallelExecutor") -> None:
        self.stages = executor.stages
        self.consumers = executor.consumers
        self.recorded = executor.recorded
        self.copies: Dict[int, Stage] = {}
        for i, stage in enumerate(self.stages):
            if id(stage) in executor.on_worker:
                mine = stage_for(worker_copy(stage.node), self, None)
                mine.owned = stage.owned
                mine.index = i
                self.copies[i] = mine
        self.pardos = {i: mine for i, mine in self.copies.items()
                       if isinstance(mine, ParDoStage)}
        for mine in self.copies.values():
            mine.start()
        self.events: list = []
        self.spawn: Optional[Callable[..., None]] = None
        self.emitted = 0

    def run(self, index: int, tag: Optional[str], bundle: Any) -> Tuple[list, Dict[int, int]]:
        """A bundle `index`'s output `tag` emitted, through every stateless stage it reaches."""
        self.events = []
        self._hand(self.stages[index], tag, bundle)
        return self.events, self._tallies()

    def task(self, i: int, index: int, part: Any, events: list,
             spawn: Callable[..., None]) -> Dict[int, int]:
        """Stage `i`'s copy given `part` on input `index`, its events into `events`."""
        self.events, self.spawn = events, spawn
        try:
            self.copies[i].receive(index, part)
        finally:
            self.spawn = None
        return self._tallies()

    def _tallies(self) -> Dict[int, Dict[str, Any]]:
        """What the copies of ParDo stages counted (dead letters, user metrics) since the
        last call, by stage."""
        out = {}
        for i, mine in self.pardos.items():
            tallies = mine.take_tallies()
            if tallies:
                out[i] = tallies
        return out

    def deliver(self, stage: Stage, tag: Optional[str], bundle: Any) -> None:
        """A copy emitted: note it, then hand it on as the sequential executor would."""
        i = stage.index
        out = self.stages[i].node.outputs[tag]
        self.events.append((_EMIT, i, tag, bundle if id(out) in self.recorded else len(bundle)))
        self.emitted += len(bundle)
        self._hand(self.stages[i], tag, bundle)

    def _hand(self, stage: Stage, tag: Optional[str], bundle: Any) -> None:
        hand_on(bundle, self.consumers[id(stage)][tag], self.events, self.copies, self.spawn)

    def finish(self) -> None:
        for mine in self.copies.values():
            mine.finish()


_process_worker: Optional[_Worker] = None


def _start_process(executor: "ParallelExecutor") -> None:
    """A worker process's copies of the stateless stages, finished (their DoFns and
    CombineFns torn down) when the process exits."""
    global _process_worker
    _process_worker = _Worker(executor)
    multiprocessing.util.Finalize(None, _process_worker.finish, exitpriority=10)


def _run_in_process(index: int, tag: Optional[str], bundle: Any) -> Tuple[list, Dict[int, int]]:
    try:
        events, tallies = _process_worker.run(index, tag, unpack(bundle))
    except BaseException as e:
        raise Failed(e) from None
    return [(kind, i, key, pack(part)) for kind, i, key, part in events], tallies


class _Unit:
    """A bundle the driver handed over, on its way to the release: its serial number, the
    events its tasks note, the tasks not yet finished, what their ParDo stages counted, the first error."""

    __slots__ = ("serial", "stage", "tag", "bundle", "events", "pending", "tallies", "error")

    def __init__(self, serial: int, stage: Stage, tag: Optional[str], bundle: Any) -> None:
        self.serial = serial
        self.stage = stage
        self.tag = tag
        self.bundle = bundle
        self.events: list = []
        self.pending = 1
        self.tallies: Dict[int, Dict[str, Any]] = {}
        self.error: Optional[BaseException] = None


class ParallelExecutor(SequentialExecutor):
    """The sequential executor's interface and results, its stateless steps run by `workers`
    threads or processes (`mode`), the worker threads' next operator picked by the
    `schedule` policy, units released in order by a `NonBlockingReorder`."""

    def __init__(self, record: Dict[int, list], workers: int, mode: str = "threads",
                 schedule: str = DEFAULT_POLICY, seed: int = 0) -> None:
        super().__init__(record)
        self.workers = workers
        self.mode = mode
        self.policy = policy_named(schedule, seed)
        self.recorded = set(record)
        self.window = UNITS_PER_WORKER * workers
        # one slot more than the units in flight: a unit counts as released while it runs,
        # before the buffer moves on from its slot
        self.reorder = NonBlockingReorder(self.window + 1, self._ready)
        self.issued = 0
        self.released = 0
        self.error: Optional[BaseException] = None
        self.changed = threading.Condition()
        self.units = threading.Lock()
        self.local = threading.local()
        self.board: Optional[Board] = None
        self.threads: List[threading.Thread] = []
        self.thread_workers: List[_Worker] = []
        self.process_pool: Optional[Executor] = None
        # the stages that run on workers (stateless ones; in `auto` mode, only those from
        # which a bundle reaches a stage that releases the GIL), and per (stage, tag) its
        # consumers among them
        self.on_worker: set = set()
        self.inside: Dict[Tuple[int, Optional[str]], List[Stage]] = {}
        self.lane_pool: Optional[LanePool] = None

    def wire(self, stages: List[Stage]) -> None:
        super().wire(stages)
        for i, stage in enumerate(self.stages):
            stage.index = i
        self.on_worker = {id(s) for s in self.stages if runs_anywhere(s) and (
            self.mode != "auto" or any(releases_gil(r) for r in self._reached(s)))}
        for stage in self.stages:
            for tag, consumers in self.consumers[id(stage)].items():
                self.inside[id(stage), tag] = [c for c, _ in consumers if id(c) in self.on_worker]
        # partitioned groupings: their buckets on the workers, where threads or processes
        # were asked for (in `auto` mode the kernel's Python would only contend for the GIL);
        # template steps of several instances: those in worker processes
        grouped = [s for s in self.stages if isinstance(s, GroupStage) and s.partitions()
                   and self.mode != "auto"]
        deployed = [s for s in self.stages if isinstance(s, TemplateStage) and not s.through
                    and s.deployment.n > 1 and self.mode == "processes"]
        if not self.on_worker and not grouped and not deployed:
            return
        for stage in self.stages:   # fail here, naming the step, rather than in a worker
            if id(stage) in self.on_worker:
                worker_copy(stage.node)
        if self.on_worker or (grouped and self.mode == "threads"):
            # the release and the workers' operators; with nothing to run beside it, the
            # driver's thread runs everything itself, in order
            self.board = Board(self.policy)
            self.board.in_flight = self.window
            self.releaser = self.board.add(Operator("release", len(self.stages), 1,
                                                    self._releases))
        if self.mode == "processes":
            if "fork" not in multiprocessing.get_all_start_methods():
                raise PipelineConstructionError(
                    "--worker_mode=processes needs the fork start method, which this platform "
                    "lacks; use --worker_mode=threads")
            # fork the workers now, before the run starts threads of its own (Kafka clients)
            if grouped or deployed:
                self.lane_pool = LanePool(self.workers, self)
            for stage in grouped:
                stage.host = PartitionedHost(self.workers,
                                             ProcessLanes(self.lane_pool, stage.index))
            for stage in deployed:
                RemoteInstances(self.lane_pool, stage.index).attach(stage.deployment)
            threads = 0
            if self.on_worker:
                self.process_pool = ProcessPoolExecutor(
                    self.workers, multiprocessing.get_context("fork"),
                    initializer=_start_process, initargs=(self,))
                self.process_pool.submit(len, ()).result()
                first = min(s.index for s in self.stages if id(s) in self.on_worker)
                self.segments = self.board.add(Operator("stateless steps", first, self.workers,
                                                        self._segments))
                threads = self.workers + 1
        else:
            for stage in grouped:
                buckets = new_buckets(stage.new_host, BUCKETS_PER_THREAD * self.workers)
                stage.host = PartitionedHost(len(buckets),
                                             ThreadLanes(buckets, self.workers, self.help))
            self.operators = {s.index: self.board.add(
                Operator(s.node.label, s.index, self.workers, self._tasks))
                for s in self.stages if id(s) in self.on_worker}
            for i, op in self.operators.items():
                op.outputs = [self.operators.get(c.index, self.releaser)
                              for cs in self.consumers[id(self.stages[i])].values()
                              for c, _ in cs]
            self.helpers = self.board.add(Operator("grouping buckets", len(self.stages) - 0.5,
                                                   self.workers, self._helps, urgent=True))
            self.worker_stages = {s.index: s for s in self.stages if id(s) in self.on_worker}
            self.thread_workers = [_Worker(self) for _ in range(self.workers)]
            threads = self.workers
        for n in range(threads):
            worker = self.thread_workers[n] if n < len(self.thread_workers) else None
            thread = threading.Thread(target=self._serve, args=(worker,),
                                      name=f"pomset-worker-{n}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def _reached(self, first: Stage) -> List[Stage]:
        """The stateless stages a bundle `first` takes goes through on a worker: `first` and,
        on from it, the consumers that run anywhere too."""
        seen: Dict[int, Stage] = {}
        todo = [first]
        while todo:
            stage = todo.pop()
            if id(stage) in seen:
                continue
            seen[id(stage)] = stage
            for consumers in self.consumers[id(stage)].values():
                todo.extend(c for c, _ in consumers if runs_anywhere(c))
        return list(seen.values())

    def _serve(self, worker: Optional[_Worker]) -> None:
        self.local.worker = worker
        self.board.serve()

    def _sending(self) -> bool:
        return getattr(self.local, "sending", False)

    def help(self, fn: Callable[..., None], *args: Any) -> None:
        """Have a worker thread run `fn(*args)`: work a release waits for (grouping buckets)."""
        self.board.put(self.helpers, partial(fn, *args), 1)

    def deliver(self, stage: Stage, tag: Optional[str], bundle: Any) -> None:
        if self._sending() or self.board is None:
            super().deliver(stage, tag, bundle)
            return
        if not self.inside[id(stage), tag]:
            self.serial(partial(SequentialExecutor.deliver, self, stage, tag, bundle))
            return
        unit = _Unit(self._issue(), stage, tag, bundle)
        self.board.enter(len(bundle))
        if self.mode == "processes":
            self.board.put(self.segments, unit, len(bundle))
            return
        hand_on(bundle, self.consumers[id(stage)][tag], unit.events, self.worker_stages,
                partial(self._spawn, unit))
        self._task_done(unit, {})

    def _spawn(self, unit: _Unit, i: int, index: int, part: Any, events: list) -> None:
        with self.units:
            unit.pending += 1
        self.board.put(self.operators[i], (unit, i, index, part, events), len(part))

    def _tasks(self, items: list) -> int:
        """A worker thread's slice of one stateless stage's tasks."""
        worker = self.local.worker
        worker.emitted = 0
        for unit, i, index, part, events in items:
            tallies: Dict[int, Dict[str, Any]] = {}
            if unit.error is None:
                try:
                    tallies = worker.task(i, index, part, events, partial(self._spawn, unit))
                except BaseException as e:
                    unit.error = unit.error or e
            self._task_done(unit, tallies)
        return worker.emitted

    def _task_done(self, unit: _Unit, tallies: Dict[int, Dict[str, Any]]) -> None:
        """One of a unit's tasks finished: when it was the last, the unit goes to be sent."""
        with self.units:
            for i, counts in tallies.items():
                add_counts(unit.tallies.setdefault(i, {}), counts)
            unit.pending -= 1
            if unit.pending:
                return
        if unit.error is not None:
            self._send(unit.serial, _raiser(unit.error), 1)
        else:
            self._send(unit.serial, partial(self._replay, unit.stage, unit.tag, unit.bundle,
                                            flatten(unit.events), unit.tallies), len(unit.bundle))

    def _segments(self, units: list) -> int:
        """A worker thread's slice of bundles for the worker processes: each through every
        stateless stage it reaches, in a process, while the thread waits."""
        emitted = 0
        for unit in units:
            try:
                events, tallies = self.process_pool.submit(
                    _run_in_process, unit.stage.index, unit.tag, pack(unit.bundle)).result()
            except BaseException as e:
                self._send(unit.serial, _raiser(e.unwrap() if isinstance(e, Failed) else e), 1)
                continue
            events = [(kind, i, key, unpack(part)) for kind, i, key, part in events]
            emitted += sum(len(part) if kind == _EMIT and not isinstance(part, int) else
                           part if kind == _EMIT else 0 for kind, _, _, part in events)
            self._send(unit.serial, partial(self._replay, unit.stage, unit.tag, unit.bundle,
                                            events, tallies), len(unit.bundle))
        return emitted

    def _helps(self, calls: list) -> int:
        for call in calls:
            call()
        return 0

    def serial(self, step: Any) -> None:
        if self.board is None or self._sending():   # no workers: nothing to keep in order with
            step()
            return
        self._send(self._issue(), step, 1)

    def propagate(self) -> None:
        self.serial(super().propagate)

    def set_processing_time(self, pt: int) -> None:
        self.serial(partial(super().set_processing_time, pt))

    def quiesce(self) -> None:
        with self.changed:
            self.changed.wait_for(lambda: self.released == self.issued)
        if self.error is not None:
            raise self.error

    def shutdown(self) -> None:
        if self.board is not None:
            self.board.close()
            for thread in self.threads:
                thread.join()
            self.threads = []
        if self.process_pool is not None:
            self.process_pool.shutdown(wait=True, cancel_futures=True)
            self.process_pool = None
        if self.lane_pool is not None:
            self.lane_pool.shutdown()
            self.lane_pool = None
        for worker in self.thread_workers:
            worker.finish()
        self.thread_workers = []

    def _issue(self) -> int:
        """The next serial number, once the ring has room for it."""
        with self.changed:
            self.changed.wait_for(lambda: self.issued - self.released < self.window
                                  or self.error is not None)
            if self.error is not None:
                raise self.error
            self.issued += 1
            return self.issued

    def _send(self, serial: int, unit: Any, size: int) -> None:
        if not self.reorder.send(serial, (unit, size)):   # `_issue` keeps units in the ring
            raise RuntimeError(f"unit {serial} fell outside the reorder buffer's ring")

    def _ready(self, sent: Tuple[Any, int]) -> None:
        """The reorder buffer's downstream: the next unit in order, to the release's worklist."""
        unit, size = sent
        self.board.put(self.releaser, unit, size)

    def _releases(self, units: list) -> int:
        """The release (one worker at a time): units run in serial order, through every stage
        the workers do not run."""
        for unit in units:
            self._release(unit)
        return 0

    def _replay(self, root: Stage, tag: Optional[str], bundle: Any, events: list,
                tallies: Dict[int, Dict[str, Any]]) -> None:
        """What the workers noted, done to the real stages in the order it was noted."""
        stages = self.stages
        self._note(root, tag, bundle)
        self._count_received(root, tag, len(bundle))
        for kind, i, key, part in events:
            stage = stages[i]
            if kind == _HAND:
                stage.receive(key, part)
                continue
            n = part if isinstance(part, int) else len(part)
            stage.emitted[key] += n
            if not isinstance(part, int):
                self._note(stage, key, part)
            self._count_received(stage, key, n)
        for i, counts in tallies.items():
            stages[i].add_tallies(counts)
        if self.on_bundle is not None:
            self.on_bundle()

    def _note(self, stage: Stage, tag: Optional[str], bundle: Any) -> None:
        """Record what a stage emitted in a worker, where its output is recorded."""
        record = self.recording(stage, tag)
        if record is not None:
            for _ in handoffs(bundle, [], record):
                pass

    def _count_received(self, stage: Stage, tag: Optional[str], n: int) -> None:
        """The workers' copies received `n` elements of `stage`'s output `tag`: count them on
        the real stages."""
        for consumer in self.inside[id(stage), tag]:
            consumer.received += n

    def _release(self, unit: Any) -> None:
        """Run a unit on the release's thread."""
        if self.error is None:
            self.local.sending = True
            try:
                unit()
            except BaseException as e:
                self.error = e
            finally:
                self.local.sending = False
        with self.changed:
            self.released += 1
            self.changed.notify_all()


def _raiser(error: BaseException) -> Any:
    def unit() -> None:
        raise error
    return unit

