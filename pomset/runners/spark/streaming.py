"""A pipeline as a Spark Structured Streaming query: one streaming DataFrame of streaming rows
(see `codec`) per PCollection, built like the batch plan except where streaming differs:

- sources are the Python data sources of `stream_sources` (a `Create` or `TestStream` as a
  script of micro-batches, file sources as files appearing under their pattern), each
  micro-batch ending with a marker row carrying the source's watermark and clock;
- Python steps pass marker rows through untouched, and a multi-output step sends them to
  every output;
- a grouping keys its elements, sends each to the bucket of its key and a copy of each marker
  to every bucket, and runs the kernel per bucket in `transformWithState` (`stateful`), which
  emits its panes and its own markers for the steps after it; so groupings chain, each
  downstream bucket taking the minimum watermark over the buckets upstream of it;
- a ParDo with side inputs is hosted the same way, its main elements spread over the buckets
  and its side elements sent to every bucket, where they wait for their side windows.
"""
from __future__ import annotations

from functools import reduce
from typing import Any, Dict, Iterator, List, Optional

import pyarrow as pa

from ...sdk.core import Create, GroupByKey
from ...sdk.io.base import FileSource
from ...sdk.test_stream import ELEMENTS, PROCESSING_TIME, WATERMARK, TestStream
from ...windowing import GLOBAL_WINDOW, MAX_MICROS, MIN_MICROS, NO_FIRING, WindowedValue
from . import codec, stream_sources
from .batch import BATCH_ROWS, BatchPlan, Markers, _key_pair, _Steps, _tail
from .stateful import KernelProcessor, SideInputProcessor


