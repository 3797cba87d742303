"""The Spark runner: runs a pipeline on Apache Spark through PySpark (`--runner=spark`).

Bounded pipelines become a DataFrame plan (`batch.py`). What Spark cannot run is refused
before any Spark job starts, naming the transform and why; a user function failing in a
Spark task is raised on the driver as the same `UserCodeError` the local runner gives."""
from __future__ import annotations

import re
import time
from collections import Counter
from contextlib import contextmanager
from typing import Any, Iterator, List

from ...sdk.errors import PipelineConstructionError, UserCodeError
from ...sdk.io.base import FileSink
from ...sdk.result import PipelineResult
from ...sdk.test_stream import TestStream
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
                    pcoll = node.inputs[0]
                    self._write(node, record[id(pcoll)] if id(pcoll) in record
                                else plan.elements(pcoll))
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
    def _write(node: Any, elements: List[Any]) -> None:
        """A file sink writes one file, so the driver writes it from its input's elements."""
        writer = node.transform.writer(node.inputs[0])
        try:
            for i in range(0, len(elements), BATCH_ROWS):
                writer.write(elements[i:i + BATCH_ROWS])
        except BaseException:
            writer.abort()
            raise
        writer.close()


@contextmanager
def _user_errors() -> Iterator[None]:
    """Re-raise a failure in a Spark task as what it was in the user's terms: a
    `UserCodeError` raised in a task keeps its message (transform, element, traceback);
    anything else names the Python worker's own error, never the JVM's stack."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException
    try:
        yield
    except (PySparkException, Py4JJavaError) as exc:
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
