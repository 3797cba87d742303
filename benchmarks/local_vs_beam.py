"""pomset's local runner against Apache Beam's Python DirectRunner, in the same run.

The same windowed sum-per-key pipeline runs on both:

    Create(events) | Map(to TimestampedValue) | WindowInto(W) | CombinePerKey(sum)
                   | Map(to (key, window start µs, window end µs, sum))

with W = FixedWindows(60) ("fixed") and W = Sessions(gap) ("sessions"), over N generated events
(seeded random: 1,000 keys, values 1..99, event times spread over a few hours). Both read an
in-memory Create of plain tuples and turn them into TimestampedValues in a Map, so both do the
same work per element; both end with the same formatting Map (using the window parameter) and
keep the rows in memory (pomset's recorded leaf, a collecting DoFn on Beam).

Every measured pipeline runs in a fresh subprocess, so its peak memory is that process's peak
resident set size (VmHWM from /proc/self/status: the whole process, i.e. interpreter, imports,
input list and the run; not `ru_maxrss`, which Linux carries over from the parent across
fork and exec); the baseline before the pipeline is built (after imports and input
generation) is reported beside it.
Wall time is from building the pipeline to having its rows in hand. Results must be the
same multiset of (key, window_start, window_end, sum) on both.

    .venv/bin/python benchmarks/local_vs_beam.py                 # or: make bench
    .venv/bin/python benchmarks/local_vs_beam.py --events 50000 --no-write
    .venv/bin/python benchmarks/local_vs_beam.py --profile fixed  # cProfile pomset only
"""
from __future__ import annotations

import argparse
import os
import pickle
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
EPOCH_S = 1_700_000_000   # event times start here (an aligned minute, so windows are round)


# --- input -----------------------------------------------------------------------------------

def make_events(n: int, keys: int, hours: float, seed: int) -> List[tuple]:
    """(key, value, event time µs) tuples, seeded. Event times are whole milliseconds:
    Beam's coders keep windows and timestamps in ms, so finer times would not round-trip."""
    rng = random.Random(seed)
    span_ms = int(hours * 3600 * 1000)
    base_ms = EPOCH_S * 1000
    names = [f"k{i:04d}" for i in range(keys)]
    return [(names[rng.randrange(keys)], rng.randrange(1, 100), (base_ms + rng.randrange(span_ms)) * 1000)
            for _ in range(n)]


# --- the two pipelines -------------------------------------------------------------------------

def run_pomset(events: List[tuple], shape: str, gap: float, flags: tuple = ()) -> List[tuple]:
    import pomset as pm
    wf = pm.FixedWindows(60) if shape == "fixed" else pm.Sessions(gap)
    p = pm.Pipeline(runner="local",
                    options=pm.PipelineOptions(["--quiet", "--collect=leaves", *flags]))
    rows = (p
            | pm.Create(events)
            | pm.Map(lambda e: pm.TimestampedValue((e[0], e[1]), pm.Timestamp(micros=e[2])))
            | pm.WindowInto(wf)
            | pm.CombinePerKey(sum)
            | pm.Map(lambda kv, w=pm.DoFn.WindowParam: (kv[0], w.start.micros, w.end.micros, kv[1])))
    result = p.run()
    return [wv.value for wv in result.collect(rows)]


BEAM_ROWS: List[tuple] = []
_BeamCollect: Any = None


def _install_beam_collector() -> None:
    """Define a DoFn appending to this module's BEAM_ROWS. Beam pickles DoFns; a class found
    by module and name is pickled by reference, so when this runs in the importable module
    `local_vs_beam` the rows land in this process's list (the DirectRunner runs bundles in
    this process by default)."""
    global _BeamCollect
    if _BeamCollect is not None:
        return
    import apache_beam as beam

    class _Collect(beam.DoFn):
        def process(self, row):
            BEAM_ROWS.append(row)
    _Collect.__qualname__ = _Collect.__name__ = "_BeamCollect"
    _BeamCollect = _Collect


