"""Peak memory of a bounded run whose results go to a sink, by `--collect` mode.

A realistic batch job over a real Parquet file of N rows (seeded random: K keys, values
1..99, event times over 6 hours):

    ReadFromParquet(file, timestamp_field="ts") | Map(row -> (key, value))
        | WindowInto(FixedWindows(600)) | CombinePerKey(Sum()) | WriteToParquet(out)

Nothing in it is a leaf: the sink reads the sums. So the default (`--collect=auto`) keeps
nothing, `--collect=leaves` the same, and `--collect=all` (the default before) every
PCollection, the N rows read included. On the local runner each configuration runs in a fresh
subprocess, whose peak resident set size (VmHWM from /proc/self/status, which starts afresh at
exec) is the whole process's: interpreter, imports and the run; the baseline just before the
pipeline is built is reported beside it. On the Spark runner (a smaller input, in as many
files as cores, so each task reads one) the default and `all` are timed, each in a fresh
subprocess after its session has started and run a warm-up job; the driver's peak RSS there
is the Python driver's only (not the JVM's nor its Python workers'), so it shows what
`all` brings to the driver. Every configuration's written Parquet is read back: the
multisets of (key, window start, sum) must be equal.

    .venv/bin/python benchmarks/bounded_memory.py                      # writes BENCHMARKS.md
    .venv/bin/python benchmarks/bounded_memory.py --rows 200000 --spark-rows 0 --no-write
"""
from __future__ import annotations

import argparse
import glob
import os
import pickle
import platform
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
BEGIN, END = "<!-- bounded-memory-results:begin -->", "<!-- bounded-memory-results:end -->"
EPOCH_S = 1_700_000_000
WINDOW_S = 600
LOCAL_MODES = ("auto", "all", "leaves")
SPARK_MODES = ("auto", "all")


# --- input and the pipeline -------------------------------------------------------------------

def write_input(directory: str, rows: int, keys: int, files: int, seed: int) -> str:
    """Seeded random (key, value, ts) rows in `files` Parquet files; their glob pattern."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(seed)
    names = np.array([f"k{i:05d}" for i in range(keys)])
    per = -(-rows // files)
    for f in range(files):
        n = min(per, rows - f * per)
        table = pa.table({
            "key": pa.array(names[rng.integers(0, keys, n)]),
            "value": pa.array(rng.integers(1, 100, n), pa.int64()),
            "ts": pa.array((EPOCH_S + rng.integers(0, 6 * 3600, n)) * 1_000_000,
                           pa.timestamp("us", "UTC")),
        })
        pq.write_table(table, os.path.join(directory, f"part-{f:03d}.parquet"))
    return os.path.join(directory, "part-*.parquet")


def run_pipeline(pattern: str, out_prefix: str, flags: List[str]) -> None:
    """The measured job: windowed sums per key, read from and written to Parquet."""
    import pomset as pm
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", *flags]))
    (p
     | pm.ReadFromParquet(pattern, timestamp_field="ts")
     | pm.Map(lambda r: (r["key"], r["value"]))
     | pm.WindowInto(pm.FixedWindows(WINDOW_S))
     | pm.CombinePerKey(pm.Sum())
     | pm.WriteToParquet(out_prefix, file_name_suffix=".parquet"))
    p.run()


def read_output(out_prefix: str) -> List[tuple]:
    """The written sums, sorted: (key, window start, sum)."""
    import pyarrow.parquet as pq
    (path,) = glob.glob(f"{out_prefix}-*.parquet")
    import pyarrow as pa
    table = pq.read_table(path, columns=["key", "window_start", "value"])
    starts = table.column("window_start").cast(pa.int64())   # a timestamp, as µs
    return sorted(zip(table.column("key").to_pylist(), starts.to_pylist(),
                      table.column("value").to_pylist()))


# --- one measured run, in its own process ---------------------------------------------------------

def peak_rss_kb() -> int:
    """This process's peak resident set size in KiB (VmHWM: it starts afresh at exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def worker(args: argparse.Namespace) -> None:
    """Run the job once with `--collect=<args.mode>` on `args.runner`; pickle the figures."""
    # imports stay out of the measured time and the baseline's difference to the peak
    import pyarrow.parquet  # noqa: F401
    import pomset  # noqa: F401
    import pomset.runners.local.runner  # noqa: F401
    import pomset.sdk.io.parquetio  # noqa: F401
    flags = [f"--collect={args.mode}", f"--runner={args.runner}"]
    if args.runner == "spark":
        import pomset as pm
        from pomset.runners.spark.session import spark_session
        spark = spark_session(pm.PipelineOptions(["--runner=spark"]))
        spark.range(1000).selectExpr("sum(id)").collect()   # warm-up: the JVM and a job
    base_kb = peak_rss_kb()
    started = time.perf_counter()
    run_pipeline(args.input, args.output, flags)
    elapsed = time.perf_counter() - started
    peak_kb = peak_rss_kb()
    if args.runner == "spark":
        spark.stop()
    with open(args.result, "wb") as f:
        pickle.dump({"elapsed": elapsed, "peak_kb": peak_kb, "base_kb": base_kb}, f)


def measure(runner: str, mode: str, pattern: str, work: str, run: int) -> Dict[str, Any]:
    """One run in a fresh subprocess: its figures and what it wrote (its stderr, Spark's log,
    shown only if it fails)."""
    result = os.path.join(work, f"result-{runner}-{mode}-{run}.pkl")
    output = os.path.join(work, f"out-{runner}-{mode}-{run}")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", runner,
                           "--mode", mode, "--input", pattern, "--output", output,
                           "--result", result], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"{runner} --collect={mode} failed")
    with open(result, "rb") as f:
        out = pickle.load(f)
    out["rows"] = read_output(output)
    return out


