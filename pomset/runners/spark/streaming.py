"""A pipeline as one Spark Structured Streaming query over a bus: a single streaming DataFrame
whose rows (`codec.KEYED_STREAM`) each name the PCollection they belong to in `t`.

A streaming query cannot persist a DataFrame, so a PCollection read by two consumers, or
recorded and also consumed, would be computed once per reader, stateful steps included. On
the bus every step runs once: the pipeline's nodes, in topological order, become stages, each
taking the rows of its inputs and adding the rows of its outputs, and passing on every other
row still needed by a later stage or the driver:

- sources are the Python data sources of `stream_sources` (a `Create` or `TestStream` as a
  script of micro-batches, file sources as files appearing under their pattern), their rows
  unioned onto the bus; each source's micro-batch ends with a marker row carrying its
  watermark and clock (`codec`);
- consecutive element-wise nodes (ParDos, WindowInto, Flatten) run in one `mapInArrow` task,
  the SDK's own code over the elements of each input, its markers copied to every output;
  right after a stateful node they run in that node's own task instead, on its outputs as
  objects (as does the keying of a grouping right after another);
- a grouping, or a ParDo with side inputs, runs per bucket in `transformWithState`
  (`stateful`): its main-input elements in the bucket of their key (or value), its side
  elements and the markers of its inputs in every bucket, any other row in one bucket, passed
  through. It emits its panes and its own markers, so groupings chain, each downstream bucket
  taking the minimum watermark over the buckets upstream of it.

Each plan node is translated once, through the streaming table of translators by plan
kind (`register` here; Kafka sources and template steps register theirs in their own
modules, `extensions.streaming_table`), into a `BusStep`: a source's rows, an element-wise
`Op`, or a stateful processor.

What reaches the driver (in `foreachBatch`) is the rows of the PCollections it records or
writes to sinks.

A DGS step is refused before Spark starts (`runner.py`): a synchronizing event needs the
states of the leaves under its worker joined before any later event of theirs runs, and a
query's stateful tasks keep their state per bucket, with no point inside a micro-batch where
they could meet. It runs on the local runner (`--streaming` too) and on Spark in batch."""
from __future__ import annotations

import dataclasses
from functools import reduce
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from ...runtime import columnar
from ...runtime.collector import collect_rarely
from ...runtime.elementwise import DoFnRunner, assign_windows
from ...runtime.file_stream import out_of_orderness_us
from ...runtime.lifting import PartialFold, liftable_in_streams
from ...runtime.plan import Plan, PlanNode, TranslatorTable, kinds, lower
from ...runtime.metrics import emitted_key
from ...runtime.test_stream import stream_steps
from ...sdk.user_metrics import USER
from ...windowing import MAX_MICROS, now_micros
from . import codec, packs, stream_sources
from ...runtime.fusion import Fusion
from ...runtime.deployment import time_range
from .batch import BATCH_ROWS, key_pair
from .stateful import (FILLED, TASK, KernelProcessor, SideInputProcessor,
                       StatefulDoFnProcessor)

#: the kinds of sink, which the driver writes from the rows reaching it
WRITES = (kinds.SINK, kinds.KAFKA_WRITE)


def is_sink(node: PlanNode) -> bool:
    """Whether a node writes its input out (files or Kafka) rather than computing on the bus."""
    return node.kind in WRITES


def encodes_records(node: PlanNode) -> bool:
    """Whether a sink is a Kafka sink whose records the query's tasks encode, in parallel,
    where its input is made (a step's output; a source's rows reach the driver as they
    came, and it encodes them)."""
    producer = node.inputs[0].producer
    return node.kind == kinds.KAFKA_WRITE and bool(producer and producer.inputs)


