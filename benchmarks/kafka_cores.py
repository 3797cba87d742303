"""Spark's throughput on the video-sessions pipeline from Kafka by the cores it has.

The throughput run of `kafka_streaming` (its flags at their defaults: `--spark_master=local[2]`,
two shuffle partitions, micro-batches of up to 50,000 events), with the whole run (the
embedded broker, the pipeline, its JVM and Python workers) confined to one core and to two by
`os.sched_setaffinity`, which every process it starts inherits; the two alternated, round after
round. Beside them, in the same run, a calibration: independent work in 1 and in 2 processes
(`ordered_parallel.calibration`), which says what a second core gives on this host at most.
Every run checks its netted outputs against the batch answer, as `kafka_streaming` does.

How the rate follows the cores, with the pipeline's flags unchanged, is the basis for what a
machine with more cores would give; a 2-core host cannot measure that itself.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kafka_streaming as ks  # noqa: E402
from ordered_parallel import calibration  # noqa: E402
from results import compile_bytecode, write_block, write_plot  # noqa: E402

BEGIN, END = "<!-- kafka-cores-results:begin -->", "<!-- kafka-cores-results:end -->"
SPIN = 20_000_000   # calibration iterations per process, about a second here


@contextmanager
def pinned(cpus: List[int]) -> Iterator[None]:
    """This process, and every process it starts meanwhile, on `cpus` only."""
    everything = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, everything)


def run_on(cpus: List[int], shape: argparse.Namespace, events: int) -> Dict[str, Any]:
    """One Spark throughput run with the broker and the pipeline on `cpus`."""
    from pomset.broker import EmbeddedKafka
    with pinned(cpus), EmbeddedKafka() as broker:
        out = ks.throughput("spark", broker.bootstrap_servers, events, shape, broker.process.pid)
    out["cores"] = len(cpus)
    return out


def calibrated(cpus: List[int]) -> Dict[int, float]:
    """Seconds for k = 1 and 2 processes each doing the same independent work at once on
    `cpus` (median of three)."""
    with pinned(cpus):
        return {k: statistics.median(calibration(k, SPIN) for _ in range(3)) for k in (1, 2)}


def report(args: argparse.Namespace, shape: argparse.Namespace, runs: List[Dict[str, Any]],
           calibrations: List[Dict[int, float]]) -> str:
    """The block for BENCHMARKS.md: each run's rate and CPU, the calibrations, the ratio."""
    lines = [
        f"Measured by `benchmarks/kafka_cores.py` "
        f"(`{' '.join(a for a in sys.argv[1:] if a != '--no-write') or 'defaults'}`): the Spark "
        f"throughput run of `kafka_streaming` ({shape.users:,} users, {args.events:,} events, "
        f"micro-batches of up to {shape.spark_batch_records:,}, `--spark_master=local[2]`, two "
        f"shuffle partitions), the whole run (broker, pipeline, JVM, Python workers) confined to "
        f"the cores shown; {args.rounds} rounds, the two alternated. CPU over the sustained "
        f"part, in cores and CPU µs per event.",
        "",
        "| round | cores | events/s sustained | pipeline: JVM | Python workers | broker | in all | billing = batch | sessions = batch |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        c, rate = r["cpu"], r["sustained"]
        cells = (" | ".join(f"{v:.2f} ({v * 1e6 / rate:.0f} µs)" for v in
                            (c["jvm"], c["python workers"], c["broker"], sum(c.values())))
                 if c else "- | - | - | -")   # a run too short for two CPU snapshots
        lines.append(f"| {r['round']} | {r['cores']} | **{rate:,.0f}** | {cells} | "
                     f"{'yes' if r['billing_ok'] else 'NO'} | {'yes' if r['sessions_ok'] else 'NO'} |")
    one = statistics.median(r["sustained"] for r in runs if r["cores"] == 1)
    two = statistics.median(r["sustained"] for r in runs if r["cores"] == 2)
    calib = [c[1] * 2 / c[2] for c in calibrations]
    lines += [
        "",
        "Calibration in each round (`ordered_parallel.calibration`: k processes each spinning "
        f"{SPIN:,} iterations at once on the same two cores, median of three): "
        + "; ".join(f"1 process {c[1]:.2f} s, 2 processes {c[2]:.2f} s" for c in calibrations)
        + f", so two cores did {', '.join(f'{x:.2f}x' for x in calib)} the work of one.",
        "",
        f"Spark's sustained rate on two cores over one: **{two / one:.2f}x** "
        f"(medians {two:,.0f} and {one:,.0f} events/s), against the calibration's "
        f"{statistics.median(calib):.2f}x.",
    ]
    return "\n".join(lines)


def cores_plot(runs: List[Dict[str, Any]], calibrations: List[Dict[int, float]]) -> Dict[str, Any]:
    """Sustained events/s by cores (each run a point, the medians a curve) beside what the
    calibration says two cores give independent work."""
    one = statistics.median(r["sustained"] for r in runs if r["cores"] == 1)
    calib = statistics.median(c[1] * 2 / c[2] for c in calibrations)
    medians = [[n, statistics.median(r["sustained"] for r in runs if r["cores"] == n)]
               for n in (1, 2)]
    return {"title": "Kafka end to end on Spark (10,000 users): throughput by cores",
            "xlabel": "cores", "ylabel": "events/s sustained",
            "series": {"pomset on Spark (median)": medians,
                       "one core's rate x the calibration": [[1, one], [2, one * calib]]},
            "note": "benchmarks/kafka_cores.py: the whole run confined to the cores shown"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=10_000)
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))[:2]
    if len(cpus) < 2:
        sys.exit("this benchmark needs two cores")
    shape = ks.parser().parse_args([])
    shape.users = args.users
    compile_bytecode()
    runs: List[Dict[str, Any]] = []
    calibrations: List[Dict[int, float]] = []
    for r in range(1, args.rounds + 1):
        calibrations.append(calibrated(cpus))
        for n in ((2, 1) if r % 2 else (1, 2)):
            out = run_on(cpus[:n], shape, args.events)
            out["round"] = r
            runs.append(out)
    text = report(args, shape, runs, calibrations)
    print()
    print(text)
    wrong = [f"round {r['round']} on {r['cores']} core(s)" for r in runs
             if not (r["billing_ok"] and r["sessions_ok"])]
    if wrong:
        sys.exit("FAILED: the netted outputs differ from the batch answer in " + ", ".join(wrong))
    if not args.no_write:
        write_block(BEGIN, END, text)
        write_plot("kafka_cores", cores_plot(runs, calibrations))


if __name__ == "__main__":
    main()
