"""The sequential reference executor: pushes bundles depth-first through the stages and moves
watermarks stage by stage in topological order (output = min of inputs and holds, never back).

It is the small interface the ordered-parallel executors replace: `deliver`, `propagate`,
`set_processing_time`.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...runtime.columnar import Columns
from .stages import Stage
from ...runtime.watermarks import output_watermark


#: elements per bundle when columns become elements
ELEMENT_SLICE = 8192


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
            feeds = list(node.inputs) + [s.pcoll for s in node.side_inputs]
            for index, pc in enumerate(feeds):
                producer = self.producer_of[id(pc)]
                self.consumers[id(producer)][pc.tag].append((stage, index))
        self.inputs_of = {id(s): [self.producer_of[id(pc)] for pc in
                                  list(s.node.inputs) + [x.pcoll for x in s.node.side_inputs]]
                          for s in self.stages}
        for stage in self.stages:   # topological order: producers decide before consumers
            stage.owned = bool(stage.node.inputs) and all(
                len(pc.consumers) == 1 and id(pc) not in self.record
                and self.producer_of[id(pc)].makes_fresh(pc.tag) for pc in stage.node.inputs)

    def deliver(self, stage: Stage, tag: Optional[str], bundle: Any) -> None:
        """Hand a bundle to the consumers of `stage`'s output `tag`. `Columns` go as they are
        to the stages that take them, and to the others (and the record) as elements,
        converted a slice at a time so that a large columnar bundle never becomes one huge
        list of elements."""
        consumers = self.consumers[id(stage)][tag]
        rec = self.record.get(id(stage.node.outputs[tag]))
        if not isinstance(bundle, Columns):
            self._hand(stage, tag, bundle, rec, consumers)
        else:
            for consumer, index in consumers:
                if consumer.takes_columns(index):
                    consumer.receive(index, bundle)
            rest = [(c, i) for c, i in consumers if not c.takes_columns(i)]
            if rest or rec is not None:
                for part in bundle.slices(ELEMENT_SLICE):
                    self._hand(stage, tag, part.elements(), rec, rest)
        if self.on_bundle is not None:
            self.on_bundle()

    def _hand(self, stage: Stage, tag: Optional[str], elements: list, rec: Optional[list],
              consumers: list) -> None:
        if rec is not None:
            times = self.times[id(stage.node.outputs[tag])]
            if not times or times[-1][1] != self.pt:
                times.append((len(rec), self.pt))
            rec.extend(elements)
        for consumer, index in consumers:
            consumer.receive(index, elements)

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
        """Move the processing clock; fire processing-time timers due by then, then watermarks."""
        self.pt = pt
        for stage in self.stages:
            stage.pt = pt
            stage.on_processing_time()
        self.propagate()

    def next_processing_timer(self) -> Optional[int]:
        times = [t for t in (s.next_processing_timer() for s in self.stages) if t is not None]
        return min(times) if times else None