@dataclasses.dataclass
class BusStep:
    """How the bus runs one plan node, as the translator of its kind says: a source's rows
    (`rows`), an element-wise step's `Op` (`op`), or a stateful step's `transformWithState`
    processor (`processor`)."""

    #: a source: the streaming DataFrame of its rows
    rows: Optional[Callable[[], Any]] = None
    #: a source's marker channels where not one of its own (a Kafka source's, per partition)
    channels: Optional[Callable[[], List[str]]] = None
    #: an element-wise step: its `Op`
    op: Optional[Callable[[], "Op"]] = None
    #: a stateful step: its processor, given (ins, channels, outs, retained, group), the
    #: addresses and channels of what it reads, its outputs' addresses by tag, the inputs
    #: passed on, and the name of its buckets' channels
    processor: Optional[Callable[..., Any]] = None
    #: the bus column a stateful step's main-input rows are bucketed by: "k" (their key) or
    #: "v" (their value)
    key_column: str = "k"
    #: a keyed stateful step: the key of an element of its main input
    key_of: Optional[Callable[[Any], Any]] = None
    #: a stateful step's buckets, where not the plan's
    buckets: Optional[int] = None
    #: a keyed step whose keying also sends its input's marker range (a template step)
    spans: bool = False
    #: a grouping: (combine, fold), what folds its input into partial accumulators before
    #: the shuffle, each None where it cannot (`_Keying`)
    partials: Optional[Callable[[], Tuple[Any, Any]]] = None

    @property
    def stateful(self) -> bool:
        """Whether it runs per bucket in `transformWithState` (else in an Arrow task)."""
        return self.processor is not None

    @property
    def keyed(self) -> bool:
        """Whether a stateful step's main input is bucketed by the key of its elements."""
        return self.key_of is not None


def register(table: TranslatorTable) -> None:
    """Add the core translators to a Spark streaming table: each `(node, plan)` gives the
    node's `BusStep` on the `StreamingPlan`."""
    table.register(kinds.READ, _read)
    table.register(kinds.DGS_READ, _read)
    table.register(kinds.DRIVER_READ, _driver_read)
    table.register(kinds.ELEMENTWISE, _par_do)
    table.register(kinds.STATEFUL_PARDO, _stateful_par_do)
    table.register(kinds.ASSIGN_WINDOWS, _window_into)
    table.register(kinds.FLATTEN, _flatten)
    table.register(kinds.GROUP, _group)


def core_table() -> TranslatorTable:
    """A Spark streaming table of the core translators alone (`extensions.streaming_table`
    adds the extensions')."""
    table = TranslatorTable("Spark streaming")
    register(table)
    return table


