"""A bounded pipeline as a Spark DataFrame plan: one DataFrame of element rows (see `codec`)
per PCollection.

- A schema'd pipeline stays Spark's own columns where it can (`columns.py`): a Parquet read,
  `Select`/`WithColumns`/`Filter` by expression, fixed/sliding/global windows, built-in
  aggregations that fire once and a Parquet sink compile to one Spark SQL plan; where such
  columns meet a step that needs elements they become elements in that step's task.
- Element-wise Python steps (file reads, ParDos, custom window assignment, keying) run the
  SDK's own code over Arrow batches, consecutive ones fused into one task (`steps.py`): a
  `mapInArrow` task, or the task of the grouping they follow.
- Fixed and sliding windows are Spark column arithmetic.
- A grouping shuffles by a hash bucket of the key and runs the GroupAlsoByWindow kernel over
  each bucket in `applyInArrow`, all elements in and then the watermark from MIN to MAX (the
  paper's batch execution, Figure 10); combines that fire once in batch are lifted: partial
  accumulators per key and window before the shuffle.
- The typed-deployment steps (template steps, O+, DGS) are extensions: their modules register
  their translators (`extensions.py`) over this plan's public interface.
"""
from __future__ import annotations

from collections import Counter
from functools import partial, reduce
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

from ...runtime.elementwise import DoFnRunner, assign_windows, side_input_args
from ...sdk.errors import UserCodeError
from ...sdk.user_metrics import USER, merge_snapshots
from ...runtime import combine_lifecycle
from ...runtime.combine_lifecycle import combine_fns_of, with_own_combine_fns
from ...runtime.collector import collect_rarely
from ...runtime.fusion import Fusion
from ...runtime.kernel_host import KernelHost
from ...runtime.lifting import PartialFold, liftable
from ...runtime.stateful_dofn import StatefulDoFnHost
from ...runtime.columnar import window_geometry
from ...runtime.metrics import emitted_key, with_flow
from ...runtime.plan import Plan, PlanNode, TranslatorTable, lower
from ...runtime.plan import kinds
from ...runtime.reads import read_bundles
from ...triggers.reducers import AccumulatorReducer, Bag
from ...windowing import WindowedValue, now_micros
from ...windowing.windowfns import FixedWindows, GlobalWindows, SlidingWindows
from . import codec
from . import columns as cols
from .columns import Columnar
from .steps import Steps, decoded, encoded

BATCH_ROWS = 10_000   # elements per Arrow batch a task emits
#: the kinds of source, whose outputs count as read (not as emitted)
READS = (kinds.READ, kinds.DGS_READ, kinds.DRIVER_READ, kinds.KAFKA_READ)
#: the kinds of sink, which the runner writes from their input's DataFrame
WRITES = (kinds.SINK, kinds.KAFKA_WRITE)


def register(table: TranslatorTable) -> None:
    """Add the core translators to a Spark batch table: each `(node, plan)` gives the node's
    outputs by tag, as a DataFrame, columns (`Columnar`) or pending Python steps (`Steps`)."""
    table.register(kinds.READ, lambda node, plan: plan._read(node))
    table.register(kinds.DGS_READ, lambda node, plan: plan._read(node))
    table.register(kinds.ELEMENTWISE, lambda node, plan: plan._par_do(node.transform, node))
    table.register(kinds.STATEFUL_PARDO,
                   lambda node, plan: plan._stateful_par_do(node.transform, node))
    table.register(kinds.ASSIGN_WINDOWS,
                   lambda node, plan: {None: plan._window_into(node.transform, node)})
    table.register(kinds.FLATTEN, lambda node, plan: {None: plan._flatten(node)})
    table.register(kinds.GROUP, lambda node, plan: plan._group_outputs(node))


def core_table() -> TranslatorTable:
    """A Spark batch table of the core translators alone (`extensions.batch_table` adds the
    extensions')."""
    table = TranslatorTable("Spark batch")
    register(table)
    return table


