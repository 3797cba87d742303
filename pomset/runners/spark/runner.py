"""The Spark runner: runs a pipeline on Apache Spark through PySpark (`--runner=spark`).

Bounded pipelines become a DataFrame plan (`batch.py`). What Spark cannot run is refused
before any Spark job starts, naming the transform and why; a user function failing in a
Spark task is raised on the driver as the same `UserCodeError` the local runner gives."""
from __future__ import annotations

import re
import time
from collections import Counter
from typing import Any

from ...sdk.errors import PipelineConstructionError, UserCodeError
from ...sdk.io.base import FileSink
from ...sdk.result import PipelineResult
from ...sdk.test_stream import TestStream
from . import codec
from .batch import BATCH_ROWS, TRANSLATED, BatchPlan
from .session import spark_session


class SparkRunner:
    """Runs a pipeline on the active SparkSession, or on one it starts and stops."""

    def run(self, pipeline: Any) -> PipelineResult:
        self._check(pipeline)
        options = pipeline.options
        started = time.monotonic()
        spark, owned = spark_session(options)
        plan = BatchPlan(spark, pipeline)
        sinks = [n for n in pipeline.nodes if isinstance(n.transform, FileSink)]
        leaves_only = options.collect == "leaves"
        recorded = [pc for n in pipeline.nodes for pc in n.outputs.values()
                    if not leaves_only or not pc.consumers]
        uses = Counter(id(pc) for pc in recorded)
        for n in pipeline.nodes:
            for pc in list(n.inputs) + [s.pcoll for s in n.side_inputs]:
                uses[id(pc)] += 1
        try:
            with _user_errors():
                plan.build(lambda pc: uses[id(pc)] > 1)
                record = {id(pc): plan.elements(pc) for pc in recorded}
                for node in sinks:
                    self._write(plan, node)
        finally:
            plan.release()
            if owned:
                spark.stop()
        return PipelineResult(record, plan.metrics(), time.monotonic() - started)

    @staticmethod
    def _check(pipeline: Any) -> None:
        """Refuse, before Spark starts, what this runner cannot run yet."""
        for node in pipeline.nodes:
            if not isinstance(node.transform, TRANSLATED + (TestStream,)):
                raise PipelineConstructionError(
                    f"the Spark runner cannot run {node.label!r}: {type(node.transform).__name__} "
                    f"is a primitive it has no translation for")
            if isinstance(node.transform, TestStream) or any(
                    not pc.bounded for pc in node.outputs.values()):
                raise PipelineConstructionError(
                    f"the Spark runner cannot run {node.label!r}: it is unbounded, and this "
                    f"version of the Spark runner runs bounded (batch) pipelines only; run it "
                    f"with --runner=local")

    @staticmethod
    def _write(plan: BatchPlan, node: Any) -> None:
        """A file sink writes one file, so the driver writes it from its input's rows."""
        pcoll = node.inputs[0]
        writer = node.transform.writer(pcoll)
        try:
            for batch in plan.df(pcoll).toArrow().to_batches(BATCH_ROWS):
                writer.write(codec.decode(batch))
        except BaseException:
            writer.abort()
            raise
        writer.close()


class _user_errors:
    """Re-raise a failure in a Spark task as what it was in the user's terms: a
    `UserCodeError` raised in a task keeps its message (transform, element, traceback);
    anything else names the Python worker's own error, never the JVM's stack."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        if exc is None:
            return False
        try:
            from pyspark.errors import PySparkException
            from py4j.protocol import Py4JJavaError
        except ImportError:   # pragma: no cover - pyspark is there when this runs
            return False
        if not isinstance(exc, (PySparkException, Py4JJavaError)):
            return False
        text = str(exc)
        m = re.search(r"pomset\.sdk\.errors\.UserCodeError: (.*)", text, re.S)
        if m:
            raise UserCodeError(_strip_jvm(m.group(1))) from None
        raise SparkJobError(f"a Spark job failed: {_cause(text)}") from None


class SparkJobError(RuntimeError):
    """Spark itself failed a job (lost executors or results, out of memory), not user code."""


def _cause(text: str) -> str:
    """The line of a Spark failure that says what went wrong: the Python worker's own
    exception if there is one, else Spark's reason for aborting the job."""
    lines = text.splitlines()
    python = [ln for ln in lines if re.match(r"^\w[\w.]*(Error|Exception): ", ln)
              and not ln.startswith(("org.apache", "py4j", "java."))]
    if python:
        return python[-1]
    m = re.search(r"(Job aborted due to stage failure: .*?)(?:\n|$)", text)
    return m.group(1) if m else lines[0]


def _strip_jvm(text: str) -> str:
    """The Python part of a task failure's message, without the JVM frames Spark appends."""
    cut = re.search(r"\n\s*(at |\tat |JVM stacktrace:)", text)
    return (text[:cut.start()] if cut else text).rstrip()