class StreamingPlan:
    """Builds the bus of a pipeline whose driver reads the PCollections `targets`, each plan
    node translated once, through `table`."""

    def __init__(self, spark: Any, pipeline: Any, targets: List[Any], buckets: int,
                 options: Any, run_id: str, encoded: Sequence[PlanNode] = (),
                 table: Optional[TranslatorTable] = None, plan: Optional[Plan] = None) -> None:
        self.spark, self.pipeline, self.buckets = spark, pipeline, buckets
        self.plan = plan or lower(pipeline)   # the pipeline lowered (`runtime.plan`)
        self.run_id = run_id
        self.until_latest = options.streaming_until == "latest"
        self.out_of_orderness_us = out_of_orderness_us(options.max_out_of_orderness)
        self.interval_s = options.trigger_interval
        self.max_files = options.max_files_per_batch
        self.max_records = options.max_records_per_batch
        self.on_data_loss = options.on_data_loss
        self.virtual_clock = any(n.kind == kinds.DRIVER_READ for n in self.plan)
        made = [(n, pc_) for n in self.plan for pc_ in n.outputs.values()]
        self.address = {id(pc_): str(i) for i, (_, pc_) in enumerate(made)}
        self.made_by = {str(i): n.label for i, (n, _) in enumerate(made)}   # address -> step
        # the Kafka sinks whose records the tasks encode (`encodes_records`): the address of
        # each one's input -> [(the address its records come to the driver on, its encoder)]
        self.records: Dict[str, List[Tuple[str, Callable[[Any], tuple]]]] = {}
        self.record_address: Dict[str, str] = {}   # sink label -> its records' address
        for i, node in enumerate(encoded):
            x, address = node.inputs[0], f"r{i}"
            self.record_address[node.label] = address
            self.records.setdefault(self.address[id(x)], []).append(
                (address, node.transform.encoder(x)))
        self.targets = {self.address[id(t)] for t in targets} | set(self.record_address.values())
        self.index = {n.label: i for i, n in enumerate(self.plan)}
        self.channels: Dict[str, List[str]] = {}
        self.counts: Dict[str, Dict[str, int]] = {}
        # whether every source stops by itself (then the query can too): file streams stop
        # only when told to
        self.ends = not any(n.never_ends for n in self.plan) and (
            self.until_latest or not any(_reads_files(n) for n in self.plan))
        #: each Kafka source's channel per partition ("topic:partition" -> channel), by label
        self.partition_channels: Dict[str, Dict[str, str]] = {}
        self.fusion = Fusion(self.plan.nodes)
        self.lifted: List[str] = []   # labels of the combines lifted before the shuffle
        self.table = table or core_table()   # the translators by plan kind
        self.steps: Dict[str, BusStep] = {n.label: self.table.translate(n, self)
                                          for n in self.plan if not is_sink(n)}

    def metrics(self) -> Dict[str, Dict[str, int]]:
        return {label: dict(counts) for label, counts in self.counts.items()}

    def step(self, node: PlanNode) -> BusStep:
        """The node's translation."""
        return self.steps[node.label]

    def op(self, node: PlanNode, start: Any, fresh: Any, ranges: bool = False,
           native: Any = None) -> "Op":
        """An element-wise node's `Op`, reading and writing its PCollections' addresses."""
        return Op(node.label, [self.address[id(x)] for x in node.inputs],
                  {tag: self.address[id(x)] for tag, x in node.outputs.items()}, start, fresh,
                  ranges=ranges, native=native)

    def group(self, node: PlanNode) -> str:
        """The name of a stateful node's buckets' channels (and its state's)."""
        return f"g{self.index[node.label]}"

    # --- the bus ----------------------------------------------------------------------------
    def build(self) -> Any:
        """The bus after the last stage: the rows of the targets."""
        nodes = [n for n in self.plan if not is_sink(n)]
        for node in nodes:
            self._channels(node)
        sources = [n for n in nodes if not n.inputs]
        steps = [n for n in nodes if n.inputs]
        stages: List[List[Any]] = []   # runs of element-wise nodes, and stateful nodes alone
        for node in steps:
            if self.step(node).stateful:
                stages.append([node])
            elif stages and not self.step(stages[-1][0]).stateful:
                stages[-1].append(node)
            else:
                stages.append([node])
        bus = reduce(lambda a, b: a.unionByName(b), [self._source(n) for n in sources])
        def read_after(s: int) -> Set[str]:   # what the driver and the stages after `s` read
            return self.targets | {self.address[id(x)] for later in stages[s + 1:]
                                   for n in later for x in n.reads()}

        def task(s: int) -> Any:
            """The Arrow task of element-wise stage `s` (keying the grouping after it), or of
            stateful stage `s`'s keying alone."""
            needed = read_after(s)
            if self.step(stages[s][0]).stateful:
                return self._elementwise([], needed, stages[s][0], needed)
            follower = stages[s + 1][0] if s + 1 < len(stages) else None
            beyond = read_after(s + 1)
            if follower is not None:
                beyond |= {self.address[id(x.pcoll)] for x in follower.side_inputs}
            return self._elementwise(stages[s], needed, follower, beyond)

        # The task after a stateful stage (the element-wise stage that follows, or the keying
        # of a grouping that follows) runs in that stage's own task, on its outputs as objects.
        fused: Set[int] = set()
        for s, stage in enumerate(stages):
            step = self.step(stage[0])
            if step.stateful and step.keyed and s == 0:
                bus = bus.mapInArrow(task(s), codec.KEYED_STREAM)   # only keys its input
            if not step.stateful:
                if s not in fused:
                    bus = bus.mapInArrow(task(s), codec.KEYED_STREAM)
                continue
            after = None
            following = self.step(stages[s + 1][0]) if s + 1 < len(stages) else None
            if following is not None and (not following.stateful or following.keyed):
                after = task(s + 1)
                fused.add(s + 1)
            elif any(self.address[id(x)] in self.records for x in stage[0].outputs.values()):
                # encodes a sink's records
                after = _task([], read_after(s), None, self.records, self.made_by)
            bus = self._stateful(bus, stage[0], read_after(s), after)
        return bus

    def _channels(self, node: PlanNode) -> None:
        """Where the markers reaching each output come from: a source's own channel (or those
        its translation names), a stateful node's buckets, else the union of the inputs'
        channels."""
        step = self.step(node)
        if step.channels is not None:
            channels = step.channels()
        elif not node.inputs:
            channels = [f"s{self.index[node.label]}"]
        elif step.stateful:
            channels = [f"{self.group(node)}#{b}" for b in range(self._buckets_of(node))]
        else:
            channels = sorted({c for x in node.inputs for c in self.channels[self.address[id(x)]]})
        for x in node.outputs.values():
            self.channels[self.address[id(x)]] = channels

    # --- sources ----------------------------------------------------------------------------
    def _source(self, node: PlanNode) -> Any:
        from pyspark.sql import functions as F
        rows = self.step(node).rows
        if rows is None:
            raise TypeError(f"{node.label}: {type(node.transform).__name__} is not a source")
        df = rows()
        main = F.array(F.lit(self.address[id(node.outputs[None])]))
        dead_tag = node.dead_letter_tag
        if dead_tag is not None:   # dead letters to their output, markers to both
            dead = F.lit(self.address[id(node.outputs[dead_tag])])
            main = (F.when(F.col("m").isNotNull(), F.array(main[0], dead))
                    .when(F.col("t").isNull(), main).otherwise(F.array(dead)))
        # a reader's counts (rows addressed to the driver) stay as they are
        address = F.explode(F.when(F.col("t") == codec.COUNTS, F.array(F.col("t"))).otherwise(main))
        return df.select(F.lit(None).cast("binary").alias("k"), *codec.ELEMENT_ARROW.names,
                         address.alias("t"), "m", "b", "n")

    def script(self, node: PlanNode, steps: List[tuple]) -> Any:
        """The rows of a source replayed as a script of micro-batches (elements, watermark,
        clock) (`stream_sources.STEPS`)."""
        self.counts[node.label] = {"read": sum(len(elements) for elements, _, _ in steps)}
        batches = stream_sources.script(f"s{self.index[node.label]}", steps)
        return (self.spark.readStream.format(stream_sources.STEPS)
                .option("payload", stream_sources.payload(dict(batches=batches))).load())

    def files(self, node: PlanNode) -> Any:
        """The rows of a file source, its files read as they appear (`stream_sources.FILES`)."""
        return (self.spark.readStream.format(stream_sources.FILES)
                .option("payload", stream_sources.payload(dict(
                    channel=f"s{self.index[node.label]}", source=node.transform,
                    label=node.label, until_latest=self.until_latest,
                    out_of_orderness_us=self.out_of_orderness_us,
                    interval_s=self.interval_s, real_clock=not self.virtual_clock,
                    max_files=self.max_files)))
                .load())

    # --- stages -----------------------------------------------------------------------------
    def _elementwise(self, nodes: List[PlanNode], needed: Set[str],
                     follower: Optional[PlanNode], beyond: Set[str]) -> Any:
        """The Arrow task of element-wise nodes; the rows of a keyed stateful step that
        follows get their keys here (`beyond`: the addresses read after that step)."""
        ops = [self._op(n) for n in nodes]
        key = None
        step = self.step(follower) if follower is not None else None
        if step is not None and step.keyed:
            main = follower.inputs[0]
            combine = fold = None
            # partials stand for the rows they fold only where nothing else reads those rows
            if step.partials is not None and self.address[id(main)] not in beyond:
                combine, fold = step.partials()
            key = _Keying(self.address[id(main)], follower.label, step.key_of,
                          self._buckets_of(follower), combine, fold, spans=step.spans)
        return _task(ops, needed, key, self.records, self.made_by)

    def _buckets_of(self, node: PlanNode) -> int:
        """A stateful node's buckets: its translation's, else the plan's."""
        buckets = self.step(node).buckets
        return self.buckets if buckets is None else buckets

    def _op(self, node: PlanNode) -> "Op":
        op = self.step(node).op
        if op is None:
            raise TypeError(f"{node.label}: {type(node.transform).__name__} has no streaming "
                            f"translation as an element-wise step")
        return op()

    def _stateful(self, bus: Any, node: PlanNode, needed: Set[str], after: Any) -> Any:
        """A stateful node in `transformWithState`, per bucket, with the task after it
        (`after`, or None) in its own task."""
        from pyspark.sql import functions as F
        step = self.step(node)
        ins = [self.address[id(x)] for x in node.reads()]
        channels = [self.channels[a] for a in ins]
        outs = {tag: self.address[id(x)] for tag, x in node.outputs.items()}
        retained = [a for a in ins if a in needed]
        processor = step.processor(ins, channels, outs, retained, self.group(node))
        key = F.col(step.key_column)
        tcol, buckets = F.col("t"), self._buckets_of(node)
        own = ((tcol == ins[0]) & F.col("m").isNull() if ins[0] not in ins[1:]
               else F.lit(False))   # a main input also read as a side input: every bucket
        every = F.sequence(F.lit(0), F.lit(buckets - 1))
        # a keyed input's packs name their bucket (`packs.bucket_of`); a row passing through
        # goes to the bucket of the task that made it: a few large rows (a Kafka sink's
        # records, one per task upstream) hashed by content often all landed in one bucket
        bucket = (
            F.when(own, F.array(F.coalesce(F.col("n"), F.pmod(F.xxhash64(key, "b"),
                                                              F.lit(buckets)))))
            .when(tcol.isin(*ins), every)
            .otherwise(F.array(F.pmod(F.col(TASK), F.lit(buckets)))))
        # each bucket grouped by a value that lands in a partition of its own (`bucket_labels`)
        labels = packs.bucket_labels(buckets, self.buckets)
        processor.labels = {label: b for b, label in enumerate(labels)}
        processor.after = after
        values = F.array(*[F.lit(x).cast("long") for x in labels])
        label = F.explode(F.transform(bucket, lambda b: F.element_at(values, (b + 1).cast("int"))))
        return (bus.fillna(0, subset=list(FILLED)).withColumn(TASK, F.spark_partition_id())
                .withColumn("bucket", label).groupBy("bucket")
                .transformWithStateInPandas(processor, codec.KEYED_STREAM, "Append", "None"))


