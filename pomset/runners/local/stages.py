"""The local runner's stages: one per plan node, each with input watermarks, a hold and an
output watermark; they receive bundles and push what they produce downstream. `STAGES` is the
runner's translator table: the core kinds are registered here, each extension's (Kafka, file
streams, templates, O+, DGS) in its own module."""
from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional, Tuple

from ...runtime.elementwise import DoFnRunner, assign_windows, user_code_error
from ...runtime.fusion import Fusion
from ...runtime.plan import (ASSIGN_WINDOWS, DRIVER_READ, ELEMENTWISE, FLATTEN, GROUP, SINK, STATEFUL_PARDO,
                             PlanNode, TranslatorTable)
from ...runtime.reads import read_tagged
from ...runtime.side_inputs import SideInputBuffer
from ...sdk.errors import UserCodeError
from ...sdk.user_metrics import USER, MetricsContainer
from ...runtime import columnar
from ...runtime.columnar import Columns
from ...runtime import combine_lifecycle
from ...runtime.combine_lifecycle import combine_fns_of
from ...runtime.kernel_host import KernelHost
from ...runtime.stateful_dofn import StatefulDoFnHost
from ...runtime.metrics import emitted_key
from ...runtime.spill import SpilledHost, StateGauge
from ...triggers.kernel import Counters
from ...windowing import MAX_MICROS, MIN_MICROS

#: the local runner's translator table: a plan node's kind to the stage that runs it, called
#: as `translate(node, executor, build)`
STAGES = TranslatorTable("local")


class Build(NamedTuple):
    """What building a stage needs beyond its node and executor: which Sorts fuse into the
    template after them (`fusion`, None on a worker), the seed that shuffles the merges of
    templates' parallel instances, and whether the run is streaming."""

    fusion: Optional[Fusion] = None
    seed: Optional[int] = None
    streaming: bool = False


class Stage:
    """Base: watermark bookkeeping and output fan-out (through the executor). `state` names
    the attributes a checkpoint saves (`snapshot`) and a restarted run puts back (`restore`)."""

    state: Tuple[str, ...] = ("in_wms", "out_wm", "received", "emitted")

    def __init__(self, node: PlanNode, executor: Any) -> None:
        self.node = node
        self.label = node.label
        self.executor = executor
        self.n_inputs = len(node.inputs) + len(node.side_inputs)
        self.in_wms = [MIN_MICROS] * self.n_inputs
        self.out_wm = MIN_MICROS
        self.pt = 0
        # True when this stage's main-input elements are its alone (their PCollection has this
        # one consumer, is not recorded, and its producer made them fresh): it may then update
        # them in place instead of allocating new ones. Set by the executor when wiring.
        self.owned = False
        self.received = 0
        self.emitted: Dict[Optional[str], int] = {tag: 0 for tag in node.outputs}

    def emit(self, tag: Optional[str], bundle: list) -> None:
        if bundle:
            self.emitted[tag] += len(bundle)
            self.executor.deliver(self, tag, bundle)

    def receive(self, index: int, bundle: list) -> None:
        raise NotImplementedError

    def makes_fresh(self, tag: Optional[str]) -> bool:
        """Whether every element this stage emits on `tag` is referenced by nothing else."""
        return True

    def takes_columns(self, index: int) -> bool:
        """Whether input `index` may arrive as `Columns` (else the executor converts them)."""
        return False

    def advance(self) -> None:
        """The input watermarks moved: fire what is due."""

    def on_processing_time(self) -> None:
        """The processing clock moved: fire what is due."""

    def hold(self) -> int:
        return MAX_MICROS

    def end_step(self) -> None:
        """The executor has propagated watermarks through this stage: its step is over."""

    def next_processing_timer(self) -> Optional[int]:
        """The earliest processing-time wake-up this stage waits for, if any."""
        return None

    def start(self) -> None:
        pass

    def finish(self) -> None:
        pass

    def abort(self) -> None:
        """The run failed elsewhere: release resources without committing output."""

    def snapshot(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self.state}

    def restore(self, state: Dict[str, Any]) -> None:
        state = dict(state)
        emitted = state.pop("emitted", {})
        for name, value in state.items():
            setattr(self, name, value)
        # outputs added since the checkpoint (a dead-letter output, say) start at zero
        self.emitted = {tag: emitted.get(tag, 0) for tag in self.node.outputs}

    def metrics(self) -> Dict[str, int]:
        out = {"received": self.received}
        for tag, n in self.emitted.items():
            out[emitted_key(tag)] = n
        return out

    def fail(self, element: Any, exc: BaseException) -> UserCodeError:
        return user_code_error(self.label, element, exc)


