"""The Spark runner: runs a pipeline on Apache Spark through PySpark (`--runner=spark`).

Bounded pipelines become a DataFrame plan (`batch.py`); unbounded ones (and any with
`--streaming`) a Structured Streaming query (`streaming.py`) whose outputs reach the driver in
`foreachBatch`: collected, and written to file sinks one file per micro-batch, named by the
batch's id so that a micro-batch replayed after a restart rewrites the same file.

What Spark cannot run is refused before any Spark job starts, naming the transform and why; a
user function failing in a Spark task is raised on the driver as the same `UserCodeError` the
local runner gives. While it runs, the terminal shows the Spark UI's address, the shared status
line and summary (`progress.py`), and none of Spark's own log (`console.py`)."""
from __future__ import annotations

import sys
import time
from typing import Any, List

from ...runtime.collector import rarely_collecting
from ...runtime.metrics import complete
from ...runtime.stop import stopping
from ...sdk.errors import PipelineConstructionError
from ...sdk.io.base import Sink
from ...sdk.result import PipelineResult
from ...sdk.io.kafka import ReadFromKafka, WriteToKafka
from ...sdk.io.kafka_clients import KafkaOutput
from ...sdk.io.kafka_watch import BrokerWatch, clusters_of, topics_of
from ...sdk.test_stream import TestStream
from ...traces import DGSStep
from ...traces.oplus import OPlus
from .batch import TRANSLATED, BatchPlan, read_more_than_once, unread
from .extensions import batch_extensions
from .failures import user_errors
from .progress import SparkProgress
from .file_output import write_file
from .session import spark_session


class SparkRunner:
    """Runs a pipeline on the active SparkSession, or on the one pomset keeps (`session`)."""

    def run(self, pipeline: Any) -> PipelineResult:
        options = pipeline.options
        streaming = options.streaming or any(
            isinstance(n.transform, TestStream) or not pc.bounded
            for n in pipeline.nodes for pc in n.outputs.values())
        self._check(pipeline, streaming)
        started = time.monotonic()
        spark = spark_session(options, streaming)
        url = spark.sparkContext.uiWebUrl
        if url and not options.quiet:
            print(f"pomset: Spark UI at {url}", file=sys.stderr, flush=True)
        recorded = pipeline.recorded()
        transforms = [n.transform for n in pipeline.nodes]
        progress = SparkProgress(spark, options.quiet, BrokerWatch(
            clusters_of(transforms), options.kafka_stall_warning, topics=topics_of(transforms)))
        # Ctrl-C and SIGTERM stop a streaming query between micro-batches (`stopping`)
        with stopping(streaming) as stop:
            progress.start()
            try:
                # the driver unpacks every micro-batch's outputs and holds what the run collects
                with rarely_collecting():
                    if streaming:
                        from .query import run_query   # a batch run needs none of the streaming modules
                        result = run_query(spark, pipeline, recorded, started, progress, stop)
                    else:
                        result = self._run_batch(spark, pipeline, recorded, started, progress)
            finally:
                progress.stop()
            stop.end()
        progress.summary(result.metrics())
        return result

    def _run_batch(self, spark: Any, pipeline: Any, recorded: List[Any],
                   started: float, progress: SparkProgress) -> PipelineResult:
        plan = BatchPlan(spark, pipeline, batch_extensions())
        progress.metrics = plan.metrics
        sinks = [n for n in pipeline.nodes if isinstance(n.transform, Sink)]
        kafka = [(n.transform, n.inputs[0]) for n in sinks if isinstance(n.transform, WriteToKafka)]
        try:
            with user_errors():
                plan.build(read_more_than_once(pipeline, recorded))
                record = {id(pc): plan.elements(pc) for pc in recorded}
                output = KafkaOutput(kafka, "", transactional=False) if kafka else None
                for node in sinks:
                    pcoll = node.inputs[0]
                    if plan.write_native(node):
                        continue
                    elements = (record[id(pcoll)] if id(pcoll) in record
                                else plan.elements(pcoll))
                    if isinstance(node.transform, WriteToKafka):
                        output.write(node.transform, elements)
                    else:
                        write_file(node.transform.writer(pcoll), elements)
                    plan.counts[node.label] = {"written": len(elements)}
                if output is not None:
                    output.close()
                plan.run_unread(unread(pipeline, recorded))
        finally:
            plan.release()
        return PipelineResult(record, complete(plan.metrics(), pipeline.nodes),
                              time.monotonic() - started)

    @staticmethod
    def _check(pipeline: Any, streaming: bool) -> None:
        """Refuse, before Spark starts, what this runner cannot run yet."""
        for node in pipeline.nodes:
            if streaming and isinstance(node.transform, OPlus):
                raise PipelineConstructionError(
                    f"OPlus {node.label!r} runs on the local runner (batch and streaming) and on "
                    f"Spark in batch; Spark streaming does not run it yet: run without "
                    f"--streaming, or on the local runner")
            if streaming and isinstance(node.transform, DGSStep):
                raise PipelineConstructionError(
                    f"DGS {node.label!r}: Spark streaming does not run a DGS step (its leaves' "
                    f"states are joined on the driver at each synchronizing event, which a "
                    f"streaming query cannot do); run it on the local runner with --streaming, "
                    f"or on Spark in batch (without --streaming)")
            if not isinstance(node.transform, TRANSLATED + tuple(batch_extensions()) + (
                    TestStream, ReadFromKafka, WriteToKafka)):
                raise PipelineConstructionError(
                    f"the Spark runner cannot run {node.label!r}: {type(node.transform).__name__} "
                    f"is a primitive it has no translation for")