# --- the core translators ---------------------------------------------------------------------

def _read(node: PlanNode, plan: StreamingPlan) -> BusStep:
    """A source making its elements itself (a Create, merged DGS streams), as one
    micro-batch; a file source, its files as they appear."""
    if node.makes_bundles:
        t = node.transform

        def rows() -> Any:
            elements = [wv for bundle in t.bundles(BATCH_ROWS) for wv in bundle]
            clock = None if plan.virtual_clock else now_micros()
            return plan.script(node, [(elements, MAX_MICROS, clock)])
        return BusStep(rows=rows)
    if node.kind == kinds.READ:
        return BusStep(rows=lambda: plan.files(node))
    return BusStep()   # DGS streams each worker reads itself: not a source of the bus


def _driver_read(node: PlanNode, plan: StreamingPlan) -> BusStep:
    """A TestStream, its steps as the script of micro-batches."""
    return BusStep(rows=lambda: plan.script(node, stream_steps(node.transform)))


def _par_do(node: PlanNode, plan: StreamingPlan) -> BusStep:
    """A ParDo: element-wise, or with side inputs per bucket (its main input bucketed by
    value)."""
    t, label, schema = node.transform, node.label, node.schema
    if node.side_inputs:
        def processor(ins: List[str], channels: List[List[str]], outs: Dict[Optional[str], str],
                      retained: List[str], group: str) -> Any:
            return SideInputProcessor(label, t, node.side_inputs, outs, ins, channels, retained,
                                      group, schema)
        return BusStep(processor=processor, key_column="v")
    tags = list(node.outputs)
    passes = node.passes_elements
    # an output's elements are new objects, else the input's, shared (as the local runner's
    # stages say, `makes_fresh`)
    return BusStep(op=lambda: plan.op(
        node, lambda: _ParDoFn(t, tags, label, schema),
        lambda tag, owned: tag is not None or not passes or owned,
        native=columnar.native_step(t, schema) if node.native else None))


