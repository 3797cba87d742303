"""Python steps of a Spark batch plan not yet run (`Steps`): consecutive element-wise steps
fused into one Arrow task, run when a DataFrame of their result is needed. The batch plan and
the translators its extensions register (templates, O+, DGS) extend and run them alike."""
from __future__ import annotations

from typing import Any, Callable, Iterator, List

import pyarrow as pa

from ...runtime.collector import collect_rarely
from ...windowing import WindowedValue
from . import codec


class Steps:
    """Python steps not yet run, fused into one Arrow task when their result is needed:
    `source`'s rows turned into bundles of elements by `head`, then each step in turn on each
    bundle. The source is a DataFrame (a `mapInArrow` task over its batches) or, `grouped`,
    grouped data (an `applyInArrow` task per group, whose table `head` takes). A step is a
    function that, started once per task, gives (process(bundle) -> result, finish or None)."""

    def __init__(self, source: Any, head: Callable[[Any], Iterator[list]], steps: tuple = (),
                 grouped: bool = False) -> None:
        self.source, self.head, self.steps, self.grouped = source, head, steps, grouped

    def then(self, step: Callable[[], Any]) -> "Steps":
        """These steps followed by `step`, in the same task."""
        return Steps(self.source, self.head, self.steps + (step,), self.grouped)

    def run(self, tail: Callable[[Iterator[Any]], Iterator[pa.RecordBatch]], schema: str,
            made_by: str) -> Any:
        """The DataFrame of what `tail` makes of the steps' results, the last step's being
        step `made_by` (named when its output cannot be pickled)."""
        head, steps = self.head, self.steps

        def task(batches: Iterator[Any]) -> Iterator[pa.RecordBatch]:
            collect_rarely()
            started = [step() for step in steps]
            try:
                yield from tail(_through(batches, head, [p for p, _ in started]))
            except codec.UnpicklableError as e:
                raise codec.unpicklable(made_by, "its output", e) from None
            finally:
                for _, finish in started:
                    if finish is not None:
                        finish()
        if not self.grouped:
            return self.source.mapInArrow(task, schema)
        arrow = codec.ARROW[schema]
        return self.source.applyInArrow(
            lambda table: pa.Table.from_batches(list(task([table])), schema=arrow), schema)


def decoded(b: pa.RecordBatch) -> Iterator[List[WindowedValue]]:
    """A batch of element rows as one bundle of elements: the head of steps over such rows."""
    yield codec.decode(b)


def encoded(tagged: bool) -> Callable[[Iterator[Any]], Iterator[pa.RecordBatch]]:
    """Encodes what steps produce: bundles of elements, or of elements by output tag if
    `tagged`."""
    def tail(items: Iterator[Any]) -> Iterator[pa.RecordBatch]:
        for item in items:
            if tagged:
                elements = [wv for bundle in item.values() for wv in bundle]
                tags: Any = [tag for tag, bundle in item.items() for _ in bundle]
            else:
                elements, tags = item, None
            if elements:
                yield codec.encode(elements, tags=tags)
    return tail


def _through(batches: Iterator[pa.RecordBatch], head: Callable[[pa.RecordBatch], Iterator[list]],
             processes: List[Callable[[Any], Any]]) -> Iterator[Any]:
    for b in batches:
        for bundle in head(b):
            for process in processes:
                bundle = process(bundle)
            yield bundle
