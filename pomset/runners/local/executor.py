"""The sequential reference executor: pushes bundles depth-first through the stages and moves
watermarks stage by stage in topological order (output = min of inputs and holds, never back).

It is the small interface the ordered-parallel executors replace: `deliver`, `propagate`,
`set_processing_time`.
"""
from __future__ import annotations

from typing import Dict, List, Optional

from .stages import Stage
from ...runtime.watermarks import output_watermark


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

    def deliver(self, stage: Stage, tag: Optional[str], bundle: list) -> None:
        pc = stage.node.outputs[tag]
        rec = self.record.get(id(pc))
        if rec is not None:
            times = self.times[id(pc)]
            if not times or times[-1][1] != self.pt:
                times.append((len(rec), self.pt))
            rec.extend(bundle)
        for consumer, index in self.consumers[id(stage)][tag]:
            consumer.receive(index, bundle)
        if self.on_bundle is not None:
            self.on_bundle()

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