def _stateful_par_do(node: PlanNode, plan: StreamingPlan) -> BusStep:
    """A ParDo of a stateful DoFn, per bucket of its keys."""
    t, label = node.transform, node.label

    def processor(ins: List[str], channels: List[List[str]], outs: Dict[Optional[str], str],
                  retained: List[str], group: str) -> Any:
        return StatefulDoFnProcessor(label, t, node.inputs[0].windowing.allowed_lateness_us,
                                     ins, channels, outs, retained, group,
                                     real_clock=not plan.virtual_clock)
    return BusStep(processor=processor, key_of=_pair_key(label))


def _window_into(node: PlanNode, plan: StreamingPlan) -> BusStep:
    t, label = node.transform, node.label
    return BusStep(op=lambda: plan.op(
        node, lambda: _WindowFn(t, label), lambda tag, owned: t.window_fn is not None or owned,
        native=columnar.native_windows(t) if node.native else None))


def _flatten(node: PlanNode, plan: StreamingPlan) -> BusStep:
    return BusStep(op=lambda: plan.op(node, None, lambda tag, owned: owned, native=codec.same))


def _group(node: PlanNode, plan: StreamingPlan) -> BusStep:
    """A GroupByKey or CombinePerKey, per bucket of its keys, in the GroupAlsoByWindow
    kernel; a combine folds partial accumulators before the shuffle where it can (natively,
    `columnar.native_combine`, or lifted, `lifting.liftable_in_streams`)."""
    t, label, strategy = node.transform, node.label, node.strategy

    def processor(ins: List[str], channels: List[List[str]], outs: Dict[Optional[str], str],
                  retained: List[str], group: str) -> Any:
        return KernelProcessor(label, strategy, t, ins, channels, outs, retained,
                               group, real_clock=not plan.virtual_clock, late_tag=t.late_tag,
                               settle_s=plan.interval_s / 2)

    def partials() -> Tuple[Any, Any]:
        fn, combiner = t.combine_fn, strategy.timestamp_combiner
        combine = fold = None
        if node.native:
            combine = lambda: columnar.aggregator(fn, combiner, tally=True)   # noqa: E731
        if liftable_in_streams(fn, strategy, bool(node.inputs[0].may_retract), t.late_tag):
            plan.lifted.append(label)
            fold = lambda: PartialFold.own(fn, combiner, label, tally=True)   # noqa: E731
        return combine, fold
    return BusStep(processor=processor, key_of=_pair_key(label), partials=partials)


