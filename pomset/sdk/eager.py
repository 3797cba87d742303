"""Beam's eager application: a transform applied to plain values (`[1, 2, 3] | Map(f)`)
runs at once, in a pipeline of its own on the local runner, and gives its output as a list,
as in Beam's interactive use and its documentation's examples."""
from __future__ import annotations

from typing import Any, List


def apply_eagerly(transform: Any, values: Any) -> List[Any]:
    """The elements `transform` outputs for the input `values`, computed now."""
    from .core import Create
    from .pipeline import Pipeline
    from .pvalue import PCollection
    pipeline = Pipeline(runner="local")
    out = pipeline | "Create" >> Create(values) | transform
    if not isinstance(out, PCollection):
        raise TypeError(f"eager application of {transform.default_label()} gives "
                        f"{type(out).__name__}, not one PCollection: apply it in a Pipeline")
    out.keep()
    return [wv.value for wv in pipeline.run().collect(out)]