class DeploymentStage(Stage):
    """A stage hosting a deployment (a template's instances, an O+'s): a checkpoint saves the
    deployment's state beside the stage's own."""

    deployment: Any

    def snapshot(self) -> Dict[str, Any]:
        return dict(super().snapshot(), deployment=self.deployment.snapshot())

    def restore(self, state: Dict[str, Any]) -> None:
        state = dict(state)
        self.deployment.restore(state.pop("deployment"))
        super().restore(state)


#: rows per columnar bundle read from a file
COLUMN_ROWS = 1 << 20


class SourceStage(Stage):
    """A bounded source or TestStream; the driver moves its watermark."""

    state = Stage.state + ("read_count", "dead_letters")

    def __init__(self, node: Any, executor: Any) -> None:
        super().__init__(node, executor)
        self.read_count = 0
        self.dead_letters = 0
        #: the step that reads this source itself (a DGS step's workers its streams), if any
        self.read_by: Optional[str] = None

    def bundles(self, size: int):
        """Bundles of WindowedValues read from the source (none where a step after it reads
        it itself)."""
        t = self.node.transform
        if self.read_by is not None:
            return
        if self.node.makes_bundles:
            yield from t.bundles(size)
            return
        for tag, bundle in read_tagged(t, self.label, size, COLUMN_ROWS):
            if tag is None:
                yield bundle
            else:
                self.emit_dead(tag, bundle)

    def emit_dead(self, tag: str, dead: list) -> None:
        """Send the dead letters read so far, emptying the list the reader appends to."""
        self.dead_letters += len(dead)
        self.emit(tag, list(dead))
        dead.clear()

    def push(self, bundle: list) -> None:
        self.read_count += len(bundle)
        self.emit(None, bundle)

    def metrics(self) -> Dict[str, int]:
        out = super().metrics()
        out["read"] = self.read_count
        if self.node.dead_letter_tag is not None:
            out["dead_lettered"] = self.dead_letters
        return out


class AssignWindowsStage(Stage):
    """WindowInto: re-assigns each element to its windows (or passes through, for a re-trigger);
    fixed, sliding and global windows by column arithmetic over `Columns`."""

    def __init__(self, node: Any, executor: Any) -> None:
        super().__init__(node, executor)
        self.native = columnar.native_windows(node.transform) if node.native else None

    def takes_columns(self, index: int) -> bool:
        return self.native is not None

    def receive(self, index: int, bundle: Any) -> None:
        self.received += len(bundle)
        if isinstance(bundle, Columns):
            self.emit(None, self.native(bundle))
            return
        self.emit(None, assign_windows(self.node.transform, bundle, self.owned, self.label))

    def makes_fresh(self, tag: Optional[str]) -> bool:
        return self.node.transform.window_fn is not None or self.owned


class FlattenStage(Stage):
    """Flatten (and Merge): elements pass through."""

    def receive(self, index: int, bundle: list) -> None:
        self.received += len(bundle)
        self.emit(None, bundle)

    def takes_columns(self, index: int) -> bool:
        return True

    def makes_fresh(self, tag: Optional[str]) -> bool:
        return self.owned