def _pair_key(label: str) -> Callable[[Any], Any]:
    """The key of a (key, value) element of the step labelled `label`."""
    return lambda value: key_pair(value, label)[0]


class Op:
    """An element-wise node on the bus: its step's label, input addresses, output addresses
    by tag, what makes its function (started once per task; None: Flatten, elements passed
    on as they are), `fresh(tag, owned)`: whether the elements it outputs on `tag` are its
    own new objects,
    `ranges`: whether it sends its elements' marker range on (a typed declaration), and
    `native`: its columnar form (`runtime.columnar`; None: columns become elements for it)."""

    def __init__(self, label: str, ins: List[str], outs: Dict[Optional[str], str], start: Any,
                 fresh: Any, ranges: bool = False, native: Any = None) -> None:
        self.label, self.ins, self.outs, self.start, self.fresh = label, ins, outs, start, fresh
        self.ranges, self.native = ranges, native


class _ParDoFn:
    def __init__(self, t: Any, tags: List[Optional[str]], label: str,
                 schema: Optional[Any]) -> None:
        self.runner = DoFnRunner(t, tags, label, schema)
        self.runner.setup()

    def __call__(self, elements: list, owned: bool) -> Dict[Optional[str], list]:
        return self.runner.process(elements, owned, None)

    def finish(self) -> None:
        self.runner.teardown()


