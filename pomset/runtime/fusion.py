"""How a runner wires template steps: which Sorts it fuses into the operator that follows (as
the paper's Storm backend does: a Sort whose output only one keyed template reads; that
template sorts each block itself, per instance, and the Sort's own step passes its items
straight through), and which steps upstream a template step's markers come from."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from .plan import TEMPLATE, TYPED


class Fusion:
    """The fused Sorts of a pipeline, by node label (graph and plan nodes alike)."""

    def __init__(self, nodes: Any) -> None:
        self._order: Dict[str, Callable[[Any], Any]] = {}
        self._through: set = set()
        for node in nodes:
            step = node.transform
            if node.transform.plan_kind() != TEMPLATE or step.sort is None:
                continue
            out = node.outputs[None]
            if len(out.consumers) != 1:
                continue
            (consumer,) = out.consumers
            follow = consumer.transform
            if (consumer.transform.plan_kind() == TEMPLATE and follow.sort is None
                    and follow.kind() != "stateless" and consumer.side_inputs == []):
                self._order[consumer.label] = step.sort
                self._through.add(node.label)

    def sort_of(self, node: Any) -> Optional[Callable[[Any], Any]]:
        """The order a fused Sort before this node imposes, if any."""
        return self._order.get(node.label)

    def passes_through(self, node: Any) -> bool:
        """Whether this node is a Sort fused into its consumer."""
        return node.label in self._through

    def range_sources(self, node: Any) -> List[Any]:
        """The nearest typed declarations and template steps upstream of a template step
        (through any other steps, and fused Sorts): the markers of their edges reach it, so
        its markers cover their ranges (`Deployment.hint`)."""
        found, seen = [], set()
        stack = [pc.producer for pc in node.inputs]
        while stack:
            up = stack.pop()
            if up is None or id(up) in seen:
                continue
            seen.add(id(up))
            kind = up.transform.plan_kind()
            if kind == TYPED or (kind == TEMPLATE and not self.passes_through(up)):
                found.append(up)
            else:
                stack += [pc.producer for pc in up.inputs]
        return found
