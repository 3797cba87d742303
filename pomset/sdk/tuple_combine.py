"""Several combiners at once (Beam's `TupleCombineFn`, `SingleInputTupleCombineFn`): the
accumulator is a tuple of theirs, one per combiner."""
from __future__ import annotations

from itertools import islice
from typing import Any, Iterable, Optional, Tuple

from .combinefn import CombineFn, as_combine_fn


class TupleCombineFn(CombineFn):
    """Combines tuple inputs component by component: the i-th combiner (a CombineFn or a
    function of an iterable) folds the i-th item of each input; the output is the tuple of
    their outputs. `merge_accumulators_batch_size` accumulator tuples are merged at a time,
    so a long merge keeps few of them in memory. The combine's extra arguments go to every
    combiner, and so do `setup` and `teardown`."""

    def __init__(self, *combiners: Any,
                 merge_accumulators_batch_size: Optional[int] = None) -> None:
        self._combiners = tuple(as_combine_fn(c) for c in combiners)
        self._batch_size = (merge_accumulators_batch_size if merge_accumulators_batch_size
                            else max(10, 1000 // max(1, len(combiners))))

    def with_common_input(self) -> "SingleInputTupleCombineFn":
        """The same combiners, each given the whole of every input."""
        return SingleInputTupleCombineFn(*self._combiners,
                                         merge_accumulators_batch_size=self._batch_size)

    def setup(self, *args: Any, **kwargs: Any) -> None:
        for c in self._combiners:
            c.setup(*args, **kwargs)

    def teardown(self, *args: Any, **kwargs: Any) -> None:
        for c in self._combiners:
            c.teardown(*args, **kwargs)

    def create_accumulator(self, *args: Any, **kwargs: Any) -> Tuple[Any, ...]:
        return tuple(c.create_accumulator(*args, **kwargs) for c in self._combiners)

    def add_input(self, acc: Tuple[Any, ...], element: Any, *args: Any,
                  **kwargs: Any) -> Tuple[Any, ...]:
        return tuple(c.add_input(a, e, *args, **kwargs)
                     for c, a, e in zip(self._combiners, acc, element))

    def merge_accumulators(self, accs: Iterable[Tuple[Any, ...]], *args: Any,
                           **kwargs: Any) -> Tuple[Any, ...]:
        it = iter(accs)
        merged: Optional[Tuple[Any, ...]] = None
        while True:
            batch = list(islice(it, self._batch_size))
            if not batch:
                break
            if merged is not None:
                batch.insert(0, merged)
            merged = tuple(c.merge_accumulators([a[i] for a in batch], *args, **kwargs)
                           for i, c in enumerate(self._combiners))
        return self.create_accumulator(*args, **kwargs) if merged is None else merged

    def compact(self, acc: Tuple[Any, ...], *args: Any, **kwargs: Any) -> Tuple[Any, ...]:
        return tuple(c.compact(a, *args, **kwargs) for c, a in zip(self._combiners, acc))

    def extract_output(self, acc: Tuple[Any, ...], *args: Any,
                       **kwargs: Any) -> Tuple[Any, ...]:
        return tuple(c.extract_output(a, *args, **kwargs) for c, a in zip(self._combiners, acc))

    def can_merge(self) -> bool:
        return all(c.can_merge() for c in self._combiners)


class SingleInputTupleCombineFn(TupleCombineFn):
    """Every combiner folds the same inputs; the output is the tuple of their outputs."""

    def add_input(self, acc: Tuple[Any, ...], element: Any, *args: Any,
                  **kwargs: Any) -> Tuple[Any, ...]:
        return tuple(c.add_input(a, element, *args, **kwargs)
                     for c, a in zip(self._combiners, acc))