class _WindowFn:
    def __init__(self, t: Any, label: str) -> None:
        self.t, self.label = t, label

    def __call__(self, elements: list, owned: bool) -> Dict[Optional[str], list]:
        return {None: assign_windows(self.t, elements, owned, self.label)}

    def finish(self) -> None:
        pass


def _reads_files(node: PlanNode) -> bool:
    """A stream of files: a source the runtime reads, not one making its own elements."""
    return node.kind == kinds.READ and not node.makes_bundles


def _task(ops: List[Op], needed: Set[str], key: Optional[_Keying],
          records: Dict[str, List[Tuple[str, Callable[[Any], tuple]]]],
          made_by: Dict[str, str]) -> Any:
    """The Arrow task of a run of element-wise nodes: for each batch of bus rows, the rows of
    the nodes' inputs decoded and run through them in order (columnar bundles natively where
    the runtime can, `Op.native`), their outputs (and inputs still needed later) packed back,
    every other row passed through as it is. The input of a keyed stateful step that follows
    is keyed (`_Keying`). What it makes for a Kafka sink the tasks encode (`records`: the
    sink's input address -> [(its records' address, its encoder)]) is also sent as the sink's
    records (`packs.record_rows`). The task ends with a counts row per node: what it emitted
    on each output (`runtime.metrics.with_flow`). An output that cannot be pickled is an
    error naming the step that made it (`made_by`: address -> step label)."""
    consumed = {a for op in ops for a in op.ins} | ({key.address} if key else set())
    readers: Dict[str, int] = {}
    for op in ops:
        for a in op.ins:
            readers[a] = readers.get(a, 0) + 1

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        collect_rarely()
        fns = [op.start() if op.start is not None else None for op in ops]
        if key is not None:
            key.start()
        flow: Dict[str, Dict[str, int]] = {}
        try:
            for b in batches:
                yield from _run_ops(b, ops, fns, consumed, readers, needed, key, flow, records,
                                    made_by)
            if key is not None:
                yield from key.finish()
            for op, fn in zip(ops, fns):
                if isinstance(fn, _ParDoFn) and fn.runner.metrics:
                    flow.setdefault(op.label, {})[USER] = fn.runner.metrics.take()
            for label, counts in flow.items():
                yield packs.counts_row(label, counts)
        finally:
            for fn in fns:
                if fn is not None:
                    fn.finish()
            if key is not None:
                key.close()
    return task


def _run_ops(b: Any, ops: List[Op], fns: list, consumed: Set[str],
             readers: Dict[str, int], needed: Set[str],
             key: Optional["_Keying"], flow: Dict[str, Dict[str, int]],
             records: Dict[str, List[Tuple[str, Callable[[Any], tuple]]]],
             made_by: Dict[str, str]) -> Iterator[pa.RecordBatch]:
    key_address = key.address if key is not None else None
    pending: Dict[str, packs.Bus] = {}
    produced = {out for op in ops for out in op.outs.values()}   # addresses this task makes
    if isinstance(b, dict):   # a stateful step's outputs, as objects (address -> Bus)
        produced |= b.keys()
        for a, bus in b.items():
            if a in consumed:
                pending[a] = bus
                continue
            for address, encode in records.get(a, ()):
                yield packs.record_rows(bus, address, encode)
            if a in needed or a not in records:
                yield codec.made_by(made_by[a], "its output", packs.bus_rows, bus, a)
    else:
        t = b.column("t")
        present = set(pc.unique(t).to_pylist())
        passing = pc.invert(pc.is_in(t, value_set=pa.array(sorted(consumed), pa.string())))
        rest = b.filter(passing)
        if rest.num_rows:   # Spark may hand over large binary and string columns
            yield rest.cast(codec.KEYED_STREAM_ARROW)
        for a in consumed & present:
            pending[a] = packs.read_bus(b.filter(pc.equal(t, a)))
    # whether an address's elements are referenced nowhere else
    fresh: Dict[str, bool] = dict.fromkeys(pending, True)
    for op, fn in zip(ops, fns):
        ins = [pending[a] for a in op.ins if a in pending]
        markers = [m for x in ins for m in x.markers]
        columns = [c for x in ins for c in x.columns]
        elements = [wv for x in ins for wv in x.elements]
        made = [op.native(c) if op.native else None for c in columns]
        # a bundle the step cannot take natively (None) goes through its own function
        elements += [wv for c, m in zip(columns, made) if m is None for wv in c.elements()]
        # the node may update its input in place only if nothing else reads or emits it (a
        # sink's records are encoded from it once the task's nodes ran)
        owned = all(fresh.get(a, True) and readers[a] == 1 and a not in needed
                    and a != key_address and a not in records for a in op.ins)
        if fn is None:
            results = {None: elements}
        else:
            results = fn(elements, owned) if elements else {}
        native_rows = sum(len(m) for m in made if m is not None)
        for tag, out in op.outs.items():
            n = len(results.get(tag, ())) + (native_rows if tag is None else 0)
            if n:
                counts, name = flow.setdefault(op.label, {}), emitted_key(tag)
                counts[name] = counts.get(name, 0) + n
            entry = pending.setdefault(out, packs.Bus())
            entry.elements.extend(results.get(tag, ()))
            entry.columns.extend(m for m in made if m is not None and tag is None)
            entry.markers.extend(markers)
            if op.ranges:
                entry.markers.extend(codec.range_markers(time_range(elements)))
            fresh[out] = op.fresh(tag, owned)
    for a, bus in pending.items():
        if a in produced:
            for address, encode in records.get(a, ()):
                yield packs.record_rows(bus, address, encode)
        if a == key_address:
            yield codec.made_by(made_by[a], "its output", key.rows, bus)
        elif a in needed:
            yield codec.made_by(made_by[a], "its output", packs.bus_rows, bus, a)


