"""pomset's Spark runner in streaming: sustained events/s and micro-batch latency of a
triggered, accumulating windowed sum read from a directory of files as a stream.

    ReadFromParquet(dir/*.parquet, timestamp_field="ts") | Map(row -> (key, value))
        | WindowInto(FixedWindows(60), trigger=AfterWatermark(early=AfterCount(100)),
                     accumulation_mode=ACCUMULATING, allowed_lateness=600)
        | CombinePerKey(Sum())

run with `--streaming --streaming_until=latest --max_files_per_batch=1
--max_out_of_orderness=120`: one file per micro-batch, the watermark trailing the latest event
time read by 2 minutes. Input: F Parquet files of N/F events each (K keys, values 1..99), file
i holding the events of its own stretch of event time, shuffled within the file. Reported:
events/s over the query's micro-batches (N / the sum of their durations), the micro-batch
durations (median, 99th percentile, largest), and a check that every window's last pane
equals the batch sum over the same input (computed by Spark's own groupBy on the files).

    .venv/bin/python benchmarks/spark_streaming.py                   # writes BENCHMARKS.md
    .venv/bin/python benchmarks/spark_streaming.py --events 200000 --files 10 --no-write
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from typing import Any, Dict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
BEGIN, END = "<!-- spark-streaming-results:begin -->", "<!-- spark-streaming-results:end -->"
STRETCH_S = 600   # event time each file covers

import pomset as pm  # noqa: E402
from spark_vs_native import write_input, write_results  # noqa: E402


def run_pomset(directory: str) -> tuple:
    options = pm.PipelineOptions([
        "--runner=spark", "--quiet", "--collect=leaves", "--streaming",
        "--streaming_until=latest", "--max_files_per_batch=1", "--max_out_of_orderness=120"])
    p = pm.Pipeline(options=options)
    sums = (p | pm.ReadFromParquet(os.path.join(directory, "*.parquet"), timestamp_field="ts")
            | pm.Map(lambda r: (r["key"], r["value"]))
            | pm.WindowInto(pm.FixedWindows(60),
                            trigger=pm.AfterWatermark(early=pm.AfterCount(100)),
                            accumulation_mode=pm.AccumulationMode.ACCUMULATING,
                            allowed_lateness=600)
            | pm.CombinePerKey(pm.Sum()))
    result = p.run()
    last: Dict[tuple, tuple] = {}
    for wv in result.collect(sums):
        key = (wv.value[0], int(wv.window.start))
        if key not in last or wv.pane.index > last[key][0]:
            last[key] = (wv.pane.index, wv.value[1])
    panes = len(result.collect(sums))
    return {k: v for k, (_, v) in last.items()}, result.metrics()["micro-batches"], panes


def batch_answer(spark: Any, directory: str) -> Dict[tuple, int]:
    from pyspark.sql import functions as F
    df = spark.read.parquet(directory)
    start = (F.floor(F.unix_timestamp("ts") / 60) * 60).cast("long")
    rows = df.groupBy("key", start.alias("start")).agg(F.sum("value").alias("s")).collect()
    return {(r["key"], int(r["start"])): int(r["s"]) for r in rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    from pomset.runners.spark.session import spark_session
    spark, _ = spark_session(pm.PipelineOptions(["--runner=spark"]))
    with tempfile.TemporaryDirectory() as d:
        write_input(d, args.events, args.keys, args.files, args.seed, stretch_s=STRETCH_S)
        got, batches, panes = run_pomset(d)
        expected = batch_answer(spark, d)
    version = spark.version
    spark.stop()
    seconds = batches["ms_total"] / 1000
    match = got == expected
    text = "\n".join([
        f"Measured by `benchmarks/spark_streaming.py` (`--events {args.events}`, {args.keys:,} keys, "
        f"{args.files} Parquet files read one per micro-batch, seed {args.seed}).",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python "
        f"{platform.python_version()}, Spark {version} (`local[*]`).",
        "",
        "| events | micro-batches | events/s | batch median | batch p99 | batch max | panes | last panes = batch sums |",
        "|---|---|---|---|---|---|---|---|",
        f"| {args.events:,} | {batches['count']} | {args.events / seconds:,.0f} | "
        f"{batches['ms_p50'] / 1000:.1f} s | {batches['ms_p99'] / 1000:.1f} s | "
        f"{batches['ms_max'] / 1000:.1f} s | {panes:,} | {'yes' if match else 'NO'} |",
    ])
    print(text)
    if not match:
        sys.exit("the streaming run's last panes differ from the batch sums")
    if not args.no_write:
        write_results(os.path.join(ROOT, "BENCHMARKS.md"), text, BEGIN, END)


if __name__ == "__main__":
    main()