def measure_modes(runner: str, modes: tuple, pattern: str, work: str,
                  repeat: int) -> Dict[str, Dict[str, Any]]:
    """`repeat` rounds of one run per mode (interleaved, so that the machine's load weighs on
    every mode alike); per mode the median run's figures, every run's time, the largest
    peak, and whether its runs wrote the same."""
    runs: Dict[str, List[Dict[str, Any]]] = {mode: [] for mode in modes}
    for i in range(repeat):
        for mode in modes:
            r = measure(runner, mode, pattern, work, i)
            runs[mode].append(r)
            print(f"{runner} --collect={mode}: {r['elapsed']:.1f} s, peak "
                  f"{r['peak_kb'] // 1024} MB (baseline {r['base_kb'] // 1024} MB)", flush=True)
    out = {}
    for mode, rs in runs.items():
        out[mode] = dict(sorted(rs, key=lambda r: r["elapsed"])[len(rs) // 2])
        out[mode]["times"] = [r["elapsed"] for r in rs]   # in the order run
        out[mode]["peak_kb"] = max(r["peak_kb"] for r in rs)
        out[mode]["same"] = all(r["rows"] == out[mode]["rows"] for r in rs)
    return out


# --- report -----------------------------------------------------------------------------------

def machine() -> Dict[str, str]:
    model = platform.processor() or "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cores": str(os.cpu_count()), "cpu": model, "python": platform.python_version(),
            "os": f"{platform.system()} {platform.release()}"}


def render(local: Dict[str, Any], spark: Dict[str, Any], args: argparse.Namespace,
           m: Dict[str, str], match: bool) -> str:
    mb = lambda kb: f"{kb / 1024:,.0f} MB"   # noqa: E731
    lines = [
        f"Measured by `benchmarks/bounded_memory.py` "
        f"(`--rows {args.rows} --spark-rows {args.spark_rows}`, {args.keys:,} keys, event "
        f"times over 6 h, {WINDOW_S // 60}-minute windows, seed {args.seed}; median time of "
        f"{args.repeat} runs per mode on the local runner, {args.spark_repeat} on Spark, each "
        f"in a fresh process, the modes interleaved).",
        "",
        f"Machine: {m['cores']} cores ({m['cpu']}), {m['os']}, Python {m['python']}.",
        "",
        "| runner | input rows | `--collect` | wall time (median) | every run | "
        "peak RSS (baseline) | peak − baseline |",
        "|---|---|---|---|---|---|---|",
    ]
    for runner, rows, results in (("local", args.rows, local), ("spark", args.spark_rows, spark)):
        for mode, r in results.items():
            note = " (default)" if mode == "auto" else " (the old default)" if mode == "all" else ""
            lines.append(
                f"| {runner} | {rows:,} | `{mode}`{note} | {r['elapsed']:.1f} s | "
                f"{', '.join(f'{t:.1f}' for t in r['times'])} s | "
                f"{mb(r['peak_kb'])} ({mb(r['base_kb'])}) | **{mb(r['peak_kb'] - r['base_kb'])}** |")
    lines += [
        "",
        "- *peak RSS* = VmHWM of the subprocess that ran the one pipeline (on Spark the Python "
        "driver's, with what it brought back from the JVM, not the JVM's nor its Python "
        "workers'); *baseline* = the same just before the pipeline was built (after imports, "
        "and on Spark after the session started and ran a warm-up job).",
        f"- results match: {'yes' if match else 'NO'}: on each runner every run wrote the same "
        f"(key, window start, sum) rows, read back from its Parquet file ("
        + "; ".join(f"{runner}: {len(results['auto']['rows']):,} rows"
                    for runner, results in (("local", local), ("spark", spark)) if results)
        + ").",
    ]
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000, help="local runner's input rows")
    ap.add_argument("--spark-rows", type=int, default=500_000,
                    help="Spark runner's input rows (0: skip Spark)")
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3, help="local runs per mode (median)")
    ap.add_argument("--spark-repeat", type=int, default=1, help="Spark runs per mode (median)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md")
    ap.add_argument("--worker", choices=("local", "spark"), help=argparse.SUPPRESS)
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    ap.add_argument("--input", help=argparse.SUPPRESS)
    ap.add_argument("--output", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        args.runner = args.worker
        worker(args)
        return
    with tempfile.TemporaryDirectory(prefix="bounded-memory-") as work:
        os.makedirs(os.path.join(work, "local"))
        pattern = write_input(os.path.join(work, "local"), args.rows, args.keys, 1, args.seed)
        print(f"{args.rows:,} rows in {pattern}", flush=True)
        local = measure_modes("local", LOCAL_MODES, pattern, work, args.repeat)
        spark: Dict[str, Dict[str, Any]] = {}
        if args.spark_rows:
            os.makedirs(os.path.join(work, "spark"))
            small = write_input(os.path.join(work, "spark"), args.spark_rows, args.keys,
                                os.cpu_count() or 1, args.seed)
            spark = measure_modes("spark", SPARK_MODES, small, work, args.spark_repeat)
        runs = list(local.values()) + list(spark.values())
        match = all(r["same"] for r in runs) and all(
            r["rows"] == results["auto"]["rows"] for results in (local, spark)
            for r in results.values())
    text = render(local, spark, args, machine(), match)
    print(text)
    if not match:
        raise SystemExit("the configurations wrote different results")
    if not args.no_write:
        from results import write_block   # not in the measured workers' imports
        write_block(BEGIN, END, text)


if __name__ == "__main__":
    main()
