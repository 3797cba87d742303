"""Beam's `WaitOn`: a PCollection passed through unchanged once other PCollections are
complete (in each window), so a step after it runs only after theirs — the others as side
inputs of a pass-through Map, which does not process an element before they are ready."""
from __future__ import annotations

from typing import Any, Iterator

from .core import FlatMap, Map
from .ptransform import PTransform
from .pvalue import AsList, PCollection


def _nothing(_: Any) -> Iterator[Any]:
    return iter(())


def _first(element: Any, *_: Any) -> Any:
    return element


class WaitOn(PTransform):
    """Beam's `WaitOn(*to_be_waited_on)`: the input, unchanged, each window's elements
    passed on once every one of `to_be_waited_on` is complete in that window."""

    def __init__(self, *to_be_waited_on: PCollection) -> None:
        super().__init__()
        self.to_be_waited_on = to_be_waited_on

    def expand(self, pcoll: PCollection) -> PCollection:
        sides = [AsList(side | f"WaitOn{i}" >> FlatMap(_nothing))
                 for i, side in enumerate(self.to_be_waited_on)]
        return pcoll | "Wait" >> Map(_first, *sides)
