"""pomset's Spark runner against hand-written PySpark DataFrame code, in the same run, on the
same SparkSession and the same generated Parquet input.

The pomset pipeline (batch, `--runner=spark`):

    ReadFromParquet(files, timestamp_field="ts") | Map(row -> (key, value)) | WindowInto(W)
        | CombinePerKey(Sum()) | Map((kv, window) -> (key, window start s, sum))

The hand-written PySpark code computes the same rows with Spark's own operators:

    spark.read.parquet(files).groupBy(key, window(ts, W)).agg(sum(value))

with W fixed 60 s windows ("fixed") or 300 s windows sliding every 60 s ("sliding"). Input:
N rows (seeded random: K keys, values 1..99, event times over 6 hours) in F Parquet files.
Both collect their rows to the driver, and the two multisets of (key, window start, sum)
must be equal. Rows/s = N / wall time (the input files are written before, and each side
runs after a warm-up job on the same session).

    .venv/bin/python benchmarks/spark_vs_native.py                       # writes BENCHMARKS.md
    .venv/bin/python benchmarks/spark_vs_native.py --rows 10000000 --no-write
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from typing import Any, Dict, List

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
BEGIN, END = "<!-- spark-results:begin -->", "<!-- spark-results:end -->"
EPOCH_S = 1_700_000_000

import pomset as pm  # noqa: E402
from results import compile_bytecode  # noqa: E402


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


def window_fn(shape: str) -> Any:
    return pm.FixedWindows(60) if shape == "fixed" else pm.SlidingWindows(300, 60)


def run_pomset(pattern: str, shape: str) -> List[tuple]:
    p = pm.Pipeline(options=pm.PipelineOptions(["--runner=spark", "--quiet", "--collect=leaves"]))
    rows = (p
            | pm.ReadFromParquet(pattern, timestamp_field="ts")
            | pm.Map(lambda r: (r["key"], r["value"]))
            | pm.WindowInto(window_fn(shape))
            | pm.CombinePerKey(pm.Sum())
            | pm.Map(lambda kv, w=pm.DoFn.WindowParam: (kv[0], w.start.micros // 1_000_000, kv[1])))
    result = p.run()
    return [wv.value for wv in result.collect(rows)]


def run_native(spark: Any, directory: str, shape: str) -> List[tuple]:
    from pyspark.sql import functions as F
    df = spark.read.parquet(os.path.join(directory, "part-*.parquet"))
    w = F.window("ts", "60 seconds") if shape == "fixed" else F.window("ts", "300 seconds", "60 seconds")
    out = df.groupBy("key", w.alias("w")).agg(F.sum("value").alias("s"))
    return [(r["key"], int(r["w"]["start"].timestamp()), r["s"])
            for r in out.select("key", "w", "s").collect()]


def timed(fn, *args) -> tuple:
    started = time.perf_counter()
    rows = fn(*args)
    return time.perf_counter() - started, rows


def write_results(path: str, text: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace (or append) a benchmark's block of results (between `begin` and `end`) in
    BENCHMARKS.md."""
    with open(path) as f:
        doc = f.read()
    block = f"{begin}\n{text}\n{end}"
    if begin in doc:
        head, rest = doc.split(begin, 1)
        doc = head + block + rest.split(end, 1)[1]
    else:
        doc += f"\n{block}\n"
    with open(path, "w") as f:
        f.write(doc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--shapes", default="fixed,sliding")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each side per shape (median)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    compile_bytecode()

    from pomset.runners.spark.session import spark_session
    spark = spark_session(pm.PipelineOptions([f"--spark_master={args.master}"]))
    results: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pomset-spark-bench-") as directory:
        pattern = write_input(directory, args.rows, args.keys, args.files, args.seed)
        spark.range(1000).selectExpr("sum(id)").collect()   # warm-up: JVM, Python workers
        for shape in args.shapes.split(","):
            times: Dict[str, List[float]] = {"pomset": [], "native": []}
            answers: Dict[str, Counter] = {}
            for _ in range(args.repeat):
                for side in ("pomset", "native"):
                    print(f"[{shape}] {side} ...", file=sys.stderr, flush=True)
                    if side == "pomset":
                        t, rows = timed(run_pomset, pattern, shape)
                    else:
                        t, rows = timed(run_native, spark, directory, shape)
                    times[side].append(t)
                    answers[side] = Counter(rows)
                    print(f"[{shape}]   {t:.1f} s, {len(rows):,} rows", file=sys.stderr, flush=True)
            row = {"shape": shape, "pomset": statistics.median(times["pomset"]),
                   "native": statistics.median(times["native"]),
                   "match": answers["pomset"] == answers["native"],
                   "out_rows": sum(answers["native"].values())}
            results.append(row)
    spark.stop()

    lines = [f"Measured {time.strftime('%Y-%m-%d')} by `benchmarks/spark_vs_native.py` "
             f"(`--rows {args.rows}`, {args.keys:,} keys, {args.files} Parquet files, event times "
             f"over 6 h, seed {args.seed}; median of {args.repeat} runs of each side).",
             "",
             f"Machine: {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python "
             f"{platform.python_version()}, Spark {spark.version} (`{args.master}`).",
             "",
             "| shape | rows | pomset (spark runner) | rows/s | hand-written PySpark | rows/s | "
             "pomset ÷ native time | output rows | results match |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['shape']} | {args.rows:,} | {r['pomset']:.1f} s | "
                     f"{args.rows / r['pomset']:,.0f} | {r['native']:.1f} s | "
                     f"{args.rows / r['native']:,.0f} | **{r['pomset'] / r['native']:.1f}x** | "
                     f"{r['out_rows']:,} | {'yes' if r['match'] else 'NO'} |")
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_results(args.out, text)
        print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
