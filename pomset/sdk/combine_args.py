"""Combining with extra arguments (Beam's `CombinePerKey(fn, *args, **kwargs)`): each key's
values grouped, then combined by one call of the CombineFn's methods per key and window,
with the arguments, side-input views among them read in that window."""
from __future__ import annotations

from typing import Any, Iterable

from .combinefn import CombineFn, as_combine_fn, combine_all
from .core import GroupByKey, ParDo
from .dofn import DoFn
from .kinds import KV
from .ptransform import PTransform
from .pvalue import PCollection


class _CombineGroup(DoFn):
    def __init__(self, fn: CombineFn) -> None:
        self.fn = fn

    def process(self, kv: Any, *args: Any, **kwargs: Any) -> Iterable[Any]:
        return [(kv[0], combine_all(self.fn, kv[1], *args, **kwargs))]


class CombinePerKeyWithArgs(PTransform):
    """Per key and window, the values combined by `fn` given `args` and `kwargs`."""

    def __init__(self, fn: Any, *args: Any, label: Any = None, **kwargs: Any) -> None:
        super().__init__(label)
        self.combine_fn = as_combine_fn(fn)
        self.args, self.kwargs = args, kwargs

    def default_label(self) -> str:
        return f"CombinePerKey({self.combine_fn.default_label()})"

    def expand(self, pcoll: PCollection) -> PCollection:
        grouped = pcoll | "Group" >> GroupByKey()
        out = grouped | "Combine" >> ParDo(_CombineGroup(self.combine_fn), *self.args,
                                           **self.kwargs)
        out.kind = KV
        return out

