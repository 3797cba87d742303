"""A streaming plan run as one Structured Streaming query.

The bus (`streaming`) carries the rows of every PCollection the run records, every file sink's
input, every dead-letter output and every Kafka sink's records (encoded in the tasks that made
its input, `streaming.encodes_records`) to `foreachBatch`, which brings each micro-batch's rows
to the driver, with the counts of late and dropped elements the stateful steps send along:
there they are collected (with the micro-batch's processing time), counted, and
written to the sinks: a micro-batch's Kafka records in one transaction, a file sink's rows
in one file per micro-batch named by its id (a micro-batch Spark replays after a restart
rewrites the same file, so output is neither lost nor repeated). The query
checkpoints to `--checkpoint_dir` (resumed from there on restart) or to a temporary
directory; it runs until its sources end (`availableNow`) or, when some never do, a
micro-batch every `--trigger_interval` seconds until stopped (Ctrl-C or SIGTERM, between two
micro-batches: `stopping`)."""
from __future__ import annotations

import os
from collections import defaultdict
import shutil
import tempfile
import time
import warnings
from typing import Any, Dict, List, Tuple

from ...runtime.lost_checkpoint import start_run_state
from ...sdk.checkpoint_lock import CheckpointLock
from ...sdk.errors import CheckpointError
from ...runtime.backlog import PROGRESS
from ...runtime.markers import ChannelMarker, Channels
from ...runtime.metrics import add_counts, complete, with_flow
from ...runtime.stop import StopRequest
from ...runtime.plan import Plan, kinds
from ...sdk.io.kafka_clients import KafkaOutput, progress_topic
from ...sdk.io.kafka_runs import pointer
from ...sdk.result import PipelineResult
from ...windowing import now_micros
from .backlog import QuerySources
from .checkpoint_log import check_checkpoint
from .extensions import streaming_table
from .failures import user_errors
from .file_output import write_file
from .stopping import QueryStop, committed as committed_so_far
from .streaming import StreamingPlan, encodes_records, is_sink
from . import codec, packs, stream_sources

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
SHUFFLE = "spark.sql.shuffle.partitions"
#: what Spark keeps in a query's checkpoint location
SPARK_CHECKPOINT = ("metadata", "offsets", "commits", "sources", "state")
# Spark's default checkpoint file manager renames through Hadoop's FileContext, which on a
# local file system runs a `readlink` process for each file and its checksum: about 30
# processes a micro-batch, on the query's thread and in every stateful task's commit
FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
FILE_SYSTEM_MANAGER = ("org.apache.spark.sql.execution.streaming.checkpointing."
                       "FileSystemBasedCheckpointFileManager")