def run_beam(events: List[tuple], shape: str, gap: float) -> List[tuple]:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.transforms import window
    from apache_beam.utils.timestamp import Timestamp
    sys.path.insert(0, HERE)
    import local_vs_beam as mod   # this file as an importable module (see _install_beam_collector)
    mod._install_beam_collector()
    mod.BEAM_ROWS.clear()
    wf = window.FixedWindows(60) if shape == "fixed" else window.Sessions(gap)
    p = beam.Pipeline(runner="DirectRunner", options=PipelineOptions([]))
    _ = (p
         | beam.Create(events)
         | beam.Map(lambda e: window.TimestampedValue((e[0], e[1]), Timestamp(micros=e[2])))
         | beam.WindowInto(wf)
         | beam.CombinePerKey(sum)
         | beam.Map(lambda kv, w=beam.DoFn.WindowParam: (kv[0], w.start.micros, w.end.micros, kv[1]))
         | beam.ParDo(mod._BeamCollect()))
    p.run().wait_until_finish()
    rows = list(mod.BEAM_ROWS)
    mod.BEAM_ROWS.clear()
    return rows


# --- one measured run, in its own process ------------------------------------------------------

def peak_rss_kb() -> int:
    """This process's peak resident set size in KiB: VmHWM, which starts afresh at exec (unlike
    ru_maxrss, inherited from the parent on Linux); ru_maxrss where /proc is missing."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def worker(args: argparse.Namespace) -> None:
    import logging
    logging.disable(logging.WARNING)   # Beam's import-time apitools warning
    # Imports stay out of the measured time, including the runner modules each engine would
    # otherwise load on its first run (Beam: ~0.1 s, pomset: ~15 ms).
    if args.worker == "beam":
        import apache_beam  # noqa: F401
        import apache_beam.runners.direct.direct_runner  # noqa: F401
        import apache_beam.runners.portability.fn_api_runner  # noqa: F401
        import apache_beam.runners.portability.prism_runner  # noqa: F401
        run = run_beam
    else:
        import pomset  # noqa: F401
        import pomset.runners.local.runner  # noqa: F401
        run = run_pomset
    events = make_events(args.events, args.keys, args.hours, args.seed)
    if args.gc_gen0:   # an experiment, applied the same way to both engines
        import gc
        gc.set_threshold(args.gc_gen0, *gc.get_threshold()[1:])
    base_kb = peak_rss_kb()
    started = time.perf_counter()
    rows = run(events, args.shape, args.gap)
    elapsed = time.perf_counter() - started
    peak_kb = peak_rss_kb()
    with open(args.result, "wb") as f:
        pickle.dump({"elapsed": elapsed, "peak_kb": peak_kb, "base_kb": base_kb,
                     "rows": sorted(rows)}, f)


def measure(engine: str, shape: str, n: int, args: argparse.Namespace,
            hours: Optional[float] = None) -> Dict[str, Any]:
    fd, path = tempfile.mkstemp(suffix=".pkl", prefix=f"bench-{engine}-")
    os.close(fd)
    try:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", engine, "--shape", shape,
               "--events", str(n), "--keys", str(args.keys),
               "--hours", str(args.hours if hours is None else hours),
               "--gap", str(args.gap), "--seed", str(args.seed), "--result", path]
        if args.gc_gen0:
            cmd += ["--gc-gen0", str(args.gc_gen0)]
        subprocess.run(cmd, check=True, cwd=ROOT)
        with open(path, "rb") as f:
            out = pickle.load(f)
    finally:
        os.unlink(path)
    out["events"] = n
    out["rate"] = n / out["elapsed"]
    return out


def measure_best(engine: str, shape: str, n: int, repeat: int, args: argparse.Namespace,
                 hours: Optional[float] = None) -> Dict[str, Any]:
    """`repeat` runs, each in a fresh process; the median time, its run's other figures."""
    runs = [measure(engine, shape, n, args, hours) for _ in range(repeat)]
    runs.sort(key=lambda r: r["elapsed"])
    out = runs[len(runs) // 2]
    out["times"] = [r["elapsed"] for r in runs]
    out["peak_kb"] = max(r["peak_kb"] for r in runs)
    return out


def first_difference(a: List[tuple], b: List[tuple]) -> str:
    ca, cb = Counter(a), Counter(b)
    only_a, only_b = list((ca - cb).elements()), list((cb - ca).elements())
    return (f"{len(only_a)} rows only in pomset (e.g. {only_a[:3]}), "
            f"{len(only_b)} only in Beam (e.g. {only_b[:3]})")


# --- report -----------------------------------------------------------------------------------

def machine() -> Dict[str, str]:
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        from importlib.metadata import version
        beam_version = version("apache-beam")
    except Exception:
        beam_version = "?"
    import pomset
    return {"cores": str(os.cpu_count()), "cpu": model, "python": platform.python_version(),
            "beam": beam_version, "pomset": getattr(pomset, "__version__", "?"),
            "os": f"{platform.system()} {platform.release()}"}


def mb(kb: int) -> str:
    return f"{kb / 1024:.0f} MB"


def render(rows: List[Dict[str, Any]], args: argparse.Namespace, m: Dict[str, str]) -> str:
    lines = [
        f"Measured by `benchmarks/local_vs_beam.py` "
        f"(`--events {args.events}`"
        + (f" `--beam-events {args.beam_events}`" if args.beam_events != args.events else "")
        + (f" `--gc-gen0 {args.gc_gen0}`" if args.gc_gen0 else "")
        + f", {args.keys} keys, event times over the hours in each row, sessions gap {args.gap:g} s, "
        f"seed {args.seed}; pomset: median of {args.repeat} runs, Beam: median of "
        f"{args.beam_repeat}).",
        "",
        f"Machine: {m['cores']} cores ({m['cpu']}), {m['os']}, Python {m['python']}, "
        f"apache-beam {m['beam']} (DirectRunner, default options), pomset {m['pomset']} "
        f"(local runner, `--quiet --collect=leaves`).",
        "",
        "| shape (event-time span) | events per output row | events (pomset / Beam) | pomset time | "
        "pomset events/s | Beam time | Beam events/s | ratio | peak RSS pomset (baseline) | "
        "peak RSS Beam (baseline) | results match |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        pmr, bmr = r["pomset"], r["beam"]
        lines.append(
            f"| {r['shape']} | {r['per_window']:.1f} | {pmr['events']:,} / {bmr['events']:,} | "
            f"{pmr['elapsed']:.2f} s | "
            f"{pmr['rate']:,.0f} | {bmr['elapsed']:.1f} s | {bmr['rate']:,.0f} | "
            f"**{r['ratio']:.1f}x** | {mb(pmr['peak_kb'])} ({mb(pmr['base_kb'])}) | "
            f"{mb(bmr['peak_kb'])} ({mb(bmr['base_kb'])}) | "
            f"{'yes' if r['match'] else 'NO'} ({r['n_rows']:,} rows) |")
    lines += [
        "",
        "- *events/s* = events / wall time from building the pipeline to holding its result rows "
        "(input generation and imports, including the runner modules each engine loads on first use, excluded); *ratio* = pomset events/s ÷ Beam events/s.",
        "- *peak RSS* = peak resident set size (VmHWM) of the subprocess that ran that one "
        "pipeline (interpreter, imports, the input list and the run); *baseline* = the same just "
        "before the pipeline was built, so peak − baseline is what the run itself added.",
        "- *results match*: the multisets of (key, window start, window end, sum) are equal"
        + (f" (checked at {rows[0]['beam']['events']:,} events, where both ran)."
           if args.beam_events != args.events else "."),
    ]
    if args.beam_events != args.events:
        lines.append(f"- Beam ran on {args.beam_events:,} events (it is slow here); pomset's "
                     f"figures are at {args.events:,}. Each rate is at its own N.")
    return "\n".join(lines)


def profile(args: argparse.Namespace) -> None:
    import cProfile
    import pstats
    events = make_events(args.events, args.keys, args.hours, args.seed)
    prof = cProfile.Profile()
    started = time.perf_counter()
    prof.enable()
    rows = run_pomset(events, args.profile, args.gap)
    prof.disable()
    print(f"pomset {args.profile}: {len(rows):,} rows from {args.events:,} events in "
          f"{time.perf_counter() - started:.2f}s under cProfile")
    stats = pstats.Stats(prof).strip_dirs()
    stats.sort_stats("tottime").print_stats(args.top)


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=200_000, help="events for pomset (default 200000)")
    ap.add_argument("--beam-events", type=int, default=None,
                    help="events for Beam (default: same as --events; pomset also runs at this N "
                         "for the result check when it differs)")
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--hours", type=float, default=3.0, help="event times spread over this span")
    ap.add_argument("--gap", type=float, default=60.0, help="Sessions gap in seconds")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--shapes", default="fixed@1,fixed@3,sessions@3",
                    help="cases, comma-separated: fixed or sessions, each optionally @HOURS of "
                         "event time (default --hours); fewer hours, more events per window")
    ap.add_argument("--repeat", type=int, default=3, help="pomset runs per shape (median)")
    ap.add_argument("--beam-repeat", type=int, default=3, help="Beam runs per shape (median)")
    ap.add_argument("--gc-gen0", type=int, default=0,
                    help="experiment: set Python's generation-0 GC threshold (default 700) in "
                         "both engines' processes before the run")
    ap.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md")
    ap.add_argument("--profile", choices=("fixed", "sessions"), help="cProfile pomset on one shape")
    ap.add_argument("--top", type=int, default=30, help="functions to show with --profile")
    ap.add_argument("--worker", choices=("pomset", "beam"), help=argparse.SUPPRESS)
    ap.add_argument("--shape", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.beam_events is None:
        args.beam_events = args.events
    if args.worker:
        return worker(args)
    if args.profile:
        return profile(args)

    rows = []
    for case in args.shapes.split(","):
        shape, _, span = case.partition("@")
        hours = float(span) if span else args.hours
        label = f"{shape} ({hours:g} h)"
        print(f"[{label}] pomset, {args.events:,} events x{args.repeat} ...", flush=True)
        pmr = measure_best("pomset", shape, args.events, args.repeat, args, hours)
        print(f"[{label}]   {pmr['rate']:,.0f} events/s (times {', '.join(f'{t:.2f}s' for t in pmr['times'])})",
              flush=True)
        print(f"[{label}] Beam DirectRunner, {args.beam_events:,} events x{args.beam_repeat} ...", flush=True)
        bmr = measure_best("beam", shape, args.beam_events, args.beam_repeat, args, hours)
        print(f"[{label}]   {bmr['rate']:,.0f} events/s (times {', '.join(f'{t:.1f}s' for t in bmr['times'])})",
              flush=True)
        same_n = pmr if args.beam_events == args.events else measure("pomset", shape, args.beam_events, args, hours)
        match = same_n["rows"] == bmr["rows"]
        if not match:
            print(f"[{label}]   RESULTS DIFFER: {first_difference(same_n['rows'], bmr['rows'])}", flush=True)
        rows.append({"shape": label, "pomset": pmr, "beam": bmr, "ratio": pmr["rate"] / bmr["rate"],
                     "match": match, "n_rows": len(bmr["rows"]),
                     "per_window": args.events / len(bmr["rows"])})

    m = machine()
    print()
    print(f"{'shape':16} {'pomset ev/s':>12} {'Beam ev/s':>10} {'ratio':>7} {'pomset MB':>10} "
          f"{'Beam MB':>8}  match")
    for r in rows:
        print(f"{r['shape']:16} {r['pomset']['rate']:12,.0f} {r['beam']['rate']:10,.0f} "
              f"{r['ratio']:6.1f}x {r['pomset']['peak_kb'] / 1024:10.0f} {r['beam']['peak_kb'] / 1024:8.0f}  "
              f"{'yes' if r['match'] else 'NO'}")
    if not args.no_write:
        from results import write_block   # not in the measured workers' imports
        print(f"\nwrote {', '.join(write_block(BEGIN, END, render(rows, args, m)))}")
    if not all(r["match"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
