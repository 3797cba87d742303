"""The ordered-parallel executor (Prasaad et al., "Scaling Ordered Stream Processing on
Shared-Memory Multicores"): the sequential executor's results, with the stateless steps run
by several workers.

Every bundle the driver hands over, and every step of its own (a clock tick, a watermark
move), is a unit with a serial number. A bundle whose consumers include stateless steps
(ParDos without side inputs, WindowInto, Flatten) goes to a worker, which runs it through its
own copies of every stateless step it reaches and notes, in the order the sequential executor
would make them, what those steps emit and what they hand to the other steps. Units then
leave through the non-blocking reorder buffer in serial order: the thread that sends them
(whichever worker finished the next one, or the driver) counts what the stateless steps did,
records what is recorded, and runs the rest of the pipeline on what they handed over, as the
sequential executor would. So every stateful step sees the same calls in the same order, and
the output is the sequential executor's.

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
import threading
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from functools import partial
from typing import Any, Dict, List, Optional, Tuple

from ...runtime.ordered import NonBlockingReorder
from ...sdk.errors import PipelineConstructionError
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

_EMIT, _HAND = 0, 1


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
    if getattr(t, "call", None) != "dofn":
        return node
    try:
        fn = copy.deepcopy(t.fn)
    except Exception as e:
        raise PipelineConstructionError(
            f"{node.label}: its DoFn cannot be copied for each worker ({e}); run it with "
            "--workers=1 or keep only copyable things on the DoFn") from e
    mine = copy.copy(t)
    mine.fn = fn
    copied = copy.copy(node)
    copied.transform = mine
    return copied


class _Worker:
    """One worker's copies of the stateless stages. `run` takes a bundle a driver-side stage
    emitted and returns the events the sequential executor would have made of it: emissions of
    the stateless stages (`_EMIT`, stage index, tag, the bundle or, where nothing records it,
    its size) and hand-overs to the other stages (`_HAND`, stage index, input, part)."""

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
        self.runners = {i: mine.runner for i, mine in self.copies.items()
                        if isinstance(mine, ParDoStage)}
        for mine in self.copies.values():
            mine.start()
        self.events: List[tuple] = []

    def run(self, index: int, tag: Optional[str], bundle: Any) -> Tuple[list, Dict[int, int]]:
        self.events = []
        self._hand(self.stages[index], tag, bundle)
        dead = {}
        for i, runner in self.runners.items():
            if runner.dead_count:
                dead[i] = runner.dead_count
                runner.dead_count = 0
        return self.events, dead

    def deliver(self, stage: Stage, tag: Optional[str], bundle: Any) -> None:
        """A copy emitted: note it, then hand it on as the sequential executor would."""
        i = stage.index
        out = self.stages[i].node.outputs[tag]
        self.events.append((_EMIT, i, tag, bundle if id(out) in self.recorded else len(bundle)))
        self._hand(self.stages[i], tag, bundle)

    def _hand(self, stage: Stage, tag: Optional[str], bundle: Any) -> None:
        for consumer, index, part in handoffs(bundle, self.consumers[id(stage)][tag]):
            mine = self.copies.get(consumer.index)
            if mine is not None:
                mine.receive(index, part)
            else:
                self.events.append((_HAND, consumer.index, index, part))

    def finish(self) -> None:
        for mine in self.copies.values():
            mine.finish()


_process_worker: Optional[_Worker] = None


def _start_process(executor: "ParallelExecutor") -> None:
    global _process_worker
    _process_worker = _Worker(executor)


def _run_in_process(index: int, tag: Optional[str], bundle: Any) -> Tuple[list, Dict[int, int]]:
    try:
        events, dead = _process_worker.run(index, tag, unpack(bundle))
    except BaseException as e:
        raise Failed(e) from None
    return [(kind, i, key, pack(part)) for kind, i, key, part in events], dead


class ParallelExecutor(SequentialExecutor):
    """The sequential executor's interface and results, its stateless steps run by `workers`
    threads or processes (`mode`), units released in order by a `NonBlockingReorder`."""

    def __init__(self, record: Dict[int, list], workers: int, mode: str = "threads") -> None:
        super().__init__(record)
        self.workers = workers
        self.mode = mode
        self.recorded = set(record)
        self.window = UNITS_PER_WORKER * workers
        # one slot more than the units in flight: a unit counts as released while it runs,
        # before the buffer moves on from its slot
        self.reorder = NonBlockingReorder(self.window + 1, self._release)
        self.issued = 0
        self.released = 0
        self.error: Optional[BaseException] = None
        self.changed = threading.Condition()
        self.local = threading.local()
        self.pool: Optional[Executor] = None
        self.thread_workers: List[_Worker] = []
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
            if self.on_worker:
                self.pool = ProcessPoolExecutor(self.workers,
                                                multiprocessing.get_context("fork"),
                                                initializer=_start_process, initargs=(self,))
                self.pool.submit(len, ()).result()
        else:
            for stage in grouped:
                buckets = new_buckets(stage.new_host, BUCKETS_PER_THREAD * self.workers)
                stage.host = PartitionedHost(len(buckets), ThreadLanes(buckets, self))
            self.pool = ThreadPoolExecutor(self.workers, "pomset-worker",
                                           initializer=self._start_thread)

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

    def _start_thread(self) -> None:
        worker = _Worker(self)
        self.local.worker = worker
        with self.changed:
            self.thread_workers.append(worker)

    def _run_in_thread(self, index: int, tag: Optional[str], bundle: Any) -> tuple:
        return self.local.worker.run(index, tag, bundle)

    def _sending(self) -> bool:
        return getattr(self.local, "sending", False)

    def deliver(self, stage: Stage, tag: Optional[str], bundle: Any) -> None:
        if self._sending() or self.pool is None:
            super().deliver(stage, tag, bundle)
            return
        if not self.inside[id(stage), tag]:
            self.serial(partial(SequentialExecutor.deliver, self, stage, tag, bundle))
            return
        serial = self._issue()
        if self.mode == "processes":
            future = self.pool.submit(_run_in_process, stage.index, tag, pack(bundle))
        else:
            future = self.pool.submit(self._run_in_thread, stage.index, tag, bundle)
        future.add_done_callback(lambda f: self._done(serial, stage, tag, bundle, f))

    def serial(self, step: Any) -> None:
        if self.pool is None or self._sending():   # no workers: nothing to keep in order with
            step()
            return
        self._send(self._issue(), step)

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
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
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

    def _send(self, serial: int, unit: Any) -> None:
        if not self.reorder.send(serial, unit):   # `_issue` keeps every unit within the ring
            raise RuntimeError(f"unit {serial} fell outside the reorder buffer's ring")

    def _done(self, serial: int, stage: Stage, tag: Optional[str], bundle: Any,
              future: Future) -> None:
        error = future.exception()
        if error is not None:
            if isinstance(error, Failed):
                error = error.unwrap()
            self._send(serial, _raiser(error))
            return
        events, dead = future.result()
        if self.mode == "processes":
            events = [(kind, i, key, unpack(part)) for kind, i, key, part in events]
        self._send(serial, partial(self._replay, stage, tag, bundle, events, dead))

    def _replay(self, root: Stage, tag: Optional[str], bundle: Any, events: list,
                dead: Dict[int, int]) -> None:
        """What a worker noted, done to the real stages in the order it was noted."""
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
        for i, n in dead.items():
            stages[i].runner.dead_count += n
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
        """Run a unit on the thread that sends (the reorder buffer's downstream)."""
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

