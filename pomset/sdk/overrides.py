"""Beam's API over a built pipeline's graph: `pipeline.replace_all(overrides)` puts, for each
application a `PTransformOverride` matches, another transform in its place, reading the same
inputs and read by the same consumers; `pipeline.visit(visitor)` shows a `PipelineVisitor`
every application and PCollection. `AppliedPTransform` is what they see of an application
(Beam's record of it)."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple


class AppliedPTransform:
    """One application of a transform, a composite or a primitive: its full label, the
    transform, its main inputs (`inputs`), its side inputs, what it gave (`result`; by tag,
    `outputs`), and the primitive steps (`nodes`) it made, in the order the pipeline holds
    them."""

    def __init__(self, full_label: str, transform: Any, inputs: Tuple[Any, ...],
                 scope: List[str]) -> None:
        self.full_label = full_label
        self.transform = transform
        self.inputs = inputs
        #: the labels of the composites it was applied in (where a replacement goes)
        self.scope = scope
        self.result: Any = None
        self.nodes: List[Any] = []

    @property
    def outputs(self) -> Dict[Any, Any]:
        """Its output PCollections by tag (None: a single output; a tuple's by position)."""
        from .pvalue import DoOutputsTuple, PCollection
        result = self.result
        if isinstance(result, PCollection):
            return {None: result}
        if isinstance(result, DoOutputsTuple):
            return result.tagged()
        if isinstance(result, dict):
            return dict(result)
        if isinstance(result, (tuple, list)):
            return dict(enumerate(result))
        return {}

    @property
    def side_inputs(self) -> Tuple[Any, ...]:
        """The side-input views it reads (a primitive's; a composite's are its steps')."""
        if len(self.nodes) == 1 and self.nodes[0].transform is self.transform:
            return tuple(self.nodes[0].side_inputs)
        return ()

    def __str__(self) -> str:
        return f"AppliedPTransform({self.full_label}, {type(self.transform).__name__})"


class PipelineVisitor:
    """Beam's visitor of a pipeline's graph (`pipeline.visit(visitor)`), outermost first:
    `enter_composite_transform` and `leave_composite_transform` around what a composite
    applied, `visit_transform` for each primitive, `visit_value` for each PCollection a
    primitive gives (with the application that gave it). Override those it needs."""

    def enter_composite_transform(self, transform_node: AppliedPTransform) -> None:
        pass

    def leave_composite_transform(self, transform_node: AppliedPTransform) -> None:
        pass

    def visit_transform(self, transform_node: AppliedPTransform) -> None:
        pass

    def visit_value(self, value: Any, producer_node: AppliedPTransform) -> None:
        pass


class PTransformOverride:
    """Beam's override: `matches(applied)` says whether to replace an application, and
    `get_replacement_transform_for_applied_ptransform(applied)` (by default
    `get_replacement_transform(applied.transform)`) gives what replaces it, applied to
    `get_replacement_inputs(applied)` (by default its inputs, then its side inputs')."""

    def matches(self, applied_ptransform: AppliedPTransform) -> bool:
        raise NotImplementedError(f"{type(self).__name__} must implement matches")

    def get_replacement_transform_for_applied_ptransform(
            self, applied_ptransform: AppliedPTransform) -> Any:
        return self.get_replacement_transform(applied_ptransform.transform)

    def get_replacement_transform(self, ptransform: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement "
                                  f"get_replacement_transform(_for_applied_ptransform)")

    def get_replacement_inputs(self, applied_ptransform: AppliedPTransform) -> Tuple[Any, ...]:
        return tuple(applied_ptransform.inputs) + tuple(
            side.pvalue for side in applied_ptransform.side_inputs)


def output_pairs(old: Any, new: Any) -> List[Tuple[Any, Any]]:
    """(old PCollection, the PCollection of `new` in its place), for each PCollection of an
    application's output `old`: matched as they stand, by tag (a dict, multiple outputs) or
    by position (a tuple)."""
    from .pvalue import DoOutputsTuple, PCollection
    if isinstance(old, PCollection):
        if not isinstance(new, PCollection):
            raise TypeError(f"the replacement gives {new!r} where the replaced transform "
                            f"gave one PCollection")
        return [(old, new)]
    if isinstance(old, (DoOutputsTuple, dict)):
        items = old.tagged() if isinstance(old, DoOutputsTuple) else old
        pairs = []
        for tag, pcoll in items.items():
            try:
                part = new[tag]
            except (KeyError, TypeError, AttributeError):
                if pcoll.consumers:
                    raise KeyError(f"the replacement gives no output tagged {tag!r}, which "
                                   f"{pcoll.consumers[0].label} reads") from None
                continue
            pairs += output_pairs(pcoll, part)
        return pairs
    if isinstance(old, (tuple, list)):
        return [pair for o, n in zip(old, new) for pair in output_pairs(o, n)]
    return []
