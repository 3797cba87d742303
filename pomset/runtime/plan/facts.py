"""What lowering learns of a node, by its kind: the facts a runner's columnar path and stages
read from the plan node instead of the transform."""
from __future__ import annotations

from typing import Any, Dict

from .. import columnar
from .kinds import ASSIGN_WINDOWS, DGS_READ, DRIVER_READ, ELEMENTWISE, GROUP, KAFKA_READ, READ, SINK


def facts(kind: str, node: Any) -> Dict[str, Any]:
    """The fields of a `PlanNode` beyond the graph node's own, for a node of `kind`."""
    t = node.transform
    schema = node.inputs[0].schema if node.inputs else None
    out: Dict[str, Any] = dict(schema=schema, dead_letter_tag=t.dead_letter_tag)
    if kind in (READ, DRIVER_READ, DGS_READ, KAFKA_READ):
        out.update(makes_bundles=t.makes_bundles, never_ends=t.never_ends)
    elif kind == ELEMENTWISE:
        simple = not node.side_inputs and len(node.outputs) == 1
        out.update(passes_elements=t.call == "filter", has_dofn=t.call == "dofn",
                   native=simple and columnar.native_step(t, schema) is not None)
    elif kind == ASSIGN_WINDOWS:
        out["native"] = columnar.native_windows(t) is not None
    elif kind == GROUP:
        main = node.inputs[0]
        out.update(strategy=main.windowing, reducer=t.reducer,
                   native=columnar.native_combine(t, main.windowing, main.may_retract))
    elif kind == SINK:
        out["native"] = hasattr(t.writer_class, "write_arrow")
    return out
