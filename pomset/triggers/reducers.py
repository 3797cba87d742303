"""What a window holds between panes: a bag of values (GroupByKey) or a CombineFn accumulator.

Both take values with a diff (+1 datum, -1 retraction) and give a pane's outputs as
(value, diff) pairs, so retractions flow through groupings (docs/architecture.md, "Elements and diffs").
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Iterable, List, Tuple


class Bag:
    """A multiset of values kept in arrival order; retractions cancel a held equal value, or are
    kept as negatives when none is held (they then come out as a retraction pane)."""

    __slots__ = ("pos", "neg")

    def __init__(self) -> None:
        self.pos: List[Any] = []
        self.neg: List[Any] = []

    def add(self, value: Any, diff: int) -> None:
        if diff > 0:
            for _ in range(diff):
                if self.neg and _remove(self.neg, value):
                    continue
                self.pos.append(value)
        else:
            for _ in range(-diff):
                if not _remove(self.pos, value):
                    self.neg.append(value)

    def absorb(self, other: "Bag") -> None:
        for v in other.pos:
            self.add(v, 1)
        for v in other.neg:
            self.add(v, -1)

    def __getstate__(self):
        return (self.pos, self.neg)

    def __setstate__(self, state) -> None:
        self.pos, self.neg = state


def _remove(values: List[Any], value: Any) -> bool:
    for i in range(len(values) - 1, -1, -1):
        if values[i] == value:
            del values[i]
            return True
    return False


class BufferReducer:
    """GroupByKey: a pane is the list of values held; retracted values held negatively come
    out as a second output with diff -1."""

    needs_retract = False

    def create(self) -> Bag:
        return Bag()

    def add(self, acc: Bag, value: Any, diff: int) -> Bag:
        if diff == 1 and not acc.neg:
            acc.pos.append(value)
        else:
            acc.add(value, diff)
        return acc

    def merge(self, accs: Iterable[Bag]) -> Bag:
        out = Bag()
        for a in accs:
            out.absorb(a)
        return out

    def outputs(self, acc: Bag) -> List[Tuple[Any, int]]:
        out = [(list(acc.pos), 1)]
        if acc.neg:
            out.append((list(acc.neg), -1))
        return out


class CombineReducer:
    """Combine: an accumulator per window; retractions call `retract_input`."""

    #: the kernel may fold some of a bundle's values into an accumulator and merge that in
    #: (`GroupAlsoByWindow._fold`); a bag keeps its values' arrival order, so it does not
    folds = True

    def __init__(self, combine_fn: Any) -> None:
        self.fn = combine_fn
        self._add = combine_fn.add_input
        self._retract = combine_fn.retract_input
        # add(acc, value, +1), without the diff dispatch: the kernel's per-element fast path
        self.add_one = combine_fn.add_input
        self.create: Callable[[], Any] = combine_fn.create_accumulator

    def add(self, acc: Any, value: Any, diff: int) -> Any:
        if diff == 1:
            return self._add(acc, value)
        for _ in range(abs(diff)):
            acc = self._add(acc, value) if diff > 0 else self._retract(acc, value)
        return acc

    def merge(self, accs: Iterable[Any]) -> Any:
        return self.fn.merge_accumulators(list(accs))

    def first(self, value: Any) -> Any:
        """A new window's accumulator holding `value` alone."""
        return self.add_one(self.create(), value)

    def outputs(self, acc: Any) -> List[Tuple[Any, int]]:
        return [(self.output(acc), 1)]

    def output(self, acc: Any) -> Any:
        """A pane's one output, a datum (the kernel's fast path for combines)."""
        out = self.fn.extract_output(acc)
        if out is acc and not isinstance(out, _IMMUTABLE):
            # extract_output returned the (mutable) accumulator itself (ToList, the base
            # CombineFn): copy it, or later panes would rewrite this one and its retraction
            out = out[:] if type(out) is list else copy.deepcopy(out)
        return out


class AccumulatorReducer(CombineReducer):
    """Combine over partial accumulators (combiner lifting): each value is an accumulator a
    runner built with the same CombineFn from some of a window's inputs (`create_accumulator`,
    `add_input`), so taking it in merges it (`merge_accumulators`)."""

    folds = False   # its values are accumulators already

    def __init__(self, combine_fn: Any) -> None:
        super().__init__(combine_fn)
        merge = combine_fn.merge_accumulators
        self.add_one = lambda acc, partial: merge([acc, partial])

    def add(self, acc: Any, partial: Any, diff: int) -> Any:
        if diff != 1:
            raise ValueError(f"a partial accumulator is a net value and carries no diff, got {diff}")
        return self.add_one(acc, partial)

    def first(self, partial: Any) -> Any:
        """The partial itself: merged with a fresh accumulator it would come back as it is
        (partials are made for the grouping that takes them, each its own object)."""
        return partial


_IMMUTABLE = (int, float, complex, str, bytes, bool, tuple, frozenset, type(None))