class ParDoStage(Stage):
    """ParDo and its shorthands (run by the runtime's DoFnRunner), with side inputs: elements
    wait in the runtime's side-input buffer until their side windows are ready."""

    state = Stage.state + ("sides",)

    def __init__(self, node: Any, executor: Any) -> None:
        super().__init__(node, executor)
        t = node.transform
        self.runner = DoFnRunner(t, node.outputs, self.label, node.schema)
        self.buffer = SideInputBuffer(t, node.side_inputs) if node.side_inputs else None
        self.native = columnar.native_step(t, node.schema) if node.native else None

    def takes_columns(self, index: int) -> bool:
        return self.native is not None

    @property
    def sides(self) -> Any:
        return self.buffer.state() if self.buffer is not None else None

    @sides.setter
    def sides(self, state: Any) -> None:
        if state is not None:
            self.buffer.restore(state)

    def start(self) -> None:
        self.runner.setup()

    def finish(self) -> None:
        self.runner.teardown()

    def abort(self) -> None:
        self.finish()

    def receive(self, index: int, bundle: Any) -> None:
        if isinstance(bundle, Columns):
            out = self.native(bundle)
            if out is not None:
                self.received += len(bundle)
                self.emit(None, out)
                return
            bundle = bundle.elements()
        if index == 0:
            self.received += len(bundle)
            if self.buffer is not None:
                bundle = self.buffer.ready(bundle, self.in_wms[1:])
            if bundle:
                self._process(bundle)
            return
        self.buffer.add_side(index - 1, bundle)

    def advance(self) -> None:
        if self.buffer is not None and self.buffer.waiting:
            ready = self.buffer.ready((), self.in_wms[1:])
            if ready:
                self._process(ready)

    def hold(self) -> int:
        return self.buffer.hold() if self.buffer is not None else MAX_MICROS

    def _process(self, bundle: list) -> None:
        args = self.buffer.args if self.buffer is not None else None
        outs = self.runner.process(bundle, self.owned, args)
        for tag, items in outs.items():
            self.emit(tag, items)

    def makes_fresh(self, tag: Optional[str]) -> bool:
        return tag is not None or not self.node.passes_elements or self.owned

    def snapshot(self) -> Dict[str, Any]:
        return dict(super().snapshot(), dead_count=self.runner.dead_count,
                    user_metrics=self.runner.metrics.snapshot())

    def restore(self, state: Dict[str, Any]) -> None:
        state = dict(state)
        self.runner.dead_count = state.pop("dead_count")
        self.runner.metrics = MetricsContainer.of(state.pop("user_metrics", None))
        super().restore(state)

    def take_tallies(self) -> Dict[str, Any]:
        """What this copy counted since the last call, for the stage it copies (a worker's):
        its dead letters and user metrics."""
        out: Dict[str, Any] = {}
        if self.runner.dead_count:
            out["dead_lettered"], self.runner.dead_count = self.runner.dead_count, 0
        if self.runner.metrics:
            out[USER] = self.runner.metrics.take()
        return out

    def add_tallies(self, tallies: Dict[str, Any]) -> None:
        """Fold in what a worker's copy counted (`take_tallies`)."""
        self.runner.dead_count += tallies.get("dead_lettered", 0)
        self.runner.metrics.absorb(tallies.get(USER))

    def metrics(self) -> Dict[str, Any]:
        out: Dict[str, Any] = super().metrics()
        if self.runner.dead_tag is not None:
            out["dead_lettered"] = self.runner.dead_count
        if self.runner.metrics:
            out[USER] = self.runner.metrics.snapshot()
        return out


class StatefulParDoStage(Stage):
    """A stateful ParDo (state and timers): the runtime's stateful DoFn host, its keys' state
    in memory, run on the release (one host, elements in the order they came)."""

    def __init__(self, node: Any, executor: Any) -> None:
        super().__init__(node, executor)
        self.host = StatefulDoFnHost(node.transform, list(node.outputs), self.label,
                                     node.inputs[0].windowing.allowed_lateness_us)

    def start(self) -> None:
        self.host.runner.setup()

    def finish(self) -> None:
        self.host.runner.teardown()

    def _step(self, bundle: Optional[list], watermark: bool) -> None:
        outs: Dict[Optional[str], list] = {tag: [] for tag in self.node.outputs}
        self.host.processing_time(self.pt, outs)
        if bundle:
            self.host.elements(bundle, outs)
        if watermark:
            self.host.watermark(min(self.in_wms), outs)
        for tag, items in outs.items():
            self.emit(tag, items)

    def receive(self, index: int, bundle: list) -> None:
        self.received += len(bundle)
        self._step(bundle, True)   # a timer set for a time already passed fires at once

    def advance(self) -> None:
        self._step(None, True)

    def on_processing_time(self) -> None:
        self._step(None, False)

    def next_processing_timer(self) -> Optional[int]:
        return self.host.next_processing_timer()

    def hold(self) -> int:
        return self.host.hold()

    def snapshot(self) -> Dict[str, Any]:
        return dict(super().snapshot(), host=self.host.save(), dropped=self.host.dropped,
                    user_metrics=self.host.runner.metrics.snapshot())

    def restore(self, state: Dict[str, Any]) -> None:
        state = dict(state)
        self.host.load(state.pop("host"))
        self.host.dropped = state.pop("dropped", 0)
        self.host.runner.metrics = MetricsContainer.of(state.pop("user_metrics", None))
        super().restore(state)

    def metrics(self) -> Dict[str, Any]:
        out: Dict[str, Any] = super().metrics()
        out["dropped"] = self.host.dropped
        if self.host.runner.metrics:
            out[USER] = self.host.runner.metrics.snapshot()
        return out


