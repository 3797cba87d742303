"""The local runner's stage for `OPlus`: its inputs sorted by timestamp as their watermarks
pass (the input gate takes sorted streams), fed to a `VSNDeployment`, its outputs emitted as
they become ready. The instance count changes at run time by `request` (a running pipeline's
`set_parallelism`) or by the elastic controller (`--elastic`), which compares the instances'
busy time with the time that passed."""
from __future__ import annotations

import time
from bisect import bisect_left
from typing import Any, Dict, List, Optional

from ...runtime.ordered.vsn import VSNDeployment, elastic_target
from ...runtime.plan import OPLUS
from ...windowing import GLOBAL_WINDOW, MAX_MICROS, MIN_MICROS, NO_FIRING, WindowedValue
from .stages import STAGES, DeploymentStage, Stage

#: seconds between the elastic controller's looks at the load
ELASTIC_INTERVAL = 1.0


class OPlusStage(DeploymentStage):
    """One OPlus step, deployed by VSN parallelism."""

    state = Stage.state + ("buffers", "released", "late")

    def __init__(self, node: Any, executor: Any) -> None:
        super().__init__(node, executor)
        n = len(node.inputs)
        self.deployment = VSNDeployment(node.transform, node.label, n)
        self.buffers: List[list] = [[] for _ in range(n)]
        self.released = [float("-inf")] * n
        self.late = 0
        self.elastic: Optional[float] = None   # the controller's interval, when on
        self._looked = (time.monotonic(), 0.0)

    def receive(self, index: int, bundle: list) -> None:
        self.received += len(bundle)
        released, buffer = self.released[index], self.buffers[index]
        for wv in bundle:
            if wv.ts < released:
                self.late += 1   # its place in the sorted input has passed: dropped, counted
            else:
                buffer.append((wv.ts, wv.value))

    def advance(self) -> None:
        deployment = self.deployment
        for i in range(len(self.buffers)):
            wm = self.in_wms[i]
            if wm <= self.released[i]:
                continue
            buffer = self.buffers[i]
            buffer.sort(key=_ts)   # stable: ties keep their arrival order
            cut = bisect_left(buffer, wm, key=_ts)
            deployment.add(i, buffer[:cut])
            self.buffers[i] = buffer[cut:]
            deployment.advance(i, wm)
            self.released[i] = wm
        if self.elastic is not None:
            self._control()
        raw = WindowedValue.raw
        self.emit(None, [raw(item, ts, GLOBAL_WINDOW, NO_FIRING, 1)
                         for ts, item in deployment.run()])

    def request(self, n: int) -> None:
        """Run with `n` instances from the first watermark past the current one."""
        self.deployment.request(n)

    def _control(self) -> None:
        """The elastic controller: every interval, the instances' busy time over the time that
        passed is the load; outside the thresholds, ask for the count that fits it."""
        now, busy = time.monotonic(), self.deployment.load()
        then, was = self._looked
        if now - then < self.elastic:
            return
        self._looked = (now, busy)
        d = self.deployment
        n = d.parallelism if not d.controls else d.controls[-1][1]
        want = elastic_target((busy - was) / (now - then), n, d.max)
        if want != n:
            d.request(want)

    def hold(self) -> int:
        hold = self.deployment.hold()
        return int(min(MAX_MICROS, max(MIN_MICROS, hold)))

    def finish(self) -> None:
        self.deployment.close()

    def abort(self) -> None:
        self.deployment.close()

    def metrics(self) -> Dict[str, int]:
        out = super().metrics()
        d = self.deployment
        out.update(instances=d.parallelism, reconfigurations=len(d.reconfigurations),
                   late=self.late, dropped=self.late)
        return out


def _ts(row: tuple) -> int:
    return row[0]


STAGES.register(OPLUS, lambda node, executor, build: OPlusStage(node, executor))
