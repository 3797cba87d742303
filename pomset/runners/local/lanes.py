"""What runs a partitioned grouping's buckets on the parallel executor's workers (the
runtime's `PartitionedHost` asks; see `pomset/runtime/partitioned.py`).

`ThreadLanes`: the buckets live in this process and any worker thread runs any bucket, one
at a time, through the paper's hybrid queue; the thread that asks runs buckets too, so it
never waits for a busy pool. `ProcessLanes`: each worker process owns a fixed share of every
grouping's buckets (bucket b on process b % workers), keeps their states, and gets only their
jobs: the partitioned scheme the paper compares against, the one that works across
processes, where Python-bound groupings run in parallel.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
from typing import Any, Dict, List, Optional, Tuple

from ...runtime.ordered import HybridQueue, PartitionedQueue
from ...runtime.partitioned import ELEMENTS, PARTIALS, SAVE, Bucket, Job, pack, unpack

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
    """A grouping's buckets in this process, run by the executor's worker threads (its
    `pool`, `workers` of them) through a `HybridQueue`; with `queue="partitioned"`, through
    the baseline that ties bucket b to worker b % workers (the asking thread is worker 0)."""

    def __init__(self, buckets: List[Bucket], executor: Any, queue: str = "hybrid") -> None:
        if queue not in ("hybrid", "partitioned"):
            raise ValueError(f"queue is 'hybrid' or 'partitioned', got {queue!r}")
        self.buckets = buckets
        self.executor = executor
        self.queue = queue

    def run(self, jobs: List[Tuple[int, Job]]) -> List[Any]:
        pool = self.executor.pool
        if len(jobs) == 1 or pool is None:
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

        workers = self.executor.workers
        if self.queue == "hybrid":
            queue = HybridQueue(len(self.buckets))
            for j, (b, job) in enumerate(jobs):
                queue.add(b, (j, job))
            for _ in range(min(workers, len(jobs)) - 1):
                pool.submit(queue.consume, operate)
            queue.consume(operate)
        else:
            fixed = PartitionedQueue(len(self.buckets), workers)
            for j, (b, job) in enumerate(jobs):
                fixed.add(b, (j, job))
            for w in {b % workers for b, _ in jobs} - {0}:
                pool.submit(fixed.consume, w, operate)
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
        n = len(self.pipes)
        by_lane: Dict[int, List[int]] = {}
        for j, (b, _) in enumerate(jobs):
            by_lane.setdefault(b % n, []).append(j)
        for lane, js in by_lane.items():
            self.pipes[lane].send((stage, [_packed_job(*jobs[j]) for j in js]))
        replies: List[Any] = [None] * len(jobs)
        error = None
        for lane, js in by_lane.items():
            try:
                ok, answer = self.pipes[lane].recv()
            except EOFError:
                raise RuntimeError(f"worker process {lane} of a partitioned grouping exited "
                                   f"(exit code {self.processes[lane].exitcode})") from None
            if not ok:
                error = error or answer.unwrap()
                continue
            for j, reply in zip(js, answer):
                replies[j] = _unpacked_reply(jobs[j][1], reply)
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
    it may hold the pipe's other end open)."""
    buckets: Dict[Tuple[int, int], Bucket] = {}
    while True:
        while not pipe.poll(1.0):
            if os.getppid() != parent:
                return
        message = pipe.recv()
        if message is None:
            return
        stage, jobs = message
        try:
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
