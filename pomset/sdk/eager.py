"""A transform applied to something other than a Pipeline or PCollection, as Beam's: to
tuples and dicts of PCollections (`(pc1, pc2) | Flatten()`), in their pipeline; and to plain
values (`[1, 2, 3] | Map(f)`, `([1, 2], [3]) | Flatten()`), which run at once, in a pipeline
of their own on the local runner, giving each output PCollection as a list, as in Beam's
interactive use and its documentation's examples."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Dict, List

from .errors import PipelineConstructionError
from .type_hints import TypeCheckError


def apply_to_pvalueish(transform: Any, left: Any) -> Any:
    """`left | transform`: the parts of `left` (`transform.input_pvalues`) that are
    plain values become Creates in the pipeline of its PCollections (a new one when it has
    none, run at once); the output, where the pipeline ran, has lists for PCollections."""
    from .core import Create
    from .pipeline import Pipeline
    from .pvalue import DoOutputsTuple, PValue
    if left is None:   # what a composite whose expand returns nothing (Beam's PDone) gives
        label = transform.label or transform.default_label()
        raise TypeCheckError(f"{label} was applied to the output of a transform that gives "
                             f"no PCollection (its expand returned None, a PDone): apply it "
                             f"to a PCollection")
    if isinstance(left, DoOutputsTuple):
        left = tuple(left)
    elif isinstance(left, Iterable) and not isinstance(left, (tuple, list, dict, str, bytes)):
        items = list(left)   # an iterator, a set, a dict's values: read once
        left = tuple(items) if items and all(isinstance(p, PValue) for p in items) else items
    pvalueish, parts = transform.input_pvalues(left)
    pipelines = []
    for part in parts:
        if isinstance(part, PValue) and all(part.pipeline is not p for p in pipelines):
            pipelines.append(part.pipeline)
    if len(pipelines) > 1:
        raise PipelineConstructionError("PCollections from different pipelines cannot be "
                                        "combined (mixing values in different pipelines is "
                                        "not allowed)")
    eager = bool(parts) and not pipelines
    if eager:
        pipeline = Pipeline(runner="local")
    elif pipelines:
        pipeline = pipelines[0]
    elif transform.pipeline is not None:
        pipeline = transform.pipeline
    else:
        label = transform.label or transform.default_label()
        raise ValueError(f'"{label}" requires a pipeline to be specified as there are no '
                         f"deferred inputs.")
    created = {id(part): pipeline | f"CreatePInput{i}" >> Create(part)
               for i, part in enumerate(parts)
               if not isinstance(part, PValue) and part is not None}
    out = pipeline.apply(transform, _replaced(pvalueish, created))
    if not eager:
        return out
    outputs = list(_pcollections(out))
    for pcoll in outputs:
        pcoll.keep()
    result = pipeline.run()
    values = {id(pc): [wv.value for wv in result.collect(pc)] for pc in outputs}
    return _materialized(out, values)


def _replaced(pvalueish: Any, created: Dict[int, Any]) -> Any:
    """`pvalueish` with each part in `created` (by id) replaced by its PCollection."""
    if id(pvalueish) in created:
        return created[id(pvalueish)]
    return _rebuilt(pvalueish, lambda part: _replaced(part, created))


def _rebuilt(value: Any, each: Any) -> Any:
    """`value` with `each` applied to what its tuples (named ones as such), lists and dicts
    hold; anything else as it is."""
    if isinstance(value, dict):
        return {k: each(v) for k, v in value.items()}
    if isinstance(value, list):
        return [each(v) for v in value]
    if isinstance(value, tuple):
        items = [each(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value


def _pcollections(out: Any) -> Any:
    """The PCollections in a transform's output (in its tuples, lists, dicts and multiple
    outputs)."""
    from .pvalue import DoOutputsTuple, PCollection
    if isinstance(out, PCollection):
        yield out
    elif isinstance(out, DoOutputsTuple):
        unpacked = list(out)
        yield from unpacked + [pc for pc in out.by_tag().values()
                               if all(pc is not u for u in unpacked)]
    elif isinstance(out, dict):
        for v in out.values():
            yield from _pcollections(v)
    elif isinstance(out, (list, tuple)):
        for v in out:
            yield from _pcollections(v)


def _materialized(out: Any, values: Dict[int, List[Any]]) -> Any:
    """The output with each PCollection replaced by the list of its elements."""
    from .pvalue import DoOutputsTuple, PCollection
    if isinstance(out, PCollection):
        return values[id(out)]
    if isinstance(out, DoOutputsTuple):
        return EagerOutputs([values[id(pc)] for pc in out],
                            {tag: values[id(pc)] for tag, pc in out.by_tag().items()})
    return _rebuilt(out, lambda part: _materialized(part, values))


class EagerOutputs(tuple):
    """What an eagerly applied multi-output transform gives: its outputs' elements, unpacked
    as its outputs are, and each output's by its tag (`out.tag`, `out['tag']`; a KeyError
    for a tag it has no output of)."""

    def __new__(cls, ordered: List[Any], by_tag: Dict[str, List[Any]]) -> "EagerOutputs":
        out = super().__new__(cls, ordered)
        out.outputs_by_tag = by_tag
        return out

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return self.outputs_by_tag[key]
            except KeyError:
                raise KeyError(f"Tag {key!r} is not a defined output tag; the outputs are "
                               f"{list(self.outputs_by_tag)}") from None
        return super().__getitem__(key)

    def __getattr__(self, tag: str) -> Any:
        if tag.startswith("_") or tag == "outputs_by_tag":
            raise AttributeError(tag)
        return self[tag]
