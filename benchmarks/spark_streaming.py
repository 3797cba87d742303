"""pomset's Spark runner in streaming against native Spark Structured Streaming: sustained
events/s and micro-batch durations of a windowed sum with early and late firings, read from a
directory of Parquet files as a stream, one file per micro-batch.

pomset (`--streaming --streaming_until=latest --max_files_per_batch=1
--max_out_of_orderness=120`):

    ReadFromParquet(dir, timestamp_field="ts")
        | WindowInto(FixedWindows(60), trigger=AfterWatermark(early=AfterProcessingTime(1),
                                                          late=AfterProcessingTime(1)),
                     accumulation_mode=ACCUMULATING, allowed_lateness=600)
        | GroupBy("key").aggregate_field("value", Sum(), "total")

and the same with Python functions (`Map(lambda r: (r["key"], r["value"])) | ... |
CombinePerKey(Sum())`). Native Spark, as a user writes it (`readStream.parquet` with
`maxFilesPerTrigger=1`, `withWatermark("ts", "2 minutes")`, `groupBy(window(ts, 60 s), key)
.sum("value")`, append mode, `foreachBatch` bringing the rows to the driver as pomset's
query does): append mode cannot fire early, so it gives each window once, when the watermark
passes it; the run checks that those equal pomset's last panes of the same windows, and that
pomset's last panes equal Spark's batch `groupBy` over the files.

Input: F files of N/F events (K keys, values 1..99), file i holding its own 10 minutes of
event time, shuffled within the file. Events/s: the events over the sum of the micro-batches'
durations (Spark's `triggerExecution`, planning to the end of `foreachBatch`); "steady" leaves
out the first micro-batch, which starts the query (Python workers, state stores). With one file
(one big file, one micro-batch) there is no steady state: the ratio is of the whole runs'
rates (native Spark's includes the no-data micro-batch that emits its last windows). pomset
reuses its Spark session and Python workers from run to run, so a shape's first pomset run
pays their start-up only if it is the process's first (run a shape alone and the schema'd
form, which runs first, pays it).

    .venv/bin/python benchmarks/spark_streaming.py                  # writes BENCHMARKS.md
    .venv/bin/python benchmarks/spark_streaming.py --shapes 100:200000:4 --no-write
    .venv/bin/python benchmarks/spark_streaming.py --worker 10000:400000:4 --result out.json
                                                    # pomset alone (benchmarks/before_after.py)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.append(ROOT)   # after PYTHONPATH, which may name another tree's pomset to measure
BEGIN, END = "<!-- spark-streaming-results:begin -->", "<!-- spark-streaming-results:end -->"
STRETCH_S = 600   # event time each file covers
EPOCH_S = 1_700_000_000
FLAGS = ["--runner=spark", "--quiet", "--collect=leaves", "--streaming",
         "--streaming_until=latest", "--max_files_per_batch=1", "--max_out_of_orderness=120"]

import pomset as pm  # noqa: E402
from results import compile_bytecode, write_block  # noqa: E402


def write_input(directory: str, rows: int, keys: int, files: int, seed: int,
                stretch_s: int = 0) -> str:
    """Seeded random (key, value, ts) rows in `files` Parquet files: event times over 6 hours
    in every file, or file f's within its own `stretch_s` seconds from f * stretch_s."""
    rng = np.random.default_rng(seed)
    names = np.array([f"k{i:05d}" for i in range(keys)])
    per = -(-rows // files)
    for f in range(files):
        n = min(per, rows - f * per)
        start, span = (EPOCH_S + f * stretch_s, stretch_s) if stretch_s else (EPOCH_S, 6 * 3600)
        table = pa.table({
            "key": pa.array(names[rng.integers(0, keys, n)]),
            "value": pa.array(rng.integers(1, 100, n), pa.int64()),
            "ts": pa.array((start + rng.integers(0, span, n)) * 1_000_000, pa.timestamp("us", "UTC")),
        })
        pq.write_table(table, os.path.join(directory, f"part-{f:03d}.parquet"))
    return os.path.join(directory, "part-*.parquet")


def windowing() -> Any:
    return pm.WindowInto(pm.FixedWindows(60),
                         trigger=pm.AfterWatermark(early=pm.AfterProcessingTime(1),
                                                   late=pm.AfterProcessingTime(1)),
                         accumulation_mode=pm.AccumulationMode.ACCUMULATING,
                         allowed_lateness=600)


def run_pomset(directory: str, python: bool) -> Tuple[Dict[tuple, int], dict, int]:
    """(last pane per (key, window start s), micro-batch stats, panes) of pomset's query."""
    p = pm.Pipeline(options=pm.PipelineOptions(FLAGS))
    rows = p | pm.ReadFromParquet(directory, timestamp_field="ts")
    if python:
        sums = (rows | pm.Map(lambda r: (r["key"], r["value"])) | windowing()
                | pm.CombinePerKey(pm.Sum())
                | pm.Map(lambda kv, w=pm.DoFn.WindowParam: (kv[0], w.start.micros, kv[1])))
    else:
        sums = (rows | windowing() | pm.GroupBy("key").aggregate_field("value", pm.Sum(), "total")
                | pm.Map(lambda r, w=pm.DoFn.WindowParam: (r.key, w.start.micros, r.total)))
    result = p.run()
    last: Dict[tuple, tuple] = {}
    panes = result.collect(sums)
    for wv in panes:
        key, start, total = wv.value
        k = (key, start // 1_000_000)
        if k not in last or wv.pane.index > last[k][0]:
            last[k] = (wv.pane.index, total)
    batches = result.metrics()["micro-batches"]
    batches["ms_steady"] = batches["ms_total"] - batches["ms_first"]
    return {k: v for k, (_, v) in last.items()}, batches, len(panes)


def run_native(spark: Any, directory: str, checkpoint: str) -> Tuple[Dict[tuple, int], dict]:
    """(final pane per (key, window start s), micro-batch stats) of native Spark's query."""
    from pyspark.sql import functions as F
    schema = spark.read.parquet(directory).schema
    got: Dict[tuple, int] = {}

    def each_batch(df: Any, batch_id: int) -> None:
        table = df.toArrow()
        for key, start, total in zip(table.column("key").to_pylist(),
                                     table.column("start").to_pylist(),
                                     table.column("total").to_pylist()):
            got[(key, start)] = total
    sums = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(directory)
            .withWatermark("ts", "2 minutes")
            .groupBy(F.window("ts", "60 seconds"), "key")
            .agg(F.sum("value").alias("total"))
            .select("key", F.unix_seconds(F.col("window.start")).alias("start"), "total"))
    query = (sums.writeStream.outputMode("append").foreachBatch(each_batch)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    return got, stats(query.recentProgress)


def stats(progress: List[dict]) -> dict:
    ms = [p["durationMs"].get("triggerExecution", 0) for p in progress
          if p.get("numInputRows", 0) or p["durationMs"].get("addBatch")]
    steady = sorted(ms[1:]) or ms
    return {"count": len(ms), "ms_total": sum(ms), "ms_steady": sum(ms[1:]),
            "ms_first": ms[0] if ms else 0, "ms_p50": steady[len(steady) // 2],
            "ms_max": max(ms) if ms else 0}


def batch_answer(spark: Any, directory: str) -> Dict[tuple, int]:
    from pyspark.sql import functions as F
    df = spark.read.parquet(directory)
    start = (F.floor(F.unix_timestamp("ts") / 60) * 60).cast("long")
    rows = df.groupBy("key", start.alias("start")).agg(F.sum("value").alias("s")).collect()
    return {(r["key"], int(r["start"])): int(r["s"]) for r in rows}


def measure(spark: Any, keys: int, events: int, files: int, seed: int) -> List[dict]:
    d = tempfile.mkdtemp(prefix="pomset-bench-")
    try:
        write_input(d, events, keys, files, seed, stretch_s=STRETCH_S)
        expected = batch_answer(spark, d)
        native, native_stats = run_native(spark, d, os.path.join(d, "_native_checkpoint"))
        rows = [dict(system="native Spark (append, final panes only)", stats=native_stats,
                     panes=len(native), ok=all(expected.get(k) == v for k, v in native.items()))]
        for python in (False, True):
            last, batches, panes = run_pomset(d, python)
            ok = last == expected and all(last.get(k) == v for k, v in native.items())
            rows.append(dict(system="pomset, Python Map + CombinePerKey(Sum)" if python else
                             "pomset, GroupBy.aggregate_field (schema'd)",
                             stats=batches, panes=panes, ok=ok))
        for r in rows:
            r.update(keys=keys, events=events, files=files)
        return rows
    finally:
        shutil.rmtree(d, ignore_errors=True)


def rates(events: int, s: dict) -> Tuple[float, Optional[float]]:
    """(events/s over all micro-batches, events/s over those after the first or None)."""
    rate = events / (s["ms_total"] / 1000)
    steady = (events * (s["count"] - 1) / s["count"]) / (s["ms_steady"] / 1000) \
        if s["count"] > 1 else None
    return rate, steady


def worker(shape: str, seed: int, result: str) -> None:
    """pomset's side alone on one KEYS:EVENTS:FILES shape, both forms, in this process: per
    form the rate compared (steady; one file: the whole run's), whether its last panes equal
    Spark's batch sums, and a digest of them; written to `result` as JSON."""
    from pomset.runners.spark.session import spark_session
    spark = spark_session(pm.PipelineOptions(["--runner=spark"]))
    keys, events, files = map(int, shape.split(":"))
    d = tempfile.mkdtemp(prefix="pomset-bench-")
    forms = {}
    try:
        write_input(d, events, keys, files, seed, stretch_s=STRETCH_S)
        expected = batch_answer(spark, d)
        for python in (False, True):
            last, batches, _ = run_pomset(d, python)
            rate, steady = rates(events, batches)
            forms["Python Map + CombinePerKey" if python else "GroupBy.aggregate_field"] = {
                "rate": rate if files == 1 else steady, "ok": last == expected,
                "digest": hashlib.sha256(repr(sorted(last.items())).encode()).hexdigest()}
    finally:
        shutil.rmtree(d, ignore_errors=True)
        spark.stop()
    with open(result, "w") as f:
        json.dump(forms, f)


def table(rows: List[dict]) -> str:
    lines = ["| keys | events | files | system | micro-batches | events/s | events/s steady | "
             "batch median (steady) | first batch | panes | last panes = batch sums | vs native (steady; one batch: whole run) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    native_rate = {}
    for r in rows:
        s = r["stats"]
        rate, steady = rates(r["events"], s)
        shape = (r["keys"], r["events"], r["files"])
        compared = rate if r["files"] == 1 else steady
        if r["system"].startswith("native"):
            native_rate[shape] = compared
        ratio = native_rate[shape] / compared
        lines.append(
            f"| {r['keys']:,} | {r['events']:,} | {r['files']} | {r['system']} | {s['count']} | "
            f"{rate:,.0f} | {'-' if steady is None else f'{steady:,.0f}'} | "
            f"{s['ms_p50'] / 1000:.2f} s | {s['ms_first'] / 1000:.1f} s | "
            f"{r['panes']:,} | {'yes' if r['ok'] else 'NO'} | "
            f"{'1.00x' if r['system'].startswith('native') else _ratio(ratio)} |")
    return "\n".join(lines)


def _ratio(ratio: float) -> str:
    """native's rate over pomset's, in words."""
    return f"{ratio:.2f}x slower" if ratio >= 1 else f"{1 / ratio:.2f}x faster"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="100:2000000:10,10000:2000000:10,10000:2000000:1",
                    help="comma-separated KEYS:EVENTS:FILES")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--worker", metavar="SHAPE", help="pomset alone on one shape (--result)")
    ap.add_argument("--result", help="with --worker: where its JSON goes")
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.seed, args.result)
    compile_bytecode()
    from pomset.runners.spark.session import spark_session
    spark = spark_session(pm.PipelineOptions(["--runner=spark"]))
    rows: List[dict] = []
    for shape in args.shapes.split(","):
        keys, events, files = map(int, shape.split(":"))
        rows += measure(spark, keys, events, files, args.seed)
        print(table(rows), flush=True)
    version, master = spark.version, spark.sparkContext.master
    spark.stop()
    text = "\n".join([
        f"Measured by `benchmarks/spark_streaming.py --shapes {args.shapes}` (seed {args.seed}).",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python "
        f"{platform.python_version()}, Spark {version} (`{master}`, default flags).",
        "",
        table(rows),
    ])
    print(text)
    if not all(r["ok"] for r in rows):
        sys.exit("a streaming run's panes differ from the batch sums")
    if not args.no_write:
        write_block(BEGIN, END, text)


if __name__ == "__main__":
    main()
