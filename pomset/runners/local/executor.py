"""The sequential reference executor: pushes bundles depth-first through the stages and moves
watermarks stage by stage in topological order (output = min of inputs and holds, never back).

It is the small interface the ordered-parallel executor (`parallel.py`) replaces: `deliver`,
`propagate`, `set_processing_time`, and `serial` (run a step of the driver in order with the
bundles before it) and `quiesce` (wait until all of it has run), which here run at once.
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional

from ...runtime.columnar import Columns
from .stages import Stage
from ...runtime.watermarks import output_watermark


#: elements per bundle when columns become elements
ELEMENT_SLICE = 8192


def handoffs(bundle: Any, consumers: List[tuple],
             record: Optional[list] = None) -> Iterator[tuple]:
    """(consumer, input index, part) in the order the consumers get a bundle: `Columns` go as
    they are to the stages that take them, then to the others as elements, a slice at a time,
    so that a large columnar bundle never becomes one huge list of elements. `record`, where
    given, gets the elements too (each slice converted once for both)."""
    if not isinstance(bundle, Columns):
        if record is not None:
            record.extend(bundle)
        for consumer, index in consumers:
            yield consumer, index, bundle
        return
    rest = []
    for consumer, index in consumers:
        if consumer.takes_columns(index):
            yield consumer, index, bundle
        else:
            rest.append((consumer, index))
    if rest or record is not None:
        for part in bundle.slices(ELEMENT_SLICE):
            elements = part.elements()
            if record is not None:
                record.extend(elements)
            for consumer, index in rest:
                yield consumer, index, elements


class SequentialExecutor:
    """Runs stages one bundle at a time on the calling thread."""

    def __init__(self, record: Dict[int, list]) -> None:
        self.stages: List[Stage] = []
        self.record = record
        # per recorded PCollection: (index, processing time) where elements from index on
        # were delivered at that time
        self.times: Dict[int, list] = {key: [] for key in record}
        self.consumers: Dict[int, Dict[Optional[str], list]] = {}
        self.producer_of: Dict[int, Stage] = {}
        self.pt = 0
        self.on_bundle = None

    def wire(self, stages: List[Stage]) -> None:
        """Take the stages (in topological order) and connect each one's outputs to the
        inputs (main, then side) of its consumers."""
        self.stages = stages
        for stage in self.stages:
            for tag, pc in stage.node.outputs.items():
                self.producer_of[id(pc)] = stage
            self.consumers[id(stage)] = {tag: [] for tag in stage.node.outputs}
        for stage in self.stages:
            node = stage.node
            for index, pc in enumerate(node.reads()):
                producer = self.producer_of[id(pc)]
                self.consumers[id(producer)][pc.tag].append((stage, index))
        self.inputs_of = {id(s): [self.producer_of[id(pc)] for pc in s.node.reads()]
                          for s in self.stages}
        for stage in self.stages:   # topological order: producers decide before consumers
            stage.owned = bool(stage.node.inputs) and all(
                len(pc.consumers) == 1 and id(pc) not in self.record
                and self.producer_of[id(pc)].makes_fresh(pc.tag) for pc in stage.node.inputs)

    def deliver(self, stage: Stage, tag: Optional[str], bundle: Any) -> None:
        """Hand a bundle to the consumers of `stage`'s output `tag` (and the record)."""
        record = self.recording(stage, tag)
        for consumer, index, part in handoffs(bundle, self.consumers[id(stage)][tag], record):
            consumer.receive(index, part)
        if self.on_bundle is not None:
            self.on_bundle()

    def recording(self, stage: Stage, tag: Optional[str]) -> Optional[list]:
        """The list that records `stage`'s output `tag`, with the processing time of the
        delivery about to be added noted; None when that output is not recorded."""
        out = id(stage.node.outputs[tag])
        rec = self.record.get(out)
        if rec is not None:
            times = self.times[out]
            if not times or times[-1][1] != self.pt:
                times.append((len(rec), self.pt))
        return rec

    def propagate(self) -> None:
        """Recompute every stage's input and output watermarks, upstream first."""
        for stage in self.stages:
            producers = self.inputs_of[id(stage)]
            if producers:
                wms = [p.out_wm for p in producers]
                if wms != stage.in_wms:
                    stage.in_wms = wms
                    stage.pt = self.pt
                    stage.advance()
                stage.out_wm = output_watermark(stage.out_wm, stage.in_wms + [stage.hold()])
            stage.end_step()

    def set_processing_time(self, pt: int) -> None:
        """Move the processing clock; fire processing-time timers due by then, then watermarks.
        Every stage's clock moves before any fires, so a pane fired upstream reaches the
        stages downstream at the new time, as the step's elements would."""
        self.pt = pt
        for stage in self.stages:
            stage.pt = pt
        for stage in self.stages:
            stage.on_processing_time()
        self.propagate()

    def serial(self, step: Any) -> None:
        """Run a step of the driver (a clock tick, a watermark move) after everything before it."""
        step()

    def quiesce(self) -> None:
        """Return once every bundle and step handed over so far has run."""

    def shutdown(self) -> None:
        """Release the executor's workers."""

    def next_processing_timer(self) -> Optional[int]:
        times = [t for t in (s.next_processing_timer() for s in self.stages) if t is not None]
        return min(times) if times else None
