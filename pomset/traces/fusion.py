"""Which Sorts a runner fuses into the operator that follows (as the paper's Storm backend
does): a Sort whose output only one keyed template reads. That template sorts each block
itself, per instance, and the Sort's own step passes its items straight through."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .templates import TemplateStep


class Fusion:
    """The fused Sorts of a pipeline, by node."""

    def __init__(self, nodes: Any) -> None:
        self._order: Dict[int, Callable[[Any], Any]] = {}
        self._through: set = set()
        for node in nodes:
            step = node.transform
            if not isinstance(step, TemplateStep) or step.sort is None:
                continue
            out = node.outputs[None]
            if len(out.consumers) != 1:
                continue
            (consumer,) = out.consumers
            follow = consumer.transform
            if (isinstance(follow, TemplateStep) and follow.sort is None
                    and follow.kind() != "stateless" and consumer.side_inputs == []):
                self._order[id(consumer)] = step.sort
                self._through.add(id(node))

    def sort_of(self, node: Any) -> Optional[Callable[[Any], Any]]:
        """The order a fused Sort before this node imposes, if any."""
        return self._order.get(id(node))

    def passes_through(self, node: Any) -> bool:
        """Whether this node is a Sort fused into its consumer."""
        return id(node) in self._through

    def feeder(self, node: Any) -> Optional[Any]:
        """The template step whose output this template step reads directly (looking through
        a fused Sort), if any: its markers all reach this one."""
        up = node.inputs[0].producer if node.inputs else None
        if up is not None and self.passes_through(up):
            up = up.inputs[0].producer
        if up is None or not isinstance(up.transform, TemplateStep):
            return None
        return up
