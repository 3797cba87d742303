"""The local runner's stages for typed steps: a template step hosts its `Deployment` (its
parallel instances, split by key or in turn, merged block by block) and feeds it the stage's
elements, input watermark and the marker range of the typed steps upstream; a `Typed`
declaration passes its elements on and keeps their range."""
from __future__ import annotations

import random
from typing import Any, Dict, Optional

from ...runtime.fusion import Fusion
from ...runtime.deployment import Deployment, as_elements, as_items, time_range
from ...runtime.markers import MarkerRange
from ...runtime.plan import TEMPLATE, TYPED
from ...windowing import MAX_MICROS
from .stages import STAGES, DeploymentStage, FlattenStage, Stage


class TypedStage(FlattenStage):
    """pm.Typed: elements pass through; the earliest and latest timestamps seen are its
    edge's marker range for the template steps downstream."""

    state = Stage.state + ("range",)

    def __init__(self, node: Any, executor: Any) -> None:
        super().__init__(node, executor)
        self.range = MarkerRange()

    def receive(self, index: int, bundle: list) -> None:
        self.range = self.range | time_range(bundle)
        super().receive(index, bundle)

    def span(self) -> MarkerRange:
        return self.range


class TemplateStage(DeploymentStage):
    """One template step. A Sort fused into the step after it passes its items through."""

    state = Stage.state + ("finished",)

    def __init__(self, node: Any, executor: Any, fusion: Fusion, seed: Optional[int]) -> None:
        super().__init__(node, executor)
        self.through = fusion.passes_through(node)
        rng = None if seed is None else random.Random(f"{seed}/{node.label}")
        self.deployment = Deployment(node.transform, node.label, rng=rng,
                                     sort=fusion.sort_of(node))
        self.sources = fusion.range_sources(node)
        self.finished = False

    def receive(self, index: int, bundle: list) -> None:
        self.received += len(bundle)
        if self.through:
            self.emit(None, bundle)
            return
        if self.deployment.open is None:   # its first marker may depend on the range
            self._hint()
        self._emit(self.deployment.receive(as_items(bundle)))

    def advance(self) -> None:
        if self.through or self.finished:
            return
        self._hint()
        wm = min(self.in_wms)
        if wm >= MAX_MICROS:
            self.finished = True
            self._emit(self.deployment.finish())
        else:
            self._emit(self.deployment.advance(wm))

    def _hint(self) -> None:
        """Give the deployment the marker ranges of the typed steps upstream."""
        if self.sources:
            producer = self.executor.producer_of
            self.deployment.hint([producer[id(n.outputs[None])].span() for n in self.sources])

    def span(self) -> MarkerRange:
        return self.deployment.span()

    def _emit(self, outs: list) -> None:
        self.emit(None, as_elements(outs))

    def makes_fresh(self, tag: Optional[str]) -> bool:
        return not self.through or self.owned

    def hold(self) -> int:
        hold = self.deployment.hold()
        return MAX_MICROS if hold is None else hold

    def metrics(self) -> Dict[str, int]:
        out = super().metrics()
        out.update(instances=self.deployment.n, late=self.deployment.late)
        return out


STAGES.register(TEMPLATE, lambda node, executor, build: TemplateStage(node, executor,
                                                                       build.fusion, build.seed))
STAGES.register(TYPED, lambda node, executor, build: TypedStage(node, executor))