def read_more_than_once(pipeline: Any, recorded: List[Any]) -> Callable[[Any], bool]:
    """Whether a PCollection is read more than once in a batch run: as a transform's main or
    side input (a sink's included), and by the driver when the run keeps it for
    `result.collect`. `BatchPlan.build` persists those, so that their producers run once;
    any other is computed in the task of its one reader, consecutive Python steps fused."""
    uses = _readers(pipeline, recorded)
    return lambda pc: uses[id(pc)] > 1


def unread(pipeline: Any, recorded: List[Any]) -> List[Any]:
    """The PCollections nothing reads: no step (sinks included) and not recorded."""
    uses = _readers(pipeline, recorded)
    return [pc for node in pipeline.nodes for pc in node.outputs.values() if not uses[id(pc)]]


def _readers(pipeline: Any, recorded: List[Any]) -> Counter:
    """How many times each PCollection (by id) is read: as a main or side input, and by the
    driver if recorded."""
    uses = Counter(id(pc) for pc in recorded)
    for node in pipeline.nodes:
        for pc in node.reads():
            uses[id(pc)] += 1
    return uses


class BatchPlan:
    """Builds the DataFrames of a bounded pipeline's PCollections, node by node."""

    def __init__(self, spark: Any, pipeline: Any, table: Optional[TranslatorTable] = None,
                 plan: Optional[Plan] = None) -> None:
        self.spark = spark
        self.pipeline = pipeline
        self.plan = plan or lower(pipeline)   # the pipeline lowered (`runtime.plan`)
        self.table = table or core_table()   # the translators by plan kind
        self.dfs: Dict[int, Any] = {}
        self.counts: Dict[str, Dict[str, Any]] = {}   # label -> name -> int or Spark accumulator
        self.persisted: List[Any] = []
        self.lifted: List[str] = []   # labels of the combines lifted before the shuffle
        self.fusion = Fusion(pipeline.nodes)
        self.marker_ranges: Dict[int, Any] = {}   # typed node -> its marker range (lazily)
        self.sink_dfs: Dict[str, Any] = {}   # sink label -> the DataFrame it writes natively
        # label -> output tag -> what counts the step's elements on it (see `_counted`)
        self.flow: Dict[str, Dict[Optional[str], Any]] = {}
        self.as_received: Set[Tuple[str, Optional[str]]] = set()   # outputs of 1:1 steps

    def build(self, reused: Callable[[Any], bool]) -> None:
        """Translate every node; a PCollection `reused` says is read more than once is
        persisted, so its producers run once."""
        for node in self.plan:
            if node.kind in WRITES:
                continue
            outs = self._columnar(node) or self.table.translate(node, self)
            if node.kind not in READS:
                outs = {tag: self._counted(node, tag, out) for tag, out in outs.items()}
            for tag, pc in node.outputs.items():
                self.dfs[id(pc)] = outs[tag]
                if reused(pc) and isinstance(outs[tag], Columnar):
                    c = outs[tag]
                    self.dfs[id(pc)] = c.with_df(c.df.persist())
                    self.persisted.append(self.dfs[id(pc)].df)
                elif reused(pc):
                    self.persisted_df(pc)

    def run_unread(self, pcolls: List[Any]) -> None:
        """Run the steps whose outputs nothing reads (no sink, no step, not recorded), as every
        runner runs every step of a pipeline (their DoFns' effects and counts included):
        Spark runs only what an action needs. One output per step: its others come from the
        same run or are counted where they were made."""
        seen = set()
        for pc in pcolls:
            if id(pc.producer) in seen:
                continue
            seen.add(id(pc.producer))
            self.df(pc).write.format("noop").mode("overwrite").save()

    def persisted_df(self, pcoll: Any) -> Any:
        """The PCollection's DataFrame, persisted (released at the run's end): for one read
        more than once, or one a translation runs a job over (a template step's time range)
        before its own step reads it, so the steps that produce it run, and count, once."""
        df = self.df(pcoll)
        if not df.is_cached:
            df = self.dfs[id(pcoll)] = df.persist()
            self.persisted.append(df)
        return df

    def df(self, pcoll: Any) -> Any:
        """The PCollection's DataFrame (running its pending Python steps, if any)."""
        df = self.dfs[id(pcoll)]
        if isinstance(df, Columnar):
            return self.step_df(Steps(df.df, df.head()), pcoll.producer.label)
        if isinstance(df, Steps):
            df = self.dfs[id(pcoll)] = self.step_df(df, pcoll.producer.label)
        return df

    def steps(self, pcoll: Any) -> Steps:
        """The Python steps that produce `pcoll`, to be extended: its pending ones (it has no
        other reader: a reused PCollection was run and persisted), else a decode of its rows."""
        df = self.dfs[id(pcoll)]
        if isinstance(df, Columnar):
            return Steps(df.df, df.head())
        return df if isinstance(df, Steps) else Steps(df, decoded)

    def step_df(self, steps: Steps, made_by: str, tagged: bool = False) -> Any:
        """The DataFrame of the elements (with their tags, if `tagged`) the steps produce, the
        last of them step `made_by`."""
        return steps.run(encoded(tagged), codec.TAGGED if tagged else codec.ELEMENT, made_by)

    def elements(self, pcoll: Any) -> List[WindowedValue]:
        """A PCollection's elements, brought to the driver."""
        return codec.decode(self.df(pcoll).toArrow())

    def parquet_output(self, node: Any) -> Optional[Any]:
        """The DataFrame a Parquet sink node writes natively (recorded in `sink_dfs`), or None
        when its input is elements (the driver then writes them)."""
        c = self.dfs.get(id(node.inputs[0]))
        if not isinstance(c, Columnar):
            return None
        df = cols.parquet_output(c, node.transform, node.inputs[0])
        if df is not None:
            self.sink_dfs[node.label] = df
        return df

    def write_native(self, node: Any) -> bool:
        """Write a sink node natively, if its input is columns it can write."""
        df = self.parquet_output(node)
        if df is None:
            return False
        shards = cols.write_parquet(self.spark, df, node.transform)
        self.counts[node.label] = {"written": sum(pq.read_metadata(s).num_rows for s in shards)}
        return True

    def element_df(self, elements: List[WindowedValue]) -> Any:
        """A DataFrame of elements made on the driver."""
        if not elements:
            return self.empty()
        return self.spark.createDataFrame(pa.Table.from_batches(
            list(codec.batches(elements, BATCH_ROWS)), schema=codec.ELEMENT_ARROW))

    def release(self) -> None:
        for df in self.persisted:
            df.unpersist()

    # --- translation ------------------------------------------------------------------------
    def _columnar(self, node: PlanNode) -> Optional[Dict[Optional[str], Any]]:
        """The node's outputs as columns (`columns.py`), or None where it needs elements."""
        t = node.transform
        if node.kind == kinds.READ and not node.makes_bundles:
            return cols.read_parquet(self, t, node) if cols.reads_natively(t) else None
        if not node.inputs or node.side_inputs:
            return None
        c = self.dfs.get(id(node.inputs[0]))
        if not isinstance(c, Columnar):
            return None
        out = None
        if node.kind == kinds.ELEMENTWISE:
            out = cols.par_do(c, t, node)
        elif node.kind == kinds.ASSIGN_WINDOWS:
            out = cols.window_into(c, t)
        elif node.kind == kinds.GROUP:
            out = cols.combine(c, t, node)
        return None if out is None else {None: out}

    def _read(self, node: PlanNode) -> Dict[Optional[str], Any]:
        if node.makes_bundles:
            return {None: self._create(node.transform, node)}
        return self._read_files(node.transform, node)

    def _group_outputs(self, node: PlanNode) -> Dict[Optional[str], Any]:
        if node.transform.late_tag is not None:
            return self._tagged(self.step_df(self._group(node.transform, node), node.label,
                                             tagged=True), node)
        return {None: self._group(node.transform, node)}

    def as_element_rows(self, node: Any) -> None:
        """Turn the node's columnar inputs into element rows, for a translator that reads
        those (the typed, template and O+ steps)."""
        for pc in node.inputs:
            if isinstance(self.dfs[id(pc)], Columnar):
                self.dfs[id(pc)] = self.df(pc)

    def persist(self, df: Any) -> Any:
        """`df` persisted, released at the run's end."""
        df = df.persist()
        self.persisted.append(df)
        return df

    def empty(self) -> Any:
        """An empty DataFrame of element rows."""
        return self.spark.createDataFrame([], codec.ELEMENT)

    def _create(self, t: Any, node: Any) -> Any:
        elements = (wv for bundle in t.bundles(BATCH_ROWS) for wv in bundle)
        table = pa.Table.from_batches(list(codec.batches(elements, BATCH_ROWS)),
                                      schema=codec.ELEMENT_ARROW)
        self.counts[node.label] = {"read": table.num_rows}
        if table.num_rows == 0:
            return self.empty()
        # a partition per Arrow batch, at most one per core: coalesced, as a shuffle costs a
        # job (a small Create's whole run) and spreads rows no better
        parallelism = self.spark.sparkContext.defaultParallelism
        return self.spark.createDataFrame(table).coalesce(
            max(1, min(parallelism, table.num_rows // BATCH_ROWS + 1)))

    def _tagged(self, df: Any, node: Any) -> Dict[Optional[str], Any]:
        """The outputs of a step that wrote a tag column (null for the main output): one
        DataFrame per output tag, all read from the step's persisted rows, so it runs once."""
        from pyspark.sql import functions as F
        df = df.persist()
        self.persisted.append(df)
        return {tag: df.filter(F.col("t").isNull() if tag is None else F.col("t") == tag).drop("t")
                for tag in node.outputs}

    def _read_files(self, t: Any, node: Any) -> Dict[Optional[str], Any]:
        """One file per task, read by the source's own reader; without a dead-letter output
        the rows go on to the following Python steps in the same task."""
        files = t.files()
        label, dead_tag = node.label, t.dead_letter_tag
        read_count = self._counter(label, "read")
        counter = self._counter(label, "dead_lettered") if dead_tag is not None else None

        def read(b: pa.RecordBatch) -> Iterator[Tuple[Optional[str], List[WindowedValue]]]:
            """(tag, bundle) for the files named in a batch of paths."""
            for tag, bundle in read_bundles(t, label, BATCH_ROWS, b.column("path").to_pylist()):
                (read_count if tag is None else counter).add(len(bundle))
                yield tag, bundle
        paths = self.spark.createDataFrame([(f,) for f in files], "path string").repartition(
            min(len(files), self.spark.sparkContext.defaultParallelism))
        if dead_tag is None:
            return {None: Steps(paths, lambda b: (bundle for _, bundle in read(b)))}

        def tagged(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            collect_rarely()
            for b in batches:
                for tag, bundle in read(b):
                    yield codec.encode(bundle, tags=[tag] * len(bundle))
        return self._tagged(paths.mapInArrow(tagged, codec.TAGGED), node)

    def _side_data(self, node: Any) -> List[Dict[Any, list]]:
        """Each side input's values by window, brought to the driver (and shipped to tasks)."""
        data = []
        for side in node.side_inputs:
            bags: Dict[Any, Bag] = {}
            for wv in self.elements(side.pcoll):
                bag = bags.get(wv.window)
                if bag is None:
                    bag = bags[wv.window] = Bag()
                bag.add(wv.value, wv.diff)
            data.append({w: list(bag.pos) for w, bag in bags.items()})
        return data

    def _par_do(self, t: Any, node: Any) -> Dict[Optional[str], Any]:
        tags = list(node.outputs)
        label, schema = node.label, node.inputs[0].schema
        sides = node.side_inputs
        side_data = self._side_data(node) if sides else None
        counter = self._counter(label, "dead_lettered") if t.dead_letter_tag is not None else None
        user = self.counts.setdefault(label, {})[USER] = self.spark.sparkContext.accumulator(
            {}, _UserMetrics())

        def start() -> Any:
            runner = DoFnRunner(with_own_combine_fns(t), tags, label, schema)
            side_args = (side_input_args(t, sides, lambda j, w: side_data[j].get(w, []))
                         if sides else None)
            runner.setup()

            def finish() -> None:
                runner.teardown()
                if counter is not None:
                    counter.add(runner.dead_count)
                if runner.metrics:
                    user.add(runner.metrics.take())
            return (lambda bundle: runner.process(bundle, True, side_args)), finish
        steps = self.steps(node.inputs[0])
        if len(tags) == 1:
            return {None: steps.then(lambda: _outputs_of(start(), None))}

        accs = {tag: self._flow_counter(label, tag) for tag in tags}

        def counted() -> Any:
            process, finish = start()
            return (lambda bundle: _count_tags(accs, process(bundle))), finish
        return self._tagged(self.step_df(steps.then(counted), label, tagged=True), node)

    def _window_into(self, t: Any, node: Any) -> Any:
        fn = t.window_fn
        if fn is None:
            return self.dfs[id(node.inputs[0])]
        if type(fn) in (FixedWindows, SlidingWindows):
            return _assign_by_columns(self.df(node.inputs[0]), fn)
        label = node.label
        return self.steps(node.inputs[0]).then(
            lambda: ((lambda bundle: assign_windows(t, bundle, True, label)), None))

    def _flatten(self, node: Any) -> Any:
        dfs = [self.df(pc) for pc in node.inputs]
        return reduce(lambda a, b: a.unionAll(b), dfs) if dfs else self.empty()

    def _group(self, t: Any, node: Any) -> Any:
        """Key the elements, shuffle by key, run the kernel per key. A combine whose trigger
        cannot fire before the end of a window (so in batch it fires once, at the end) over
        non-merging windows is lifted: each task first folds its elements into one partial
        accumulator per key and window, and the kernel merges the partials. With a late
        output, each group's panes and late elements are tagged (the elements go there as
        they came, so nothing is lifted)."""
        label = node.label
        strategy = node.inputs[0].windowing
        fn = t.combine_fn
        late_tag = t.late_tag
        lifted = (liftable(fn, strategy, bool(node.inputs[0].may_retract), late_tag)
                  and not strategy.trigger.fires_before_end_of_window())
        if lifted:
            self.lifted.append(label)
            keyed = _partial_combine(fn, strategy.timestamp_combiner, label)
        else:
            keyed = _key_elements(label)

        late, dropped = self._counter(label, "late"), self._counter(label, "dropped")

        def group(table: pa.Table) -> Iterator[Any]:
            # this group's own copy of the CombineFn, set up for it and torn down after
            mine = with_own_combine_fns(t)
            combine_fns = combine_fns_of(mine)
            reducer = (AccumulatorReducer(mine.combine_fn) if lifted else mine.reducer())
            combine_lifecycle.acquire(combine_fns)
            try:
                host = KernelHost(strategy, reducer, label, keep_late=late_tag is not None)
                panes = host.run_to_end(codec.decode(table), now_micros())
            finally:
                combine_lifecycle.release(combine_fns)
            c = host.counters
            late.add(c.late)
            dropped.add(c.dropped_expired + c.dropped_closed)
            yield panes if late_tag is None else {None: panes, late_tag: host.take_late()}
        return Steps(self._by_key(node, keyed), group, grouped=True)

    def _by_key(self, node: Any, keyed: Callable[..., Iterator[pa.RecordBatch]]) -> Any:
        """A keyed node's input as keyed rows (`keyed`), grouped in buckets of keys (by a
        hash of the key), not single keys: the host keeps each key's state apart anyway, and
        one Python call per bucket instead of per key saves the per-group cost that dominates
        when keys have few elements each. Python steps after it run in the same task."""
        from pyspark.sql import functions as F
        buckets = 8 * self.spark.sparkContext.defaultParallelism
        return (self.steps(node.inputs[0]).run(keyed, codec.KEYED, node.inputs[0].producer.label)
                .withColumn("bucket", F.pmod(F.xxhash64("k"), F.lit(buckets)))
                .groupBy("bucket"))

    def _stateful_par_do(self, t: Any, node: Any) -> Dict[Optional[str], Any]:
        """A stateful ParDo: its input shuffled by key as for a grouping, then per bucket of
        keys the runtime's stateful DoFn host, its watermark from the minimum to the end."""
        label, tags = node.label, list(node.outputs)
        lateness = node.inputs[0].windowing.allowed_lateness_us
        user = self.counts.setdefault(label, {})[USER] = self.spark.sparkContext.accumulator(
            {}, _UserMetrics())
        dropped = self._counter(label, "dropped")

        def run(table: pa.Table) -> Iterator[Any]:
            host = StatefulDoFnHost(with_own_combine_fns(t), tags, label, lateness)
            host.runner.setup()
            try:
                outs = host.run_to_end(codec.decode(table), now_micros())
            finally:
                host.runner.teardown()
            if host.runner.metrics:
                user.add(host.runner.metrics.take())
            dropped.add(host.dropped)
            yield outs[None] if len(tags) == 1 else outs
        steps = Steps(self._by_key(node, _key_elements(label)), run, grouped=True)
        if len(tags) == 1:
            return {None: steps}
        return self._tagged(self.step_df(steps, label, tagged=True), node)

    def _counter(self, label: str, name: str) -> Any:
        """A count the tasks of step `label` add to (read, dead_lettered)."""
        acc = self.counts.setdefault(label, {})[name] = self.spark.sparkContext.accumulator(0)
        return acc

    def _counted(self, node: Any, tag: Optional[str], out: Any) -> Any:
        """A step's output on `tag`, counting its elements as they are made: pending Python
        steps in their task (an accumulator); Spark's rows, where the step may change their
        number, with an observation of their count (each costs Spark a pass over the rows
        outside its generated code), else as many as the step received. An output its step
        counted where it made it is as it is."""
        label = node.label
        if tag in self.flow.get(label, {}):
            return out
        if isinstance(out, Steps):
            acc = self._flow_counter(label, tag)
            return out.then(lambda: (partial(_count_into, acc), None))
        if _keeps_count(node):
            self.as_received.add((label, tag))
            return out
        from pyspark.sql import Observation
        from pyspark.sql import functions as F
        seen = self.flow.setdefault(label, {})[tag] = Observation()
        if isinstance(out, Columnar):
            return out.with_df(out.df.observe(seen, F.count(F.lit(1)).alias("n")))
        return out.observe(seen, F.count(F.lit(1)).alias("n"))

    def _flow_counter(self, label: str, tag: Optional[str]) -> Any:
        """An accumulator counting the elements step `label` emits on `tag`."""
        acc = self.flow.setdefault(label, {})[tag] = self.spark.sparkContext.accumulator(0)
        return acc

    def metrics(self) -> Dict[str, Dict[str, int]]:
        """The counts so far, with each step's flow (`with_flow`): an output not yet made
        counts none."""
        out = {label: {name: c if isinstance(c, int) else c.value for name, c in counts.items()}
               for label, counts in self.counts.items()}
        for label, tags in self.flow.items():
            counts = out.setdefault(label, {})
            for tag, c in tags.items():
                counts[emitted_key(tag)] = _flow_count(c)
        return with_flow(out, self.pipeline.nodes, self.as_received)


class _UserMetrics:
    """Spark's accumulator parameter for a step's user metrics: snapshots merge."""

    def zero(self, value: Any) -> dict:
        return {}

    def addInPlace(self, a: Any, b: Any) -> dict:
        return merge_snapshots(a, b)


def _keeps_count(node: PlanNode) -> bool:
    """Whether a step Spark runs on its own rows gives one row out per row in: any but a
    filter, sliding windows (an element in several windows, or none) and a grouping."""
    if node.kind in (kinds.ELEMENTWISE, kinds.STATEFUL_PARDO):
        return not node.passes_elements
    if node.kind == kinds.ASSIGN_WINDOWS:
        fn = node.transform.window_fn
        return fn is None or type(fn) in (GlobalWindows, FixedWindows)
    return node.kind in (kinds.FLATTEN, kinds.TYPED)


def _count_into(acc: Any, bundle: list) -> list:
    acc.add(len(bundle))
    return bundle


def _count_tags(accs: Dict[Optional[str], Any], results: Dict[Optional[str], list]
                ) -> Dict[Optional[str], list]:
    for tag, bundle in results.items():
        accs[tag].add(len(bundle))
    return results


def _flow_count(c: Any) -> int:
    """What an output's counter counted: an accumulator's value, or an observation's once
    the job that made its rows has run (0 before, not waiting: `Observation.get` would)."""
    if not hasattr(c, "_jo"):
        return c.value
    if c._jo is None or not c._jo.future().isCompleted():
        return 0
    return c.get["n"]


def _outputs_of(started: Any, tag: Optional[str]) -> Any:
    """A started step whose results are outputs by tag, as a step giving those of `tag`."""
    process, finish = started
    return (lambda bundle: process(bundle)[tag]), finish


def _assign_by_columns(df: Any, fn: Any) -> Any:
    """Fixed and sliding windows as Spark column arithmetic: each element in the windows the
    WindowFn's own `assign_micros` gives (window starts aligned to the offset; for sliding windows,
    every start within `size` before the element, latest first)."""
    from pyspark.sql import functions as F
    size, period, offset = window_geometry(fn)
    df, start = cols.window_starts(df, "ts", size, period, offset)
    return df.select("v", "ts", start.alias("ws"), (start + F.lit(size)).alias("we"),
                     F.lit(None).cast("binary").alias("wx"), "p", "d")


def key_pair(kv: Any, label: str) -> Any:
    """`kv`, checked to be a (key, value) pair before a grouping keys it (batch and
    streaming); a clear error naming the transform otherwise."""
    if type(kv) is not tuple or len(kv) != 2:
        raise UserCodeError(f"transform {label!r}: needs (key, value) pairs, got {kv!r}")
    return kv


def _key_elements(label: str) -> Callable[[Iterator[List[WindowedValue]]], Iterator[pa.RecordBatch]]:
    """Elements as keyed rows (the pickled key beside each)."""
    def keyed(bundles: Iterator[List[WindowedValue]]) -> Iterator[pa.RecordBatch]:
        for elements in bundles:
            yield codec.encode(elements, keys=[codec.dumps(key_pair(wv.value, label)[0])
                                               for wv in elements])
    return keyed


def _partial_combine(fn: Any, combiner: Any, label: str
                     ) -> Callable[[Iterator[List[WindowedValue]]], Iterator[pa.RecordBatch]]:
    """A task's elements folded into one partial accumulator per key and window
    (`runtime.lifting`), as keyed rows: what the kernel then merges."""
    def partial(bundles: Iterator[List[WindowedValue]]) -> Iterator[pa.RecordBatch]:
        fold = PartialFold.own(fn, combiner, label)   # this call's own CombineFn
        try:
            for bundle in bundles:
                fold.add(bundle, [codec.dumps(key_pair(wv.value, label)[0]) for wv in bundle])
            elements, keys = fold.take()
        finally:
            fold.close()
        for i in range(0, len(elements), BATCH_ROWS):
            yield codec.made_by(label, "a partial accumulator (key, accumulator)", codec.encode,
                                elements[i:i + BATCH_ROWS], keys=keys[i:i + BATCH_ROWS])
    return partial
