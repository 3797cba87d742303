"""The local runner's stage for a DGS step: it hosts the step's `DGSDeployment`, giving it the
items as they come and the input watermark as it moves (its heartbeats); or, right after a
`pm.dgs.ReadStreams` it alone reads, the streams themselves, which the plan's workers read
each its own (the source stage then reads nothing). With one worker, or
in the default `auto` worker mode, it runs the sequential program: a plan's worker
processes pay only where an update costs several µs (`BENCHMARKS.md`, DGS), so they are asked
for, with `--worker_mode=processes` (a synchronization plan with a leaf per worker, its
workers forked processes) or `--worker_mode=threads` (the same on threads, for updates that
release the GIL). Items behind the watermark are dropped and counted."""
from __future__ import annotations

import random
from typing import Any, Dict

from ...runtime.dgs.deployment import DGSDeployment
from ...runtime.plan import DGS, DGS_READ
from ...windowing import GLOBAL_WINDOW, MAX_MICROS, NO_FIRING, WindowedValue
from .stages import STAGES, DeploymentStage, SourceStage, Stage


class DGSStage(DeploymentStage):
    """One DGS step."""

    state = Stage.state + ("released", "late")

    def __init__(self, node: Any, executor: Any, seed: Any = None) -> None:
        super().__init__(node, executor)
        step = node.transform
        workers = getattr(executor, "workers", 1)
        mode = getattr(executor, "mode", "auto")
        if workers == 1 or mode == "auto":
            workers, transport = 1, "inline"
        else:
            transport = mode
        rng = None if seed is None else random.Random(f"{seed}/{node.label}")
        self.deployment = DGSDeployment(step.program, step.trace, leaves=workers,
                                        mode="simulated" if rng is not None else transport,
                                        rng=rng)
        self.released = float("-inf")
        self.late = 0
        self.streams: Any = None   # the source this step reads itself, if any

    def start(self) -> None:
        (pc,) = self.node.inputs
        (source,) = self.executor.inputs_of[id(self)]
        if (source.node.kind == DGS_READ and len(pc.consumers) == 1
                and id(pc) not in self.executor.record):
            source.read_by = self.label
            self.streams = source

    def receive(self, index: int, bundle: list) -> None:
        self.received += len(bundle)
        released = self.released
        items = [(wv.ts, wv.value) for wv in bundle if wv.ts >= released]
        # an item behind the watermark: its place in the sorted input has passed (dropped)
        self.late += len(bundle) - len(items)
        self.deployment.extend(items)

    def advance(self) -> None:
        wm = min(self.in_wms)
        if wm <= self.released:
            return
        self.released = wm
        if self.streams is not None:
            outs = self._read_streams() if wm >= MAX_MICROS else []
        else:
            outs = self.deployment.finish() if wm >= MAX_MICROS else self.deployment.advance(wm)
        raw = WindowedValue.raw
        self.emit(None, [raw(out, ts, GLOBAL_WINDOW, NO_FIRING, 1) for ts, out in outs])

    def _read_streams(self) -> list:
        t = self.streams.node.transform
        outs = self.deployment.run_streams(t.streams, t.rates())
        source = self.streams
        self.received = source.read_count = source.emitted[None] = sum(self.deployment.read)
        return outs

    def finish(self) -> None:
        self.deployment.close()

    def abort(self) -> None:
        self.deployment.close()

    def metrics(self) -> Dict[str, int]:
        out = super().metrics()
        plan = self.deployment.plan
        out.update(workers=0 if plan is None else len(plan.workers), late=self.late,
                   dropped=self.late)
        return out


STAGES.register(DGS, lambda node, executor, build: DGSStage(node, executor, build.seed))
STAGES.register(DGS_READ, lambda node, executor, build: SourceStage(node, executor))