class StreamingPlan(BatchPlan):
    """Builds the streaming DataFrames of a pipeline's PCollections, node by node."""

    streaming = True

    def __init__(self, spark: Any, pipeline: Any, buckets: int, until_latest: bool,
                 out_of_orderness_us: Optional[int], interval_s: float) -> None:
        super().__init__(spark, pipeline)
        self.buckets = buckets
        self.until_latest = until_latest
        self.out_of_orderness_us = out_of_orderness_us
        self.interval_s = interval_s
        self.virtual_clock = any(isinstance(n.transform, TestStream) for n in pipeline.nodes)
        self.channels: Dict[int, List[str]] = {}
        self.index = {id(n): i for i, n in enumerate(pipeline.nodes)}
        self.ends = True   # whether every source stops by itself (then the query can too)

    def build(self, reused: Any = None) -> None:
        """Translate every node; nothing is persisted in a streaming query."""
        for node in self.pipeline.nodes:
            self._channels(node)
        super().build(lambda pc: False)

    def _channels(self, node: Any) -> None:
        """Where the markers reaching each output come from: a source's own channel, a
        grouping's buckets, else the union of the inputs' channels."""
        t, i = node.transform, self.index[id(node)]
        if not node.inputs:
            channels = [f"s{i}"]
        elif isinstance(t, GroupByKey) or node.side_inputs:
            channels = [f"g{i}#{b}" for b in range(self.buckets)]
        else:
            channels = sorted({c for pc in node.inputs for c in self.channels[id(pc)]})
        for pc in node.outputs.values():
            self.channels[id(pc)] = channels

    def _steps(self, pcoll: Any) -> _Steps:
        return _Steps(self.dfs[id(pcoll)], _decode_stream) if not isinstance(
            self.dfs[id(pcoll)], _Steps) else self.dfs[id(pcoll)]

    def _step_df(self, steps: _Steps, tagged: bool = False) -> Any:
        return steps.run(_tail(tagged, stream=True), codec.STREAM)

    def df(self, pcoll: Any) -> Any:
        """The PCollection's streaming DataFrame (its pending Python steps as one task each time
        it is read: a streaming query does not persist)."""
        df = self.dfs[id(pcoll)]
        return self._step_df(df) if isinstance(df, _Steps) else df

    def _empty(self) -> Any:
        return self.spark.createDataFrame([], codec.STREAM)

    def _tagged(self, df: Any, node: Any) -> Dict[Optional[str], Any]:
        """One DataFrame per output tag, each with every marker."""
        from pyspark.sql import functions as F
        untagged = F.lit(None).cast("string")
        return {tag: df.filter(F.col("t").isNull() if tag is None else
                               (F.col("t") == tag) | F.col("m").isNotNull()).withColumn("t", untagged)
                for tag in node.outputs}

    def _script(self, node: Any, steps: List[tuple]) -> Any:
        self.counts[node.label] = {"read": sum(len(elements) for elements, _, _ in steps)}
        batches = stream_sources.script(f"s{self.index[id(node)]}", steps)
        return (self.spark.readStream.format(stream_sources.STEPS)
                .option("payload", stream_sources.payload(batches)).load())

    def _translate(self, node: Any, t: Any) -> Dict[Optional[str], Any]:
        if isinstance(t, TestStream):
            return {None: self._script(node, _test_stream_steps(t))}
        return super()._translate(node, t)

    def _create(self, t: Create, node: Any) -> Any:
        """All of a Create's elements in one micro-batch, which also ends its stream."""
        elements = [wv for bundle in t.bundles(BATCH_ROWS) for wv in bundle]
        clock = None if self.virtual_clock else stream_sources.now_micros()
        return self._script(node, [(elements, MAX_MICROS, clock)])

    def _read_files(self, t: FileSource, node: Any) -> Dict[Optional[str], Any]:
        self.ends = self.ends and self.until_latest
        df = (self.spark.readStream.format(stream_sources.FILES)
              .option("payload", stream_sources.payload(dict(
                  channel=f"s{self.index[id(node)]}", source=t, label=node.label,
                  until_latest=self.until_latest, out_of_orderness_us=self.out_of_orderness_us,
                  interval_s=self.interval_s, real_clock=not self.virtual_clock)))
              .load())
        if t.dead_letter_tag is None:
            return {None: df}
        return self._tagged(df, node)

    def _counter(self, label: str, name: str) -> Any:
        """Tasks count nothing in a streaming query, where a step read by several consumers
        runs in each of their tasks: the driver counts dead letters as they arrive."""
        return _NoCount()

    def _par_do(self, t: Any, node: Any) -> Dict[Optional[str], Any]:
        """A ParDo with side inputs runs per bucket of its main input, each bucket with every
        side element and every marker (inputs told apart by `t`: 0 main, j the j-th side)."""
        if not node.side_inputs:
            return super()._par_do(t, node)
        from pyspark.sql import functions as F
        inputs = [self.df(node.inputs[0])] + [self.df(side.pcoll) for side in node.side_inputs]
        rows = reduce(lambda a, b: a.unionByName(b), [
            df.withColumn("t", F.lit(str(j))) for j, df in enumerate(inputs)])
        main_element = (F.col("t") == "0") & F.col("m").isNull()
        processor = SideInputProcessor(
            node.label, t, node.side_inputs, list(node.outputs),
            [self.channels[id(node.inputs[0])]] + [self.channels[id(s.pcoll)] for s in node.side_inputs],
            f"g{self.index[id(node)]}")
        out = self._by_bucket(rows, main_element, F.col("v")).transformWithState(
            processor, codec.STREAM, "Append", "None")
        return {None: out} if len(node.outputs) == 1 else self._tagged(out, node)

    def _by_bucket(self, df: Any, own: Any, key: Any) -> Any:
        """`df` grouped by bucket: rows where `own` holds in the bucket of `key`'s hash, every
        other row (markers, side elements) in every bucket."""
        from pyspark.sql import functions as F
        buckets = self.buckets
        bucket = F.explode(F.when(own, F.array(F.pmod(F.xxhash64(key), F.lit(buckets))))
                           .otherwise(F.sequence(F.lit(0), F.lit(buckets - 1))))
        return df.withColumn("bucket", bucket).groupBy("bucket")

    def _group(self, t: GroupByKey, node: Any) -> Any:
        """Key the elements (markers to every bucket), run the kernel per bucket."""
        from pyspark.sql import functions as F
        label = node.label
        keyed = self._steps(node.inputs[0]).run(_key_stream(label), codec.KEYED_STREAM)
        processor = KernelProcessor(label, node.inputs[0].windowing, t.reducer,
                                    self.channels[id(node.inputs[0])], f"g{self.index[id(node)]}")
        return self._by_bucket(keyed, F.col("k").isNotNull(), F.col("k")).transformWithState(
            processor, codec.STREAM, "Append", "None")


class _NoCount:
    def add(self, n: int) -> None:
        pass


def _test_stream_steps(t: TestStream) -> List[tuple]:
    """A TestStream's steps as micro-batches: (elements, watermark, its processing clock)."""
    wm, pt, steps = MIN_MICROS, 0, []
    for kind, arg in t.steps:
        elements: list = []
        if kind == ELEMENTS:
            elements = [WindowedValue.raw(v, ts, GLOBAL_WINDOW, NO_FIRING, 1) for v, ts in arg]
        elif kind == WATERMARK:
            wm = max(wm, arg)
        elif kind == PROCESSING_TIME:
            pt += arg
        steps.append((elements, wm, pt))
    return steps


def _decode_stream(b: pa.RecordBatch) -> Iterator[list]:
    """A streaming batch as a bundle of its elements, then its markers."""
    elements, _, markers = codec.split_stream(b)
    if elements:
        yield elements
    if markers:
        yield Markers(markers)


def _key_stream(label: str) -> Any:
    """Elements as keyed streaming rows (the pickled key beside each), markers unkeyed."""
    def keyed(items: Iterator[Any]) -> Iterator[pa.RecordBatch]:
        for item in items:
            if type(item) is Markers:
                yield codec.encode([], keys=[], markers=item)
            elif item:
                yield codec.encode(item, keys=[codec.dumps(_key_pair(wv.value, label)[0])
                                               for wv in item], markers=[])
    return keyed
