"""The benchmark set a user reads in docs/performance.md, run one after another: each
benchmark rewrites its tables in BENCHMARKS.md and docs/performance.md (and its plots in
docs/img) as it finishes. `--quick` runs the same set at small sizes, in under ten minutes on
2 cores, and prints the tables without writing them (figures at those sizes are a smoke check
of a machine, not the reference); `--quick --write` writes them anyway.

    .venv/bin/python benchmarks/run_all.py                  # make bench
    .venv/bin/python benchmarks/run_all.py --quick          # make bench-quick
    .venv/bin/python benchmarks/run_all.py --only columnar,dgs
    .venv/bin/python benchmarks/run_all.py --list
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import List, NamedTuple, Optional

HERE = os.path.dirname(os.path.abspath(__file__))


class Benchmark(NamedTuple):
    name: str
    workload: str
    full: List[str]
    quick: List[str]


SET = [
    Benchmark("local_vs_beam", "local batch against Beam's DirectRunner",
              [], ["--events", "50000", "--repeat", "1", "--beam-repeat", "1"]),
    Benchmark("columnar", "batch over Parquet: local against DuckDB and Polars, Spark against PySpark",
              ["--rows", "10000000", "--shape", "a,b,c", "--repeat", "3"],
              ["--rows", "1000000", "--shape", "a", "--repeat", "1"]),
    Benchmark("spark_streaming", "Spark streaming against native Structured Streaming",
              [], ["--shapes", "10000:400000:4"]),
    Benchmark("spark_startup", "a short job's start-up: local, Spark local and a standalone cluster",
              [], ["--repeat", "1", "--no-cluster"]),
    Benchmark("kafka_streaming", "Kafka end to end, exactly once, local and Spark",
              [], ["--users", "10000", "--local-events", "30000", "--spark-events", "60000",
                   "--spark-batch-records", "20000", "--latency-seconds", "10",
                   "--rate-fractions", "0.5"]),
    Benchmark("kafka_cores", "Kafka on Spark by the cores it has", ["--rounds", "3"],
              ["--rounds", "1", "--events", "60000"]),
    Benchmark("stateful_vs_beam", "stateful DoFns against Beam's DirectRunner",
              [], ["--events", "20000", "--repeat", "1"]),
    Benchmark("traces_yahoo", "local streaming: typed templates against hand-written",
              ["--events", "200000", "--repeat", "5", "--parallelism", "1,4"],
              ["--events", "50000", "--repeat", "1"]),
    Benchmark("ordered_parallel", "the local runner's workers", [],
              ["--lines", "20000", "--numbers", "40000", "--repeats", "1", "--units", "5000",
               "--skew_values", "5000"]),
    Benchmark("dgs", "DGS applications at 1 and 2 workers", ["--repeats", "5", "--write"],
              ["--repeats", "1", "--shapes", "fraud,windows", "--variants",
               "sequential,seq-files,files-1,files-2", "--no-latency"]),
    Benchmark("vsn_elastic", "VSN reconfiguration and shared input", ["--tweets", "50000"],
              ["--sizes", "10000", "--tweets", "5000", "--repeats", "1"]),
]


def command(b: Benchmark, quick: bool, write: bool) -> List[str]:
    """The command line that runs `b`: its flags for the form asked for, and whether it writes."""
    flags = list(b.quick if quick else b.full)
    if b.name == "dgs":   # writes only when asked, where the others write unless told not to
        flags = [f for f in flags if f != "--write"] + (["--write"] if write else [])
    elif not write:
        flags.append("--no-write")
    return [sys.executable, os.path.join(HERE, b.name + ".py"), *flags]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes; prints only")
    ap.add_argument("--write", action="store_true", help="with --quick: write the tables too")
    ap.add_argument("--only", default="", help="comma-separated names from --list")
    ap.add_argument("--list", action="store_true", help="print the set and each command")
    args = ap.parse_args(argv)
    names = [b.name for b in SET]
    chosen = args.only.split(",") if args.only else names
    unknown = [n for n in chosen if n not in names]
    if unknown:
        ap.error(f"--only: no benchmark {', '.join(unknown)} (the set: {', '.join(names)})")
    write = args.write or not args.quick
    failed = []
    started = time.perf_counter()
    for b in SET:
        if b.name not in chosen:
            continue
        cmd = command(b, args.quick, write)
        shown = " ".join(["python", os.path.relpath(cmd[1])] + cmd[2:])
        if args.list:
            print(f"{b.name:18s} {b.workload}\n{'':18s} {shown}")
            continue
        print(f"\n== {b.name}: {b.workload}\n== {shown}", flush=True)
        t = time.perf_counter()
        rc = subprocess.run(cmd).returncode
        print(f"== {b.name}: exit {rc} after {time.perf_counter() - t:.0f} s", flush=True)
        if rc:
            failed.append(b.name)
    if not args.list:
        print(f"\n{len(chosen) - len(failed)} of {len(chosen)} benchmarks passed in "
              f"{time.perf_counter() - started:.0f} s" + (f"; failed: {', '.join(failed)}"
                                                          if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
