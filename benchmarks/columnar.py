"""Columnar rows (issue 14): a windowed sum per key over Parquet, on pomset's Spark and local
runners, against hand-written PySpark (same SparkSession, same run), DuckDB and Polars.

The pomset pipeline, schema'd form (`pm.GroupBy`; skipped, and said so, where this build of
pomset has no `pm.GroupBy` yet):

    ReadFromParquet(files, timestamp_field="ts") | WindowInto(FixedWindows(W))
        | GroupBy("key").aggregate_field("value", Sum, "total") | WriteToParquet(prefix)

and the Python-function form:

    ReadFromParquet(files, timestamp_field="ts") | WindowInto(FixedWindows(W))
        | Map(lambda r: (r["key"], r["value"])) | CombinePerKey(sum) | WriteToParquet(prefix)

The others compute the same (key, window start, sum of value) rows from the same files and
write them to Parquet: hand-written PySpark (`spark.read.parquet`, `F.window`,
`groupBy(key, window).agg(F.sum)`, `df.write.parquet`), DuckDB (`COPY (SELECT ... GROUP BY)
TO`) and Polars (`scan_parquet ... group_by ... sink_parquet`). Nothing is collected to the
driver: every engine's output is read back from Parquet afterwards into (key, window start
in seconds, total), sorted, and compared exactly with every other engine's on the same shape;
any difference fails the run (exit status 1, after the raw results are written to --out).

Input (generated once per parameters, cached under --data-dir): N rows, seeded numpy,
columns key (string "k0001"...), value (int64, 1..99) and ts (timestamp[us, UTC], uniform over
24 hours from a midnight), row groups of 1M rows, in 1 file (shape a) or --files files
(shape b: the same rows split). Shapes:

    a   N rows, K keys, hourly windows, 1 file              (K x 24 output rows)
    b   as a, in --files files (default 16)
    c   as a, one-minute windows                            (~K x 1440 output rows)

Timing: wall time of the pipeline run / the action (data generation excluded), best of
--repeat runs (median also in --out's JSON). Spark engines run in this process, all on the
same SparkSession (pomset's own settings, `pomset/runners/spark/session.py`, master
local[2]), after a tiny warm-up run of each engine; peak memory is sampled every 20 ms over
the process tree during each run: this driver's Python, the JVM and the Python workers, each
RSS (the JVM's RSS only grows over the session: it is the peak so far, not the run's own).
Local engines (pomset local runner, DuckDB, Polars) each run in a fresh subprocess per repeat,
after a tiny warm-up run of the same engine in that subprocess; their peak memory is the
subprocess's VmHWM (peak RSS), with the RSS just before the timed run beside it.

    .venv/bin/python benchmarks/columnar.py                                   # everything
    .venv/bin/python benchmarks/columnar.py --rows 1000000 --shape a --engines local-map,duckdb,polars
    .venv/bin/python benchmarks/columnar.py --worker local-map --shape a      # one run, any engine
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.append(ROOT)   # after PYTHONPATH, which may name another tree's pomset to measure

DAY_S = 86_400
START_S = 1_699_920_000            # 2023-11-14 00:00:00 UTC: hourly windows align to the data
ROW_GROUP = 1_000_000

SPARK_ENGINES = ("spark-schema", "spark-map", "spark-native")
LOCAL_ENGINES = ("local-schema", "local-map", "duckdb", "polars")
ALL_ENGINES = SPARK_ENGINES + LOCAL_ENGINES
BASELINE = {"spark-schema": "spark-native", "spark-map": "spark-native",
            "local-schema": "duckdb", "local-map": "duckdb"}


# --- input ------------------------------------------------------------------------------------

def shape_params(shape: str, args: argparse.Namespace) -> Dict[str, Any]:
    if shape == "a":
        return {"files": 1, "window": 3600}
    if shape == "b":
        return {"files": args.files, "window": 3600}
    if shape == "c":
        return {"files": 1, "window": args.c_window}
    raise SystemExit(f"unknown shape {shape!r} (a, b or c)")


def make_table(rows: int, keys: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    width = max(4, len(str(keys - 1)))
    names = pa.array([f"k{i:0{width}d}" for i in range(keys)])
    idx = rng.integers(0, keys, rows)
    values = rng.integers(1, 100, rows, dtype=np.int64)
    ts = START_S * 1_000_000 + rng.integers(0, DAY_S * 1_000_000, rows, dtype=np.int64)
    return pa.table({"key": names.take(pa.array(idx)),
                     "value": pa.array(values, pa.int64()),
                     "ts": pa.array(ts, pa.timestamp("us", "UTC"))})


def input_glob(data_dir: str, rows: int, keys: int, files: int, seed: int) -> str:
    """The files' glob, generating them first unless already there (cached by parameters)."""
    directory = os.path.join(data_dir, f"data-r{rows}-k{keys}-f{files}-s{seed}")
    pattern = os.path.join(directory, "part-*.parquet")
    if not os.path.exists(os.path.join(directory, "_DONE")):
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        print(f"generating {rows:,} rows, {keys:,} keys, {files} file(s) in {directory}",
              file=sys.stderr, flush=True)
        table = make_table(rows, keys, seed)
        per = -(-rows // files)
        for f in range(files):
            pq.write_table(table.slice(f * per, per), os.path.join(directory, f"part-{f:05d}.parquet"),
                           row_group_size=ROW_GROUP)
        open(os.path.join(directory, "_DONE"), "w").close()
    return pattern


# --- engines: each writes (key, window start, total) to Parquet under `out` -------------------

def run_pomset(form: str, runner: str, pattern: str, window: int, out: str,
               master: str = "local[2]") -> None:
    import pomset as pm
    argv = ["--quiet", "--collect=none"]
    if runner == "spark":
        argv.append(f"--spark_master={master}")
    with pm.Pipeline(runner=runner, argv=argv) as p:
        rows = (p | pm.ReadFromParquet(pattern, timestamp_field="ts")
                  | pm.WindowInto(pm.FixedWindows(window)))
        if form == "schema":
            summed = rows | pm.GroupBy("key").aggregate_field("value", pm.Sum, "total")
        else:
            summed = (rows | pm.Map(lambda r: (r["key"], r["value"]))
                           | pm.CombinePerKey(sum))
        summed | pm.WriteToParquet(os.path.join(out, "part"))


def run_spark_native(spark: Any, pattern: str, window: int, out: str) -> None:
    from pyspark.sql import functions as F
    df = spark.read.parquet(pattern)
    w = F.window("ts", f"{window} seconds")
    (df.groupBy("key", w.alias("w")).agg(F.sum("value").alias("total"))
       .select("key", F.col("w.start").alias("window_start"), "total")
       .write.mode("overwrite").parquet(out))


def run_duckdb(pattern: str, window: int, out: str) -> None:
    import duckdb
    os.makedirs(out, exist_ok=True)
    con = duckdb.connect()
    con.execute(f"""
        COPY (SELECT key, epoch_us(ts) // {window * 1_000_000} * {window} AS window_start,
                     sum(value)::BIGINT AS total
              FROM read_parquet('{pattern}') GROUP BY ALL)
        TO '{os.path.join(out, "part-0.parquet")}' (FORMAT parquet)""")
    con.close()


def run_polars(pattern: str, window: int, out: str) -> None:
    import polars as pl
    os.makedirs(out, exist_ok=True)
    (pl.scan_parquet(pattern)
       .group_by("key", (pl.col("ts").dt.epoch("s") // window * window).alias("window_start"))
       .agg(pl.col("value").sum().alias("total"))
       .sink_parquet(os.path.join(out, "part-0.parquet")))


def has_groupby() -> bool:
    import pomset as pm
    return hasattr(pm, "GroupBy")


def run_local_engine(engine: str, pattern: str, window: int, out: str) -> None:
    if engine == "local-schema":
        run_pomset("schema", "local", pattern, window, out)
    elif engine == "local-map":
        run_pomset("map", "local", pattern, window, out)
    elif engine == "duckdb":
        run_duckdb(pattern, window, out)
    elif engine == "polars":
        run_polars(pattern, window, out)
    else:
        raise ValueError(engine)


# --- canonical results ------------------------------------------------------------------------

def canonical(out: str) -> pa.Table:
    """(key, window_start s, total) sorted, from whatever columns the engine wrote."""
    files = sorted(f for f in glob.glob(os.path.join(out, "**", "*"), recursive=True)
                   if os.path.isfile(f) and not os.path.basename(f).startswith(("_", "."))
                   and not f.endswith(".crc"))
    if not files:
        raise SystemExit(f"FAIL: no output files under {out}")
    t = pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")
    total = t.column("total") if "total" in t.column_names else t.column("value")
    start = t.column("window_start")
    if pa.types.is_timestamp(start.type):
        start = pc.divide(start.cast(pa.timestamp("us", "UTC")).cast(pa.int64()), 1_000_000)
    elif pa.types.is_floating(start.type):
        as_int = pc.cast(start, pa.int64(), safe=False)
        if not pc.all(pc.equal(pc.cast(as_int, pa.float64()), start)).as_py():
            raise SystemExit(f"FAIL: non-integral window_start in {out}")
        start = as_int
    canon = pa.table({"key": t.column("key").cast(pa.string()),
                      "window_start": start.cast(pa.int64()),
                      "total": total.cast(pa.int64())})
    return canon.sort_by([("key", "ascending"), ("window_start", "ascending"),
                          ("total", "ascending")])


# --- memory -----------------------------------------------------------------------------------

class TreeSampler:
    """Peak RSS of this process, the JVM(s) below it and the Python workers below those,
    sampled every `interval` s while running."""

    def __init__(self, interval: float = 0.02) -> None:
        import psutil
        self.psutil, self.interval = psutil, interval
        self.me = psutil.Process()
        self.peak = {"driver_py": 0, "jvm": 0, "workers_py": 0, "total": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> None:
        ps = self.psutil
        driver = jvm = workers = 0
        try:
            driver = self.me.memory_info().rss
            for c in self.me.children(recursive=True):
                try:
                    rss = c.memory_info().rss
                    name = c.name()
                except ps.Error:
                    continue
                if "java" in name:
                    jvm += rss
                elif "python" in name:
                    workers += rss
        except ps.Error:
            return
        for k, v in (("driver_py", driver), ("jvm", jvm), ("workers_py", workers),
                     ("total", driver + jvm + workers)):
            self.peak[k] = max(self.peak[k], v)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> "TreeSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


def vm_hwm() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def vm_rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


# --- drivers ----------------------------------------------------------------------------------

def digest(table: pa.Table) -> str:
    """A hash of a canonical result, to compare runs in different processes."""
    return hashlib.sha256(repr(table.to_pydict()).encode()).hexdigest()


def worker_main(args: argparse.Namespace) -> None:
    """One engine, once, in this (fresh) process: a tiny warm-up run of the same engine
    first (a Spark engine's on a SparkSession of this process), then the timed run; prints a
    JSON line, with the digest of the result when `--worker-digest` asks for it."""
    engine, p = args.worker, shape_params(args.shape, args)
    spark = None
    if engine in SPARK_ENGINES:
        import pomset as pm
        from pomset.runners.spark.session import spark_session
        spark = spark_session(pm.PipelineOptions([f"--spark_master={args.master}"]))

    def run(pattern: str, window: int, out: str) -> None:
        if spark is None:
            run_local_engine(engine, pattern, window, out)
        else:
            spark_run(engine, spark, pattern, window, out, args.master)
    tiny = input_glob(args.data_dir, 10_000, 100, 1, args.seed)
    warm = os.path.join(args.data_dir, "out", f"warmup-{engine}-{os.getpid()}")
    run(tiny, p["window"], warm)
    shutil.rmtree(warm, ignore_errors=True)
    pattern = input_glob(args.data_dir, args.rows, args.keys, p["files"], args.seed)
    out = args.worker_out
    shutil.rmtree(out, ignore_errors=True)
    before = vm_rss()
    started = time.perf_counter()
    run(pattern, p["window"], out)
    elapsed = time.perf_counter() - started
    result = {"seconds": elapsed, "peak_rss": vm_hwm(), "rss_before": before}
    if args.worker_digest:
        result["digest"] = digest(canonical(out))
    if spark is not None:
        spark.stop()
    print("RESULT " + json.dumps(result), flush=True)


def run_local(engine: str, shape: str, args: argparse.Namespace, out: str) -> Dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", engine, "--shape", shape,
           "--rows", str(args.rows), "--keys", str(args.keys), "--files", str(args.files),
           "--c-window", str(args.c_window), "--seed", str(args.seed),
           "--data-dir", args.data_dir, "--worker-out", out]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"FAIL: {engine} on shape {shape} exited {proc.returncode}:\n"
                         f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--keys", type=int, default=1_000)
    ap.add_argument("--files", type=int, default=16, help="files in shape b")
    ap.add_argument("--c-window", type=int, default=60, help="window (s) of shape c")
    ap.add_argument("--shape", default="a,b,c", help="comma-separated: a, b, c")
    ap.add_argument("--engines", default=",".join(ALL_ENGINES),
                    help="comma-separated, of: " + ", ".join(ALL_ENGINES))
    ap.add_argument("--map-shapes", default="a,b,c",
                    help="shapes the Map+CombinePerKey form runs on (default: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--map-repeat", type=int, default=None,
                    help="runs of the Map+CombinePerKey engines (default: --repeat)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--data-dir", default="/tmp/pomset-bench")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "columnar.json"),
                    help="the raw results as JSON (default: benchmarks/out/, ignored by git)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave the docs")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--worker-digest", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.makedirs(args.data_dir, exist_ok=True)

    if args.worker:
        if args.worker_out is None:
            args.worker_out = os.path.join(args.data_dir, "out", f"single-{args.worker}-{args.shape}")
        worker_main(args)
        return

    shapes = args.shape.split(",")
    engines = [e for e in args.engines.split(",") if e]
    unknown = set(engines) - set(ALL_ENGINES)
    if unknown:
        raise SystemExit(f"unknown engines {sorted(unknown)}")
    groupby = has_groupby()
    notes: List[str] = []
    if not groupby and {"spark-schema", "local-schema"} & set(engines):
        notes.append("pm.GroupBy is not in this build of pomset: the schema'd engines were skipped")
        engines = [e for e in engines if e not in ("spark-schema", "local-schema")]
    map_shapes = set(args.map_shapes.split(","))

    def wanted(engine: str, shape: str) -> bool:
        return engine in engines and (not engine.endswith("-map") or shape in map_shapes)

    for shape in shapes:      # generate every input before any timing
        input_glob(args.data_dir, args.rows, args.keys, shape_params(shape, args)["files"], args.seed)
    results: List[Dict[str, Any]] = []
    out_root = os.path.join(args.data_dir, "out")

    spark = None
    if any(e in SPARK_ENGINES for e in engines):
        import pomset as pm
        from pomset.runners.spark.session import spark_session
        spark = spark_session(pm.PipelineOptions([f"--spark_master={args.master}"]))
        tiny = input_glob(args.data_dir, 10_000, 100, 1, args.seed)
        for engine in engines:    # warm-up: JVM, Python workers, code paths of each engine
            if engine in SPARK_ENGINES:
                warm = os.path.join(out_root, f"warmup-{engine}")
                shutil.rmtree(warm, ignore_errors=True)
                spark_run(engine, spark, tiny, 3600, warm, args.master)

    for shape in shapes:
        p = shape_params(shape, args)
        pattern = input_glob(args.data_dir, args.rows, args.keys, p["files"], args.seed)
        answers: Dict[str, pa.Table] = {}
        for engine in engines:
            if not wanted(engine, shape):
                continue
            out = os.path.join(out_root, f"{engine}-{shape}-r{args.rows}-k{args.keys}")
            times: List[float] = []
            mem: Dict[str, int] = {}
            repeat = args.map_repeat if engine.endswith("-map") and args.map_repeat else args.repeat
            for i in range(repeat):
                shutil.rmtree(out, ignore_errors=True)
                print(f"[{shape}] {engine} run {i + 1}/{repeat} ...", file=sys.stderr, flush=True)
                if engine in SPARK_ENGINES:
                    with TreeSampler() as sampler:
                        started = time.perf_counter()
                        spark_run(engine, spark, pattern, p["window"], out, args.master)
                        t = time.perf_counter() - started
                    for k, v in sampler.peak.items():
                        mem[k] = max(mem.get(k, 0), v)
                else:
                    r = run_local(engine, shape, args, out)
                    t = r["seconds"]
                    mem["peak_rss"] = max(mem.get("peak_rss", 0), r["peak_rss"])
                    mem["rss_before"] = max(mem.get("rss_before", 0), r["rss_before"])
                times.append(t)
                print(f"[{shape}]   {t:.2f} s", file=sys.stderr, flush=True)
            answers[engine] = canonical(out)
            results.append({"engine": engine, "shape": shape, "rows": args.rows, "keys": args.keys,
                            "files": p["files"], "window_s": p["window"], "times": times,
                            "best": min(times), "median": statistics.median(times),
                            "rows_per_s": args.rows / min(times),
                            "out_rows": answers[engine].num_rows, "memory": mem})
        # every pair on this shape: equal to the first engine's answer
        names = list(answers)
        for name in names[1:]:
            same = answers[name].equals(answers[names[0]])
            for r in results:
                if r["shape"] == shape and r["engine"] in (name, names[0]):
                    r["match"] = r.get("match", True) and same
            if not same:
                notes.append(f"MISMATCH on shape {shape}: {name} != {names[0]} "
                             f"({answers[name].num_rows:,} vs {answers[names[0]].num_rows:,} rows)")
        if len(names) == 1:
            for r in results:
                if r["shape"] == shape:
                    r["match"] = None
        for r in results:      # ratios: time / baseline's time, same shape
            if r["shape"] != shape:
                continue
            base = BASELINE.get(r["engine"])
            for other in ([base] if base else []) + (["polars"] if r["engine"].startswith("local") else []):
                b = next((x for x in results if x["shape"] == shape and x["engine"] == other), None)
                if b:
                    r[f"ratio_vs_{other}"] = r["best"] / b["best"]
            if r["engine"] == "spark-map":
                b = next((x for x in results if x["shape"] == shape and x["engine"] == "local-map"), None)
                if b:
                    r["ratio_vs_local-map"] = r["best"] / b["best"]

    versions = {"python": platform.python_version(), "pyarrow": pa.__version__}
    for mod in ("pyspark", "duckdb", "polars"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            pass
    doc = {"when": time.strftime("%Y-%m-%d %H:%M"), "argv": sys.argv[1:],
           "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.release()}",
           "versions": versions, "groupby_available": groupby, "notes": notes,
           "results": results}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    if spark is not None:
        spark.stop()
    block = header(doc) + "\n\n" + markdown(doc)
    print(block)
    print(f"wrote {args.out}", file=sys.stderr)
    if any(n.startswith("MISMATCH") for n in notes):
        for n in notes:
            print("FAIL: " + n, file=sys.stderr)
        sys.exit(1)
    if not args.no_write:
        from results import markers, write_block
        write_block(*markers("columnar-results"), block)
        write_block(*markers("columnar-summary"), summary(doc))


def spark_run(engine: str, spark: Any, pattern: str, window: int, out: str, master: str) -> None:
    if engine == "spark-native":
        run_spark_native(spark, pattern, window, out)
    else:
        run_pomset("schema" if engine == "spark-schema" else "map", "spark", pattern, window, out,
                   master)


def header(doc: Dict[str, Any]) -> str:
    """What the table was measured by and on."""
    versions = ", ".join(f"{k} {v}" for k, v in doc["versions"].items())
    return (f"Measured by `benchmarks/columnar.py {' '.join(a for a in doc['argv'] if a != '--no-write')}` "
            f"(best of the runs; ratio = best time / the peer's best time in the same run). "
            f"Machine: {doc['machine']}, {versions}.")


def summary(doc: Dict[str, Any]) -> str:
    """The table docs/performance.md shows: per shape, pomset's schema'd pipeline on each runner
    beside the peer a user would pick there (best times)."""
    best = {(r["engine"], r["shape"]): r for r in doc["results"]}
    lines = [header(doc), "", "| shape | output rows | pomset local | DuckDB | Polars | local / DuckDB | "
             "pomset Spark | hand-written PySpark | Spark / PySpark |",
             "|---|---|---|---|---|---|---|---|---|"]
    cell = lambda e, s: f"{best[e, s]['best']:.2f} s" if (e, s) in best else "-"   # noqa: E731
    ratio = lambda a, b, s: (f"**{best[a, s]['best'] / best[b, s]['best']:.2f}x**"   # noqa: E731
                             if (a, s) in best and (b, s) in best else "-")
    for shape in dict.fromkeys(r["shape"] for r in doc["results"]):
        r = next(x for x in doc["results"] if x["shape"] == shape)
        lines.append(f"| {shape} ({r['rows']:,} rows, {r['files']} file{'s' if r['files'] > 1 else ''}, "
                     f"{r['window_s']} s windows) | {r['out_rows']:,} | {cell('local-schema', shape)} | "
                     f"{cell('duckdb', shape)} | {cell('polars', shape)} | "
                     f"{ratio('local-schema', 'duckdb', shape)} | {cell('spark-schema', shape)} | "
                     f"{cell('spark-native', shape)} | {ratio('spark-schema', 'spark-native', shape)} |")
    return "\n".join(lines)


def markdown(doc: Dict[str, Any]) -> str:
    mb = lambda b: f"{b / 2**20:,.0f} MB"   # noqa: E731
    lines = ["| engine | shape | rows | output rows | best time | rows/s | ratio (time) | peak memory | match |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        ratios = ", ".join(f"{v:.2f}x {k[len('ratio_vs_'):]}" for k, v in r.items()
                           if k.startswith("ratio_vs_"))
        m = r["memory"]
        if "jvm" in m:
            memory = (f"driver {mb(m['driver_py'])}, JVM {mb(m['jvm'])}, "
                      f"workers {mb(m['workers_py'])}")
        else:
            memory = f"{mb(m['peak_rss'])} (before run {mb(m['rss_before'])})"
        match = {True: "yes", False: "**NO**", None: "n/a"}[r.get("match")]
        lines.append(f"| {r['engine']} | {r['shape']} ({r['files']} file{'s' if r['files'] > 1 else ''}, "
                     f"{r['window_s']} s windows) | {r['rows']:,} | {r['out_rows']:,} | "
                     f"{r['best']:.2f} s | {r['rows_per_s']:,.0f} | {ratios or '-'} | {memory} | {match} |")
    for n in doc["notes"]:
        lines.append(f"\n- {n}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