class GroupStage(Stage):
    """GroupByKey/CombinePerKey: the runtime's kernel host, its states in memory. A combine of
    built-in aggregations takes keyed `Columns` (`columnar.native_combine`) and folds them with
    pyarrow: while its input watermark has not moved, and the trigger fires once, the whole
    grouping is columnar (`Aggregator.final` when the watermark jumps to the end); otherwise
    each step's partial accumulators go to the kernel (`KernelHost.partials`). In a bounded
    run (`may_spill`) a kernel's state that outgrows the memory budget before the watermark
    moves goes to disk (`runtime/spill.SpilledHost`)."""

    def __init__(self, node: Any, executor: Any) -> None:
        super().__init__(node, executor)
        strategy = node.strategy
        self.host = self.new_host()
        # all of the grouping columnar, until an element or a watermark short of the end says
        # the kernel must see it
        self.final = node.native and columnar.fires_once(strategy)
        # partials the kernel merges carry their rows' times, for its late and dropped counts
        self.aggregator = (columnar.aggregator(node.transform.combine_fn,
                                               strategy.timestamp_combiner,
                                               tally=not self.final) if node.native else None)
        self.combine_fns = combine_fns_of(node.transform)
        self.gauge: Optional[StateGauge] = None
        self.temp_dir: Optional[str] = None
        self.spilled: Optional[SpilledHost] = None

    def start(self) -> None:
        combine_lifecycle.acquire(self.combine_fns)

    def new_host(self) -> KernelHost:
        """A kernel host for this grouping (one, or one per bucket when it is partitioned)."""
        node = self.node
        return KernelHost(node.strategy, node.reducer(), self.label,
                          keep_late=node.transform.late_tag is not None)

    def may_spill(self, budget: int, directory: Optional[str]) -> None:
        """Let the kernel's state spill to a temporary directory in `directory` (None: the
        system's) once it outgrows `budget` bytes: a bounded run's, which the watermark
        crosses once. A columnar combine's Arrow partials (a row per key and window) stay in
        memory until they go to the kernel."""
        self.gauge = StateGauge(budget, self.new_host)
        self.temp_dir = directory

    def _spill(self) -> None:
        """The state so far to disk, and the host's from here on."""
        saved = self.host.save()
        self.spilled = SpilledHost(saved, self.new_host, self.gauge, self.temp_dir, self.label,
                                   self._flush)
        # a partitioned host's buckets let go of their states too
        self.host.load(dict(states={}, counters=Counters(),
                            queues=dict(saved["queues"], timers={}, holds=[])))
        self.host = self.spilled
        self.gauge = None

    def _flush(self, panes: list, late: list) -> None:
        self.emit(None, panes)
        if late:
            self.emit(self.node.transform.late_tag, late)

    def partitions(self) -> bool:
        """Whether workers may run its buckets: its kernel holds the state (no columnar
        aggregation, which Arrow already runs on several threads; no late output, which
        its one host sends in the order the elements came)."""
        return self.aggregator is None and self.node.transform.late_tag is None

    def takes_columns(self, index: int) -> bool:
        return self.aggregator is not None

    def receive(self, index: int, bundle: Any) -> None:
        self.received += len(bundle)
        out: list = []
        # the watermark moved while the whole grouping was folding: what was folded goes to
        # the kernel, and rows from here on, which may be late, are folded with their times
        switched = self.final and min(self.in_wms) != MIN_MICROS
        if switched:
            self._to_kernel(out)
        if isinstance(bundle, Columns):
            if not self.aggregator.add(bundle):
                bundle = bundle.elements()
            elif not switched:
                return
        self._to_kernel(out)
        self.host.processing_time(self.pt, out)
        if not isinstance(bundle, Columns):
            self.host.elements(bundle, out)
            if (self.gauge is not None and min(self.in_wms) == MIN_MICROS
                    and self.gauge.over(self.host, bundle)):
                self._spill()
        self.emit(None, out)
        late_tag = self.node.transform.late_tag
        if late_tag is not None:
            self.emit(late_tag, self.host.take_late())

    def _to_kernel(self, out: list) -> None:
        """Give the kernel the partial accumulators folded so far; from now on it has the
        grouping."""
        self.final = False
        if self.aggregator is not None:
            # untallied only if folded while the whole grouping was: at the minimum watermark,
            # where no row is late
            if self.aggregator:
                self.host.partials(self.aggregator.partials(), out)
            self.aggregator.tally = True

    def advance(self) -> None:
        if self.final and min(self.in_wms) == MAX_MICROS:
            if self.aggregator:
                self.emit(None, self.aggregator.final())
            return
        out: list = []
        self._to_kernel(out)
        self.host.processing_time(self.pt, out)
        self.host.watermark(min(self.in_wms), out)
        self.emit(None, out)

    def on_processing_time(self) -> None:
        out: list = []
        if not self.final:
            self._to_kernel(out)
        self.host.processing_time(self.pt, out)
        self.emit(None, out)

    def next_processing_timer(self) -> Optional[int]:
        return self.host.next_processing_timer()

    def hold(self) -> int:
        return self.host.hold()

    def end_step(self) -> None:
        if not self.final and self.aggregator:
            out: list = []
            self._to_kernel(out)
            self.emit(None, out)
        self.host.end_step()

    def snapshot(self) -> Dict[str, Any]:
        if self.aggregator:   # what it folded goes into the saved state, as partials
            out: list = []
            self._to_kernel(out)
            self.emit(None, out)
        return dict(super().snapshot(), host=self.host.save())

    def finish(self) -> None:
        try:
            if self.spilled is not None:
                self.spilled.close()
        finally:
            combine_lifecycle.release(self.combine_fns)

    def abort(self) -> None:
        self.finish()

    def restore(self, state: Dict[str, Any]) -> None:
        state = dict(state)
        self.host.load(state.pop("host"))
        super().restore(state)
        # the saved state is the kernel's (`snapshot`): a grouping that was to fire from its
        # folded columns alone would leave the restored windows unfired at the end (nothing
        # is folded yet, so nothing goes out)
        self._to_kernel([])

    def metrics(self) -> Dict[str, int]:
        out = super().metrics()
        c = self.host.counters
        out.update(late=c.late, dropped=c.dropped_expired + c.dropped_closed)
        if self.spilled is not None:
            out["spilled_bytes"] = self.spilled.spilled_bytes
            out["spill_splits"] = self.spilled.splits
        return out


