"""What runs a partitioned grouping's buckets, and a template step's instances, on the
parallel executor's workers (the runtime's `PartitionedHost` and `Deployment` ask; see
`pomset/runtime/partitioned.py` and `pomset/runtime/deployment.py`).

`ThreadLanes`: the buckets live in this process and any worker thread runs any bucket, one
at a time, through the paper's hybrid queue; the thread that asks runs buckets too, so it
never waits for a busy pool. `ProcessLanes`: each worker process owns a fixed share of every
grouping's buckets (bucket b on process b % workers), keeps their states, and gets only their
jobs: the partitioned scheme the paper compares against, the one that works across
processes, where Python-bound groupings run in parallel. `RemoteInstances`: a template step's
instances, instance i in process i % workers; the step's deployment hands stand-ins its items
and markers, and before each merge of their outputs one round trip runs them all, every
process its instances at once.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...runtime import combine_lifecycle
from ...runtime.ordered import HybridQueue, PartitionedQueue
from ...runtime.packing import pack, unpack
from ...runtime.partitioned import ELEMENTS, PARTIALS, SAVE, Bucket, Job

_UNSET: Any = object()


class Failed(Exception):
    """A worker process's error with its cause, which pickling an exception drops: the run
    fails with the user's exception as the error's cause, as it would at one worker."""

    def __init__(self, error: BaseException, cause: Optional[BaseException] = _UNSET) -> None:
        super().__init__(error, cause)
        self.error = error
        self.cause = error.__cause__ if cause is _UNSET else cause
        if cause is _UNSET:
            try:
                pickle.dumps(self.cause)
            except Exception:
                self.cause = None

    def __reduce__(self) -> tuple:
        return Failed, (self.error, self.cause)

    def unwrap(self) -> BaseException:
        if self.cause is not None:
            self.error.__cause__ = self.cause
        return self.error


class ThreadLanes:
    """A grouping's buckets in this process, run by `workers` threads (the asking one, and
    those `submit(fn, *args)` has run `fn(*args)`) through a `HybridQueue`; with
    `queue="partitioned"`, through the baseline that ties bucket b to worker b % workers (the
    asking thread is worker 0)."""

    def __init__(self, buckets: List[Bucket], workers: int, submit: Callable[..., Any],
                 queue: str = "hybrid") -> None:
        if queue not in ("hybrid", "partitioned"):
            raise ValueError(f"queue is 'hybrid' or 'partitioned', got {queue!r}")
        self.buckets = buckets
        self.workers = workers
        self.submit = submit
        self.queue = queue

    def run(self, jobs: List[Tuple[int, Job]]) -> List[Any]:
        if len(jobs) == 1 or self.workers == 1:
            return [self.buckets[b].serve(job) for b, job in jobs]
        replies: List[Any] = [None] * len(jobs)
        errors: Dict[int, BaseException] = {}
        left = [len(jobs)]
        finished = threading.Condition()

        def operate(b: int, item: Tuple[int, Job]) -> None:
            j, job = item
            try:
                replies[j] = self.buckets[b].serve(job)
            except BaseException as e:
                errors[j] = e
            with finished:
                left[0] -= 1
                if not left[0]:
                    finished.notify_all()

        workers, submit = self.workers, self.submit
        if self.queue == "hybrid":
            queue = HybridQueue(len(self.buckets))
            for j, (b, job) in enumerate(jobs):
                queue.add(b, (j, job))
            for _ in range(min(workers, len(jobs)) - 1):
                submit(queue.consume, operate)
            queue.consume(operate)
        else:
            fixed = PartitionedQueue(len(self.buckets), workers)
            for j, (b, job) in enumerate(jobs):
                fixed.add(b, (j, job))
            for w in {b % workers for b, _ in jobs} - {0}:
                submit(fixed.consume, w, operate)
            fixed.consume(0, operate)
        with finished:
            finished.wait_for(lambda: not left[0])
        if errors:
            raise errors[min(errors)]
        return replies


class LanePool:
    """`workers` forked processes, each serving the jobs of the buckets it owns, of every
    partitioned grouping (`ProcessLanes`), over a pipe of its own."""

    def __init__(self, workers: int, executor: Any) -> None:
        context = multiprocessing.get_context("fork")
        self.pipes = []
        self.processes = []
        for _ in range(workers):
            mine, theirs = context.Pipe()
            process = context.Process(target=_serve_lane, args=(theirs, executor, os.getpid()),
                                      daemon=True)
            process.start()
            theirs.close()
            self.pipes.append(mine)
            self.processes.append(process)

    def run(self, stage: int, jobs: List[Tuple[int, Job]]) -> List[Any]:
        """Buckets' jobs of a partitioned grouping (bucket b on process b % workers)."""
        replies = self.call(_BUCKETS, stage, [_packed_job(*job) for job in jobs])
        return [_unpacked_reply(job, reply) for (_, job), reply in zip(jobs, replies)]

    def call(self, kind: str, stage: int, jobs: List[Tuple[int, Any]]) -> List[Any]:
        """(part, job) pairs to the processes that own the parts (part p on p % workers), all
        at once; their replies in the same order. The first process's error is raised."""
        n = len(self.pipes)
        by_lane: Dict[int, List[int]] = {}
        for j, (part, _) in enumerate(jobs):
            by_lane.setdefault(part % n, []).append(j)
        for lane, js in by_lane.items():
            self.pipes[lane].send((kind, stage, [jobs[j] for j in js]))
        replies: List[Any] = [None] * len(jobs)
        error = None
        for lane, js in by_lane.items():
            try:
                ok, answer = self.pipes[lane].recv()
            except EOFError:
                raise RuntimeError(f"worker process {lane} exited (exit code "
                                   f"{self.processes[lane].exitcode})") from None
            if not ok:
                error = error or answer.unwrap()
                continue
            for j, reply in zip(js, answer):
                replies[j] = reply
        if error is not None:
            raise error
        return replies

    def shutdown(self) -> None:
        for pipe in self.pipes:
            try:
                pipe.send(None)
            except OSError:
                pass
        for process in self.processes:
            process.join(5)
            if process.is_alive():
                process.terminate()
        self.pipes, self.processes = [], []