class _Keying:
    """The input of a keyed stateful step, as its keying task sends it: elements packed per
    bucket of their keys, with the markers. A grouping's partial accumulators per key and
    window, folded over the task's whole input, are sent at its end: with `combine` (a
    grouping the runtime folds natively, `columnar.native_combine`), of its columnar
    bundles; with `fold` (a combine lifted, `lifting.liftable_in_streams`), of its
    elements, those of bundles not folded natively included. With `spans` (a template step)
    it also gets the marker rows of its range (`codec.range_markers`)."""

    def __init__(self, address: str, label: str, key_of: Any, buckets: int, combine: Any,
                 fold: Any, spans: bool) -> None:
        self.address, self.label, self.key_of, self.buckets = address, label, key_of, buckets
        self.combine, self.fold, self.spans = combine, fold, spans
        self.aggregator: Any = None
        self.folded: Any = None
        self.pickled: Callable[[Any], bytes] = codec.key_writer()

    def start(self) -> None:
        self.aggregator = self.combine() if self.combine is not None else None
        self.folded = self.fold() if self.fold is not None else None
        self.pickled = codec.key_writer()

    def close(self) -> None:
        """Tear down the fold's CombineFn, the task's input done (or failed)."""
        if self.folded is not None:
            self.folded.close()

    def rows(self, bus: packs.Bus) -> pa.RecordBatch:
        elements = list(bus.elements)
        for c in bus.columns:
            if self.aggregator is None or not self.aggregator.add(c):
                elements += c.elements()
        markers = bus.markers
        if self.spans:
            markers = markers + codec.range_markers(time_range(elements))
        pickled, key_of = self.pickled, self.key_of
        keys = [pickled(key_of(wv.value)) for wv in elements]
        if self.folded is not None:
            self.folded.add(elements, keys)
            elements, keys = [], []
        return packs.element_rows(elements, markers, self.address, keys, self.buckets)

    def finish(self) -> Iterator[pa.RecordBatch]:
        """The partial accumulators folded over the task's input."""
        if self.aggregator:
            yield packs.partial_rows(self.aggregator.partial_columns(), self.address,
                                     self.buckets)
        if self.folded:
            partials, keys = self.folded.take()
            yield codec.made_by(self.label, "a partial accumulator (key, accumulator)",
                                packs.element_rows, partials, [], self.address, keys,
                                self.buckets, kind=packs.PARTIALS)
