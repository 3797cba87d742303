"""Hot-key fanout (Beam's `CombinePerKey.with_hot_key_fanout`, `CombineGlobally.with_fanout`):
a key's values are first combined in `fanout` parts, each under the key and a shard dealt in turn,
and the parts' accumulators then merged per key, so no one place folds all of a hot key.
Built of two CombinePerKeys, it runs wherever they do. Under merging windows (sessions) the
parts would merge their windows apart, so there the combine is done in one step."""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Union

from ..triggers import AccumulationMode
from .combinefn import CombineFn, copy_combine_fn
from .core import CombinePerKey, Map, WindowInto
from .kinds import KV
from .ptransform import PTransform
from .pvalue import PCollection

Fanout = Union[int, Callable[[Any], int]]


class _PartialFn(CombineFn):
    """`fn`, except that it outputs its accumulator, for `_MergeFn` to finish. Each step
    has a copy of `fn` of its own, set up and torn down on its own, as Beam's are."""

    def __init__(self, fn: CombineFn) -> None:
        self.fn = copy_combine_fn(fn)

    def setup(self, *args: Any, **kwargs: Any) -> None:
        self.fn.setup(*args, **kwargs)

    def teardown(self, *args: Any, **kwargs: Any) -> None:
        self.fn.teardown(*args, **kwargs)

    def create_accumulator(self) -> Any:
        return self.fn.create_accumulator()

    def add_input(self, acc: Any, value: Any) -> Any:
        return self.fn.add_input(acc, value)

    def merge_accumulators(self, accs: Iterable[Any]) -> Any:
        return self.fn.merge_accumulators(accs)

    def extract_output(self, acc: Any) -> Any:
        return self.fn.compact(acc)

    def default_label(self) -> str:
        return f"Partial{self.fn.default_label()}"


class _MergeFn(CombineFn):
    """`fn` over accumulators: merges them, and outputs what `fn` outputs."""

    def __init__(self, fn: CombineFn) -> None:
        self.fn = copy_combine_fn(fn)

    def setup(self, *args: Any, **kwargs: Any) -> None:
        self.fn.setup(*args, **kwargs)

    def teardown(self, *args: Any, **kwargs: Any) -> None:
        self.fn.teardown(*args, **kwargs)

    def create_accumulator(self) -> Any:
        return self.fn.create_accumulator()

    def add_input(self, acc: Any, partial: Any) -> Any:
        return self.fn.merge_accumulators([acc, partial])

    def merge_accumulators(self, accs: Iterable[Any]) -> Any:
        return self.fn.merge_accumulators(accs)

    def extract_output(self, acc: Any) -> Any:
        return self.fn.extract_output(acc)

    def default_label(self) -> str:
        return f"Merge{self.fn.default_label()}"


class HotKeyFanout(PTransform):
    """Per key and window, the values combined by `combine_fn` in two steps: in
    `fanout(key)` (or `fanout`) parts, dealt round-robin (so a run's parts are the same
    from run to run, where Beam's are random), then the parts merged."""

    def __init__(self, combine_fn: CombineFn, fanout: Fanout) -> None:
        super().__init__()
        self.combine_fn = combine_fn
        self.fanout = fanout if callable(fanout) else _constant(fanout)

    def default_label(self) -> str:
        return f"CombinePerKey({self.combine_fn.default_label()})WithHotKeyFanout"

    def expand(self, pcoll: PCollection) -> PCollection:
        fn, strategy = self.combine_fn, pcoll.windowing
        if strategy.window_fn.is_merging():
            return pcoll | "Combine" >> CombinePerKey(fn)
        mode = strategy.accumulation_mode
        fanout = self.fanout

        turns = itertools.count()

        def shard(kv: Any) -> Any:
            parts = fanout(kv[0])
            return ((kv[0], next(turns) % parts if parts > 1 else 0), kv[1])
        sharded = pcoll | "AddShard" >> Map(shard)
        sharded.kind = KV
        if mode is AccumulationMode.ACCUMULATING:
            # the parts fire their increments, the merge accumulates them
            sharded = sharded | "PartsDiscarding" >> WindowInto(
                accumulation_mode=AccumulationMode.DISCARDING)
        parts = (sharded | "CombineParts" >> CombinePerKey(_PartialFn(fn))
                 | "DropShard" >> Map(_drop_shard))
        parts.kind = KV
        if mode is AccumulationMode.ACCUMULATING:
            parts = parts | "MergeAccumulating" >> WindowInto(accumulation_mode=mode)
        return parts | "MergeParts" >> CombinePerKey(_MergeFn(fn))


def _constant(n: int) -> Callable[[Any], int]:
    return lambda _: n


def _drop_shard(kv: Any) -> Any:
    return (kv[0][0], kv[1])
