"""The local runner's stage for a template step: hosts the step's `Deployment` (its parallel
instances, split by key or in turn, merged block by block) and feeds it the stage's elements
and input watermark."""
from __future__ import annotations

import random
from typing import Any, Dict, Optional

from ...traces.fusion import Fusion
from ...traces.runtime import Deployment
from ...windowing import GLOBAL_WINDOW, MAX_MICROS, NO_FIRING, WindowedValue
from .stages import Stage


class TemplateStage(Stage):
    """One template step. A Sort fused into the step after it passes its items through."""

    def __init__(self, node: Any, executor: Any, fusion: Fusion, seed: Optional[int]) -> None:
        super().__init__(node, executor)
        self.through = fusion.passes_through(node)
        rng = None if seed is None else random.Random(f"{seed}/{node.label}")
        self.deployment = Deployment(node.transform, node.label, rng=rng,
                                     sort=fusion.sort_of(node))
        self.feeder = fusion.feeder(node)
        self.finished = False

    def receive(self, index: int, bundle: list) -> None:
        self.received += len(bundle)
        if self.through:
            self.emit(None, bundle)
            return
        self._emit(self.deployment.receive([(wv.ts, wv.value) for wv in bundle]))

    def advance(self) -> None:
        if self.through or self.finished:
            return
        wm = min(self.in_wms)
        if wm >= MAX_MICROS:
            self.finished = True
            self._emit(self.deployment.finish(self._feeder_end()))
        else:
            self._emit(self.deployment.advance(wm))

    def _feeder_end(self) -> Optional[int]:
        """The last marker of the template step feeding this one (it ended first)."""
        if self.feeder is None:
            return None
        stage = self.executor.producer_of[id(self.feeder.outputs[None])]
        return stage.deployment.end

    def _emit(self, outs: list) -> None:
        raw = WindowedValue.raw
        self.emit(None, [raw(item, ts, GLOBAL_WINDOW, NO_FIRING, 1) for ts, item in outs])

    def makes_fresh(self, tag: Optional[str]) -> bool:
        return not self.through or self.owned

    def hold(self) -> int:
        hold = self.deployment.hold()
        return MAX_MICROS if hold is None else hold

    def snapshot(self) -> Dict[str, Any]:
        return dict(super().snapshot(), deployment=self.deployment.snapshot(),
                    finished=self.finished)

    def restore(self, state: Dict[str, Any]) -> None:
        state = dict(state)
        self.deployment.restore(state.pop("deployment"))
        super().restore(state)

    def metrics(self) -> Dict[str, int]:
        out = super().metrics()
        out.update(instances=self.deployment.n, late=self.deployment.late)
        return out