def run_query(spark: Any, pipeline: Any, lowered: Plan, recorded: List[Any], started: float,
              progress: Any, stop: StopRequest) -> PipelineResult:
    """Run the pipeline (`lowered`: its plan) as a streaming query, shown by `progress`
    (`SparkProgress`) as it goes, until its sources end or `stop` is requested; the result
    holds what it recorded."""
    import pyarrow.compute as pc
    options = pipeline.options
    sinks = [n for n in lowered if is_sink(n)]
    # dead letters are counted here, where each reaches the driver once
    dead = {id(n.outputs[n.dead_letter_tag]): n.label for n in lowered
            if n.dead_letter_tag is not None}
    # Kafka sinks whose records the tasks encode: the driver only produces them
    encoded = [n for n in sinks if encodes_records(n)]
    targets: List[Any] = []
    for x in recorded + [n.inputs[0] for n in sinks if n not in encoded] + [
            x for n in lowered for x in n.outputs.values() if id(x) in dead]:
        if all(x is not t for t in targets):
            targets.append(x)
    record: Dict[int, list] = {id(x): [] for x in recorded}
    times: Dict[int, list] = {id(x): [] for x in recorded}
    dead_counts = {label: 0 for label in dead.values()}
    step_counts: Dict[str, Dict[str, int]] = defaultdict(dict)
    checkpoint, temporary = _checkpoint(options.checkpoint_dir)
    lock = None if temporary else CheckpointLock(checkpoint)   # the driver holds it
    shuffle = spark.conf.get(SHUFFLE)
    try:
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
        spark.conf.set(CHANGELOG, "true")
        if spark.conf.get(FILE_MANAGER, None) is None:   # the checkpoint is a local path
            spark.conf.set(FILE_MANAGER, FILE_SYSTEM_MANAGER)
        stream_sources.register(spark)
        buckets, run_id = _run_state(spark, checkpoint, pipeline.nodes, options)
        spark.conf.set(SHUFFLE, str(buckets))   # a stateful step's tasks: one per bucket
        plan = StreamingPlan(spark, pipeline, targets, buckets, options, run_id, encoded,
                             streaming_table(), lowered)
        writes = [[n for n in sinks if n.inputs[0] is x and n not in encoded] for x in targets]
        kafka = [(n.transform, n.inputs[0]) for n in sinks if n.kind == kinds.KAFKA_WRITE]
        output = KafkaOutput(kafka, run_id, transactional=True, progress_topic=progress_topic(
            checkpoint, [t for t, _ in kafka], run_id)[0], pointer=None if temporary else
            pointer((n.transform for n in pipeline.nodes), run_id, checkpoint)) if kafka else None
        committed = [output.committed_mark() if output else None]
        if not temporary:
            _repair(checkpoint, committed[0] if output is None else
                    (-1 if committed[0] is None else committed[0]), sinks)

        clock = [None]   # the pipeline's processing time as of the last micro-batch
        halt = QueryStop(stop, checkpoint)
        stop.committed = committed_so_far(checkpoint, not temporary, output, lambda: committed[0])
        # the markers that reached the driver, by channel: the outputs' watermark
        arrived, channels = Channels(), set()
        busy = [None, 0]   # the last micro-batch that read records: its id, how many

        def watermark() -> Any:
            return arrived.input_watermark(0, sorted(channels)) if channels else None

        def each_batch(df: Any, batch_id: int) -> None:
            # a micro-batch Spark replays after a restart was committed to Kafka before, or not
            # at all: its mark (the batch id) commits in the same transaction as its records
            fresh = output is not None and (committed[0] is None or batch_id > committed[0])
            with halt.batch(batch_id):
                try:
                    deliver(df.toArrow(), batch_id, fresh)
                    if lock is not None:   # a deleted checkpoint directory commits nothing more
                        lock.verify()
                except BaseException:
                    if output is not None:
                        output.abort()
                    raise
                if fresh:
                    output.commit(batch_id, {})
                    committed[0] = batch_id

        def deliver(table: Any, batch_id: int, fresh: bool) -> None:
            is_counts = pc.equal(table.column("t"), codec.COUNTS)
            counted = table.filter(is_counts).column("m").to_pylist()
            read = 0
            for label, batch_counts in map(codec.loads, counted):
                if isinstance(batch_counts, Warning):   # a task's, issued here to be seen
                    warnings.warn(batch_counts, stacklevel=2)
                    continue
                add_counts(step_counts[label], batch_counts)
                read += batch_counts.get("read", 0)
            if read:
                busy[:] = [batch_id, read]
            markers = [m for m in map(codec.loads, table.filter(pc.invert(is_counts))
                                      .column("m").drop_null().to_pylist())
                       if isinstance(m, ChannelMarker)]
            arrived.observe((0, m) for m in markers)
            channels.update(m.channel for m in markers)
            clocks = [m.processing_time for m in markers if m.processing_time is not None]
            clock[0] = max(clocks + ([clock[0]] if clock[0] is not None else []),
                           default=now_micros())
            for target, nodes in zip(targets, writes):
                rows = table.filter(pc.equal(table.column("t"), plan.address[id(target)]))
                elements, _ = packs.split_stream(rows)
                if id(target) in dead:
                    dead_counts[dead[id(target)]] += len(elements)
                if id(target) in record and elements:
                    times[id(target)].append((len(record[id(target)]), clock[0]))
                    record[id(target)].extend(elements)
                for node in nodes:
                    if not elements:
                        continue
                    counted = step_counts[node.label]
                    counted["written"] = counted.get("written", 0) + len(elements)
                    if node.kind == kinds.KAFKA_WRITE:
                        if fresh:
                            output.write(node.transform, elements)
                    else:
                        path = node.transform.part_path(batch_id)
                        write_file(node.transform.writer(target, path), elements)
            for node in encoded:
                rows = table.filter(pc.equal(table.column("t"), plan.record_address[node.label]))
                records = packs.read_bus(rows).records
                if records:
                    counted = step_counts[node.label]
                    counted["written"] = counted.get("written", 0) + len(records)
                    if fresh:
                        output.write_records(node.transform, records)
        with user_errors(checkpoint, lock):
            bus = plan.build()
            writer = (bus.writeStream.foreachBatch(each_batch)
                      .option("checkpointLocation", checkpoint))
            writer = (writer.trigger(availableNow=True) if plan.ends else
                      writer.trigger(processingTime=f"{options.trigger_interval} seconds"))
            query = writer.start()
            progress.metrics = lambda: _metrics(plan, dead_counts, step_counts)
            progress.query = query
            sources = QuerySources(plan)
            if sources:
                progress.follow(sources, options.backlog_warning, busy, watermark)
            halt.wait(query)
            stop.progress = progress_record = progress.final_record()
    finally:
        spark.conf.set(SHUFFLE, shuffle)
        if temporary:
            final = stop.committed()   # said before its checkpoint goes
            stop.committed = lambda: final
            shutil.rmtree(checkpoint, ignore_errors=True)
        else:
            lock.release()
    metrics = _metrics(plan, dead_counts, step_counts)
    metrics["micro-batches"] = _batch_stats(query.recentProgress)
    if progress_record is not None:
        metrics[PROGRESS] = progress_record
    return PipelineResult(record, metrics, time.monotonic() - started, times)