class SinkStage(Stage):
    """A file sink: writes what it receives, closes at the end of the run. In a streaming run
    it writes parts instead (`start_part`), one file per checkpoint epoch."""

    def __init__(self, node: Any, executor: Any) -> None:
        super().__init__(node, executor)
        self.sink = node.transform
        self.part: Optional[int] = None
        self.writer = self.sink.writer(node.inputs[0])

    def takes_columns(self, index: int) -> bool:
        return self.node.native

    def receive(self, index: int, bundle: Any) -> None:
        self.received += len(bundle)
        if self.writer is None:
            self.writer = self.sink.writer(self.node.inputs[0], self.sink.part_path(self.part))
        if isinstance(bundle, Columns):
            table = columnar.sink_table(bundle, self.writer.annotate,
                                       self.writer.time_micros)
            if table is not None:
                self.writer.write_arrow(table)
                return
            bundle = bundle.elements()
        self.writer.write(bundle)

    def start_part(self, part: int) -> None:
        """Commit the current part's file (if anything was written to it) and start `part`."""
        if self.writer is not None and self.part is not None:
            self.writer.close()
        elif self.writer is not None:
            self.writer.abort()   # the batch file: a streaming run writes parts only
        self.writer = None
        self.part = part

    def finish(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.abort()

    def metrics(self) -> Dict[str, int]:
        return {"received": self.received, "written": self.received}


STAGES.register(DRIVER_READ, lambda node, executor, build: SourceStage(node, executor))
STAGES.register(ELEMENTWISE, lambda node, executor, build: ParDoStage(node, executor))
STAGES.register(STATEFUL_PARDO, lambda node, executor, build: StatefulParDoStage(node, executor))
STAGES.register(ASSIGN_WINDOWS, lambda node, executor, build: AssignWindowsStage(node, executor))
STAGES.register(GROUP, lambda node, executor, build: GroupStage(node, executor))
STAGES.register(FLATTEN, lambda node, executor, build: FlattenStage(node, executor))
STAGES.register(SINK, lambda node, executor, build: SinkStage(node, executor))


def stage_for(node: PlanNode, executor: Any, fusion: Optional[Fusion] = None,
              seed: Optional[int] = None, streaming: bool = False) -> Stage:
    """The stage that runs this plan node, from the table (`fusion` says which Sorts fuse
    into the template after them; `seed` shuffles the merges of templates' parallel
    instances; `streaming` reads file sources as streams)."""
    return STAGES.translate(node, executor, Build(fusion, seed, streaming))