class ProcessLanes:
    """One grouping's (stage `stage`'s) buckets on a `LanePool`."""

    def __init__(self, pool: LanePool, stage: int) -> None:
        self.pool = pool
        self.stage = stage

    def run(self, jobs: List[Tuple[int, Job]]) -> List[Any]:
        return self.pool.run(self.stage, jobs)


class _Channel:
    """An instance stand-in's output channel: what the instance emitted, brought back."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: List[Tuple[int, Any]] = []


class _StandIn:
    """An instance that runs in a worker process: takes items and markers until the flush."""

    def __init__(self, remote: "RemoteInstances", index: int) -> None:
        self.remote = remote
        self.index = index
        self.out = _Channel()
        self.commands: list = []

    def item(self, ts: int, key: Any, value: Any, element: Any) -> None:
        self.commands.append((ts, key, value, element))

    def marker(self, m: Any) -> None:
        self.commands.append(m)

    @property
    def states(self) -> Dict[Any, Any]:
        return self.remote.pool.call(_INSTANCES, self.remote.stage, [(self.index, _GET)])[0]

    @states.setter
    def states(self, states: Dict[Any, Any]) -> None:
        self.remote.pool.call(_INSTANCES, self.remote.stage, [(self.index, (_SET, states))])


class RemoteInstances:
    """A deployment's instances in a `LanePool`'s processes: `attach` replaces them with
    stand-ins and makes the deployment flush them before each merge."""

    def __init__(self, pool: LanePool, stage: int) -> None:
        self.pool = pool
        self.stage = stage
        self.stand_ins: List[_StandIn] = []

    def attach(self, deployment: Any) -> None:
        self.stand_ins = [_StandIn(self, i) for i in range(len(deployment.instances))]
        deployment.instances = self.stand_ins
        deployment.flush = self.flush

    def flush(self) -> None:
        busy = [s for s in self.stand_ins if s.commands]
        if not busy:
            return
        jobs = [(s.index, s.commands) for s in busy]
        for s in busy:
            s.commands = []
        for s, items in zip(busy, self.pool.call(_INSTANCES, self.stage, jobs)):
            s.out.items = items


_BUCKETS, _INSTANCES = "buckets", "instances"
_GET, _SET = "get states", "set states"


def _run_instance(instance: Any, commands: Any) -> Any:
    """An instance's share of a flush (items and markers in order; its outputs), or a
    request for its states."""
    if commands == _GET:
        return instance.states
    if type(commands) is tuple:
        instance.states = commands[1]
        return None
    for c in commands:
        if type(c) is tuple:
            instance.item(*c)
        else:
            instance.marker(c)
    items, instance.out.items = instance.out.items, []
    return items


def _packed_job(bucket: int, job: Job) -> Tuple[int, Job]:
    op = job[4]
    if op == ELEMENTS or op == PARTIALS:
        indices, elements = job[5]
        job = job[:5] + ((indices, pack(elements)),)
    return bucket, job


def _unpacked_reply(job: Job, reply: Any) -> Any:
    if job[4] == SAVE:
        return reply
    keys, panes = reply[0]
    return (list(zip(keys, unpack(panes))),) + tuple(reply[1:])


def _serve_lane(pipe: Any, executor: Any, parent: int) -> None:
    """A lane process: its buckets of every partitioned grouping, made on first use. It ends
    when the run's process does, even one killed without a word (other processes forked from
    it may hold the pipe's other end open). The CombineFns of its groupings are its own copies,
set up on a grouping's first job and torn down when it ends."""
    buckets: Dict[Tuple[int, int], Bucket] = {}
    combine_fns: List[Any] = []
    try:
        _serve_buckets(pipe, executor, parent, buckets, combine_fns)
    finally:
        combine_lifecycle.release(combine_fns)


def _serve_buckets(pipe: Any, executor: Any, parent: int, buckets: Dict[Tuple[int, int], Bucket],
                   combine_fns: List[Any]) -> None:
    """`_serve_lane`'s loop: jobs until the run ends; the CombineFns it set up into
    `combine_fns`."""
    seen: set = set()
    while True:
        while not pipe.poll(1.0):
            if os.getppid() != parent:
                return
        message = pipe.recv()
        if message is None:
            return
        kind, stage, jobs = message
        try:
            if kind == _INSTANCES:
                instances = executor.stages[stage].deployment.instances
                pipe.send((True, [_run_instance(instances[i], c) for i, c in jobs]))
                continue
            if stage not in seen:
                seen.add(stage)
                fns = executor.stages[stage].combine_fns
                combine_lifecycle.acquire(fns)
                combine_fns.extend(fns)
            replies = []
            for b, job in jobs:
                bucket = buckets.get((stage, b))
                if bucket is None:
                    bucket = buckets[stage, b] = Bucket(executor.stages[stage].new_host())
                op = job[4]
                if op == ELEMENTS or op == PARTIALS:
                    indices, columns = job[5]
                    job = job[:5] + ((indices, unpack(columns)),)
                reply = bucket.serve(job)
                if op != SAVE:
                    panes = reply[0]
                    reply = (([k for k, _ in panes], pack([p for _, p in panes])),) + reply[1:]
                replies.append(reply)
        except BaseException as e:
            pipe.send((False, Failed(e)))
            continue
        pipe.send((True, replies))