def _metrics(plan: Any, dead_counts: Dict[str, int],
             step_counts: Dict[str, Dict[str, int]]) -> Dict[str, Dict[str, int]]:
    """Per step: the plan's counts, dead letters and what the micro-batches counted so far
    (`complete`: every count a step has, 0 where none came)."""
    metrics = plan.metrics()
    for label, n in list(dead_counts.items()):
        metrics.setdefault(label, {})["dead_lettered"] = n
    for label, counts in list(step_counts.items()):
        metrics.setdefault(label, {}).update(counts)
    return complete(with_flow(metrics, plan.pipeline.nodes), plan.pipeline.nodes)


def _repair(checkpoint: str, kafka_mark: Any, sinks: List[Any]) -> None:
    """Check Spark's checkpoint before it resumes (`check_checkpoint`) and remove the file
    parts of the micro-batches it sets aside: they are written again, or, where the run now
    ends sooner, not at all."""
    redo = check_checkpoint(checkpoint, kafka_mark)
    for node in sinks if redo else ():
        if node.kind != kinds.KAFKA_WRITE:
            node.transform.remove_parts_after(redo[0] - 1)


def _batch_stats(progress: List[Any]) -> Dict[str, int]:
    """How many micro-batches ran and how long they took (ms), from the query's progress
    reports (Spark keeps the last `spark.sql.streaming.numRecentProgressUpdates`)."""
    in_order = [p["durationMs"].get("triggerExecution", 0) for p in progress]
    ms = sorted(in_order)
    if not ms:
        return {"count": 0}
    return {"count": len(ms), "ms_first": in_order[0], "ms_p50": ms[len(ms) // 2],
            "ms_p99": ms[min(len(ms) - 1, len(ms) * 99 // 100)], "ms_max": ms[-1],
            "ms_total": sum(ms)}


def _checkpoint(directory: Any) -> Tuple[str, bool]:
    """(the query's checkpoint directory, whether it is a temporary one)."""
    if directory:
        os.makedirs(directory, exist_ok=True)
        return os.path.abspath(directory), False
    return tempfile.mkdtemp(prefix="pomset-checkpoint-"), True


def _run_state(spark: Any, checkpoint: str, nodes: List[Any], options: Any) -> Tuple[int, str]:
    """How many buckets keys hash to (when the query first starts, the
    `spark.sql.shuffle.partitions` the user set with `--spark_conf`, else the cluster's
    cores: one wave of a stateful step's tasks per micro-batch; when it resumes, the number
    recorded in its checkpoint: keyed state stays where it is), and
    the run's id (its Kafka consumer groups and transactions are named by it); a resumed
    query's pipeline must be one its checkpoint's state fits (`runtime.fingerprint`), with
    keys routed to buckets and buckets to partitions as they were (`packs.bucket_of`,
    `packs.bucket_labels`, recorded as `routing`)."""
    chosen = dict(options.spark_conf).get(SHUFFLE)
    buckets = int(chosen) if chosen else spark.sparkContext.defaultParallelism
    spark_files = [name for name in SPARK_CHECKPOINT
                   if os.path.exists(os.path.join(checkpoint, name))]
    state = start_run_state(checkpoint, nodes, options.on_lost_checkpoint, resumable=False,
                            leftovers=spark_files, routing=packs.ROUTING, buckets=buckets)
    if state.get("routing") != packs.ROUTING:
        raise CheckpointError(
            f"{checkpoint}: this checkpoint's keyed state was placed by an earlier pomset "
            f"(routing {state.get('routing', 1)}, now {packs.ROUTING}); resuming it would "
            f"lose track of its keys' state: start the run with a new --checkpoint_dir")
    return int(state["buckets"]), state["run_id"]
