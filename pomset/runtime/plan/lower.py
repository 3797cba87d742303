"""Lowering: a pipeline's graph becomes plan nodes once, each of the kind its primitive
declares (`Primitive.plan_kind`), with the element-wise chains a runner may fuse."""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Sequence, Tuple

from ...sdk.errors import PipelineConstructionError
from .chains import fused_chains
from .facts import facts
from .kinds import KINDS
from .node import PlanNode


def kind_of(node: Any) -> str:
    """The plan kind of a graph node's transform; a clear error naming the transform and its
    label where it declares none."""
    kind = node.transform.plan_kind()
    if kind not in KINDS:
        raise PipelineConstructionError(
            f"{type(node.transform).__name__} ({node.label}) declares no plan kind a runner "
            f"executes (plan_kind() gave {kind!r}; known: {', '.join(KINDS)})")
    return kind


def lower_node(node: Any) -> PlanNode:
    """One graph node as a plan node."""
    kind = kind_of(node)
    return PlanNode(kind=kind, graph=node, label=node.label, transform=node.transform,
                    inputs=list(node.inputs), outputs=dict(node.outputs),
                    side_inputs=list(node.side_inputs), **facts(kind, node))


class Plan:
    """A pipeline's plan nodes, in the graph's order (producers before consumers), and its
    fused element-wise chains."""

    def __init__(self, nodes: Sequence[PlanNode], recorded: Iterable[Any] = ()) -> None:
        self.nodes: List[PlanNode] = list(nodes)
        self._by_label: Dict[str, PlanNode] = {n.label: n for n in self.nodes}
        self.chains: List[Tuple[PlanNode, ...]] = fused_chains(self.nodes, recorded)
        self._chain_of = {n.label: chain for chain in self.chains for n in chain}

    def __iter__(self):
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def node(self, label: str) -> PlanNode:
        """The plan node of the step labelled `label`."""
        return self._by_label[label]

    def producer(self, pcoll: Any) -> PlanNode:
        """The plan node that produces `pcoll`."""
        return self._by_label[pcoll.producer.label]

    def chain_of(self, node: PlanNode) -> Tuple[PlanNode, ...]:
        """The fused chain an element-wise node belongs to (itself alone if it fuses with
        none); () for a node of another kind."""
        return self._chain_of.get(node.label, ())


def lower(pipeline: Any) -> Plan:
    """The plan of a pipeline: its nodes lowered, its chains found (a PCollection the run
    records ends a chain: the runner must keep its elements)."""
    return Plan([lower_node(n) for n in pipeline.nodes], pipeline.recorded())
