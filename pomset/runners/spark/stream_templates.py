"""Typed declarations and template steps on the Spark streaming bus. A typed declaration
passes its elements on with their marker range; a template step runs per bucket of its keys
in `transformWithState` (`stateful.TemplateProcessor`), except a fused Sort, which passes its
items through, and a stateless step without an on_marker, an element-wise map. `register`
adds the translators to a streaming table (`extensions.streaming_table`), so that
`streaming.py` names none of these steps."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ...runtime.deployment import Deployment, as_elements, as_items
from ...runtime.plan import PlanNode, TranslatorTable, kinds
from .stateful import TemplateProcessor
from .streaming import BusStep, StreamingPlan
from .templates import check_order


def register(table: TranslatorTable) -> None:
    """Add the typed-declaration and template-step translators to a Spark streaming table."""
    table.register(kinds.TYPED, _typed)
    table.register(kinds.TEMPLATE, _template)


def _typed(node: PlanNode, plan: StreamingPlan) -> BusStep:
    return BusStep(op=lambda: plan.op(node, None, lambda tag, owned: owned, ranges=True))


def _template(node: PlanNode, plan: StreamingPlan) -> BusStep:
    t, label = node.transform, node.label
    stateless = t.kind() == "stateless"
    through = plan.fusion.passes_through(node)
    if not (t.template.marks() if stateless else not through):
        if through:
            return BusStep(op=lambda: plan.op(node, None, lambda tag, owned: owned))
        return BusStep(op=lambda: plan.op(node, lambda: _TemplateMapFn(t, label),
                                          lambda tag, owned: True))
    check_order(node, plan.fusion, chains=False)
    sort = plan.fusion.sort_of(node)

    def processor(ins: List[str], channels: List[List[str]], outs: Dict[Optional[str], str],
                  retained: List[str], group: str) -> Any:
        return TemplateProcessor(label, t, sort, ins, channels, outs[None], retained, group)
    # a stateless step with an on_marker runs once per marker: one bucket
    return BusStep(processor=processor, key_of=_key_of(t), spans=True,
                   buckets=1 if stateless else t.parallelism)


def _key_of(t: Any) -> Callable[[Any], Any]:
    """The key of an element of a template step's input."""
    if t.kind() == "stateless":
        return lambda value: None   # one instance, for its on_marker
    key_value = t.input_trace.type.key_value

    def template_key(value: Any) -> Any:
        try:
            return key_value(value)[0]
        except Exception:
            return None   # not a pair: its step names the malformed item
    return template_key


class _TemplateMapFn:
    """A stateless template step as an element-wise map (its items do not wait for blocks)."""

    def __init__(self, step: Any, label: str) -> None:
        self.deployment = Deployment(step, label, parallelism=1, stage_markers=False)

    def __call__(self, elements: list, owned: bool) -> Dict[Optional[str], list]:
        return {None: as_elements(self.deployment.map_all(as_items(elements)))}

    def finish(self) -> None:
        pass
