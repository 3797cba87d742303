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
from ...sdk.result import PipelineResult
from ...sdk.io.kafka_clients import KafkaOutput
from ...sdk.io.kafka_watch import BrokerWatch, clusters_of, topics_of
from ...runtime.plan import Plan, kinds, lower
from .batch import WRITES, BatchPlan, read_more_than_once, unread
from .extensions import batch_table
from .failures import user_errors
from .progress import SparkProgress
from .file_output import write_file
from .session import spark_session


#: the sources only a streaming query reads
STREAM_SOURCES = (kinds.DRIVER_READ, kinds.KAFKA_READ)


class SparkRunner:
    """Runs a pipeline on the active SparkSession, or on the one pomset keeps (`session`)."""

    def run(self, pipeline: Any) -> PipelineResult:
        options = pipeline.options
        plan = self._lower(pipeline)
        streaming = options.streaming or any(
            n.kind == kinds.DRIVER_READ or not pc.bounded
            for n in plan for pc in n.outputs.values())
        self._check(plan, streaming)
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
                        result = run_query(spark, pipeline, plan, recorded, started, progress,
                                           stop)
                    else:
                        result = self._run_batch(spark, pipeline, plan, recorded, started,
                                                 progress)
            finally:
                progress.stop()
            stop.end()
        progress.summary(result.metrics())
        return result

    def _run_batch(self, spark: Any, pipeline: Any, lowered: Plan, recorded: List[Any],
                   started: float, progress: SparkProgress) -> PipelineResult:
        plan = BatchPlan(spark, pipeline, batch_table(), lowered)
        progress.metrics = plan.metrics
        sinks = [n for n in lowered if n.kind in WRITES]
        kafka = [(n.transform, n.inputs[0]) for n in sinks if n.kind == kinds.KAFKA_WRITE]
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
                    if node.kind == kinds.KAFKA_WRITE:
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
    def _lower(pipeline: Any) -> Plan:
        """The pipeline's plan; a primitive of no plan kind is refused, naming it."""
        for node in pipeline.nodes:
            if node.transform.plan_kind() not in kinds.KINDS:
                raise _untranslatable(node)
        return lower(pipeline)

    @staticmethod
    def _check(plan: Plan, streaming: bool) -> None:
        """Refuse, before Spark starts, what this runner cannot run yet."""
        batch = batch_table()
        for node in plan:
            if streaming and node.kind == kinds.OPLUS:
                raise PipelineConstructionError(
                    f"OPlus {node.label!r} runs on the local runner (batch and streaming) and on "
                    f"Spark in batch; Spark streaming does not run it yet: run without "
                    f"--streaming, or on the local runner")
            if streaming and node.kind == kinds.DGS:
                raise PipelineConstructionError(
                    f"DGS {node.label!r}: Spark streaming does not run a DGS step (its leaves' "
                    f"states are joined on the driver at each synchronizing event, which a "
                    f"streaming query cannot do); run it on the local runner with --streaming, "
                    f"or on Spark in batch (without --streaming)")
            if node.kind not in batch and node.kind not in WRITES + STREAM_SOURCES:
                raise _untranslatable(node)


def _untranslatable(node: Any) -> PipelineConstructionError:
    return PipelineConstructionError(
        f"the Spark runner cannot run {node.label!r}: {type(node.transform).__name__} is a "
        f"primitive it has no translation for")

