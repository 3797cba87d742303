"""PTransform: the unit of pipeline construction; primitives become graph nodes."""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional


class PTransform:
    """A transform from PCollections to PCollections. Composites implement `expand`;
    apply with `pcoll | t`, `pcoll.apply(t)`, or label it with `"Name" >> t`."""

    #: its label, where given; a class default, for a subclass that never calls __init__
    label: Optional[str] = None

    def __init__(self, label: Optional[str] = None) -> None:
        self.label = label

    def default_label(self) -> str:
        return type(self).__name__

    def expand(self, pvalue: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement expand(pvalue)")

    def with_input_types(self, *hints: Any, **keyword_hints: Any) -> "PTransform":
        """Beam's type hint for the input (and side inputs), kept in `type_hints` but not
        checked: pomset learns element kinds and schemas from the data. Returns self, as
        Beam's does."""
        self.type_hints = {**getattr(self, "type_hints", {}), "input": (hints, keyword_hints)}
        return self

    def with_output_types(self, hint: Any) -> "PTransform":
        """Beam's type hint for the output, kept in `type_hints` but not checked (see
        `with_input_types`). Returns self, as Beam's does."""
        self.type_hints = {**getattr(self, "type_hints", {}), "output": hint}
        return self

    def __ror__(self, left: Any) -> Any:
        from .pipeline import Pipeline, pipeline_of
        from .pvalue import PBegin, PCollection, PValue
        if isinstance(left, Pipeline):
            return left.apply(self, PBegin(left))
        if isinstance(left, (PValue, dict)):
            return pipeline_of(left).apply(self, left)
        items = left if isinstance(left, (list, tuple)) else list(left)
        if items and all(isinstance(p, PCollection) for p in items):
            return pipeline_of(items).apply(self, items)
        from .eager import apply_eagerly   # plain values: Beam's eager application
        return apply_eagerly(self, items)

    def __rrshift__(self, label: str) -> "PTransform":
        if not isinstance(label, str):
            return NotImplemented
        labeled = copy.copy(self)
        labeled.label = label
        return labeled


class Primitive(PTransform):
    """A transform a runner executes directly. `outputs(node)` builds its output PCollections
    (tag None is the main output) after `validate(node)` checked its inputs."""

    #: the output tag its dead letters go to, where it sends them one (`with_exception_handling`)
    dead_letter_tag: Optional[str] = None

    def validate(self, node: Any) -> None:
        pass

    def outputs(self, node: Any) -> Dict[Optional[str], Any]:
        raise NotImplementedError

    def result(self, node: Any) -> Any:
        return node.outputs[None]

    def side_inputs(self) -> List[Any]:
        return []

    def plan_kind(self) -> Optional[str]:
        """The execution-plan node this primitive lowers to (`sdk.plan_kinds`); None for one
        no runner executes."""
        return None
