"""A stateful DoFn (bag state and an event-time timer) on pomset's local runner against Apache
Beam's Python DirectRunner, in the same run, on the same input, results checked equal.

The pipeline, written once against Beam's API (`beam` is `apache_beam` or `pomset`):

    Create(events) | Map(to TimestampedValue) | WindowInto(FixedWindows(60))
                   | ParDo(Buffer): per key and window, each value added to a BagState and an
                     event-time timer set at the window's end; the timer's callback emits
                     (key, window start µs, count, sum) of the bag

over N generated events (seeded: `--keys` keys, values 1..99, event times spread over
`--hours`). Shapes: many keys and few values per window (a large output), few keys and many
values per window (a small output). Each measured pipeline runs in a fresh subprocess; the
time is from building the pipeline to holding its rows (imports and input generation
excluded). Beam runs in the interpreter `--beam-python` names (a virtualenv with apache-beam:
its pyarrow pin conflicts with pomset's, so it is not installed beside pomset).

    .venv/bin/python benchmarks/stateful_vs_beam.py --beam-python /path/to/beam-venv/bin/python
    .venv/bin/python benchmarks/stateful_vs_beam.py --profile     # cProfile pomset's side
"""
from __future__ import annotations

import argparse
import os
import pickle
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BEGIN, END = "<!-- stateful:begin -->", "<!-- stateful:end -->"
EPOCH_MS = 1_700_000_000_000
COLLECTED: List[tuple] = []


def make_events(n: int, keys: int, hours: float, seed: int) -> List[tuple]:
    """(key, value, event time µs), seeded; whole milliseconds (Beam keeps time in ms)."""
    rng = random.Random(seed)
    span = int(hours * 3600 * 1000)
    names = [f"k{i:05d}" for i in range(keys)]
    return [(names[rng.randrange(keys)], rng.randrange(1, 100),
             (EPOCH_MS + rng.randrange(span)) * 1000) for _ in range(n)]


def buffer_fn(beam: Any) -> Any:
    """The stateful DoFn, against `beam`'s API."""
    from_userstate = sys.modules[f"{beam.__name__}.transforms.userstate"]
    from_timeutil = sys.modules[f"{beam.__name__}.transforms.timeutil"]
    BagStateSpec, TimerSpec, on_timer = (from_userstate.BagStateSpec, from_userstate.TimerSpec,
                                         from_userstate.on_timer)
    DoFn = beam.DoFn

    class Buffer(DoFn):
        BAG = BagStateSpec("bag", beam.coders.VarIntCoder())
        FLUSH = TimerSpec("flush", from_timeutil.TimeDomain.WATERMARK)

        def process(self, kv, bag=DoFn.StateParam(BAG), flush=DoFn.TimerParam(FLUSH),
                    w=DoFn.WindowParam):
            bag.add(kv[1])
            flush.set(w.end)

        @on_timer(FLUSH)
        def flushed(self, key=DoFn.KeyParam, bag=DoFn.StateParam(BAG), w=DoFn.WindowParam):
            values = list(bag.read())
            yield key, w.start.micros, len(values), sum(values)
    return Buffer()


def run(engine: str, events: List[tuple]) -> List[tuple]:
    if engine == "beam":
        import apache_beam as beam
        import apache_beam.transforms.timeutil  # noqa: F401
        import apache_beam.transforms.userstate  # noqa: F401
        from apache_beam.options.pipeline_options import PipelineOptions
        p = beam.Pipeline(runner="DirectRunner", options=PipelineOptions([]))
    else:
        import pomset as beam
        p = beam.Pipeline(options=beam.PipelineOptions(["--quiet", "--collect=leaves"]))
    rows = (p | beam.Create(events)
            | beam.Map(lambda e: beam.window.TimestampedValue(
                (e[0], e[1]), beam.window.Timestamp(micros=e[2])))
            | beam.WindowInto(beam.window.FixedWindows(60))
            | beam.ParDo(buffer_fn(beam)))
    if engine == "beam":
        sys.path.insert(0, HERE)
        import stateful_vs_beam as mod   # the collector by reference: rows land in this process
        mod.COLLECTED.clear()
        rows | beam.ParDo(_collector(beam, mod))
        p.run().wait_until_finish()
        return list(mod.COLLECTED)
    return [wv.value for wv in p.run().collect(rows)]


def _collector(beam: Any, mod: Any) -> Any:
    class Collect(beam.DoFn):
        def process(self, row):
            mod.COLLECTED.append(row)
    Collect.__module__ = "stateful_vs_beam"
    Collect.__qualname__ = Collect.__name__ = "_Collect"
    mod._Collect = Collect
    return Collect()


def worker(args: argparse.Namespace) -> None:
    import logging
    logging.disable(logging.WARNING)
    if args.worker == "beam":
        import apache_beam.runners.direct.direct_runner  # noqa: F401
        import apache_beam.runners.portability.fn_api_runner  # noqa: F401
    else:
        import pomset.runners.local.runner  # noqa: F401
    events = make_events(args.events, args.keys, args.hours, args.seed)
    started = time.perf_counter()
    rows = run(args.worker, events)
    elapsed = time.perf_counter() - started
    with open(args.result, "wb") as f:
        pickle.dump({"elapsed": elapsed, "rows": sorted(rows)}, f)


def measure(engine: str, n: int, keys: int, args: argparse.Namespace) -> Dict[str, Any]:
    python = args.beam_python if engine == "beam" else sys.executable
    fd, path = tempfile.mkstemp(suffix=".pkl")
    os.close(fd)
    try:
        subprocess.run([python, os.path.abspath(__file__), "--worker", engine, "--events",
                        str(n), "--keys", str(keys), "--hours", str(args.hours), "--seed",
                        str(args.seed), "--result", path], check=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT))
        with open(path, "rb") as f:
            out = pickle.load(f)
    finally:
        os.unlink(path)
    out["rate"] = n / out["elapsed"]
    return out


def median_of(engine: str, n: int, keys: int, repeat: int, args: argparse.Namespace) -> Dict[str, Any]:
    runs = sorted((measure(engine, n, keys, args) for _ in range(repeat)),
                  key=lambda r: r["elapsed"])
    out = runs[len(runs) // 2]
    out["times"] = [r["elapsed"] for r in runs]
    return out


def profile(args: argparse.Namespace) -> None:
    import cProfile
    import pstats
    events = make_events(args.events, 1000, args.hours, args.seed)
    prof = cProfile.Profile()
    prof.enable()
    rows = run("pomset", events)
    prof.disable()
    print(f"{len(rows):,} rows from {args.events:,} events")
    pstats.Stats(prof).strip_dirs().sort_stats("tottime").print_stats(args.top)


def render(rows: List[Dict[str, Any]], args: argparse.Namespace, beam_version: str) -> str:
    lines = [
        f"Measured by `benchmarks/stateful_vs_beam.py` "
        f"({os.cpu_count()} cores; event times over {args.hours:g} h, seed {args.seed}; "
        f"medians of {args.repeat} runs each, every run in a fresh process; apache-beam "
        f"{beam_version}, DirectRunner, default options, in its own virtualenv; pomset's "
        f"local runner, `--quiet --collect=leaves`).",
        "",
        "| shape | events | output rows | pomset | pomset events/s | Beam | Beam events/s | "
        "ratio | results match |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['shape']} | {r['events']:,} | {r['rows']:,} | {r['pomset']['elapsed']:.2f} s | "
            f"{r['pomset']['rate']:,.0f} | {r['beam']['elapsed']:.2f} s | "
            f"{r['beam']['rate']:,.0f} | **{r['pomset']['rate'] / r['beam']['rate']:.1f}x** | "
            f"{'yes' if r['match'] else 'NO'} |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--shapes", default="1000,10",
                    help="key counts, comma-separated: many keys (a large output), few (small)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--beam-python", default=sys.executable,
                    help="the Python of a virtualenv with apache-beam")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--profile", action="store_true", help="cProfile pomset's side only")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--worker", choices=("pomset", "beam"), help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.profile:
        return profile(args)
    rows = []
    for keys in map(int, args.shapes.split(",")):
        shape = f"{keys:,} keys"
        pmr = median_of("pomset", args.events, keys, args.repeat, args)
        bmr = median_of("beam", args.events, keys, args.repeat, args)
        match = pmr["rows"] == bmr["rows"]
        print(f"[{shape}] pomset {pmr['rate']:,.0f} events/s {pmr['times']}, Beam "
              f"{bmr['rate']:,.0f} events/s {bmr['times']}, match: {match}", flush=True)
        if not match:
            a, b = Counter(pmr["rows"]), Counter(bmr["rows"])
            print(f"  only pomset: {list((a - b).elements())[:3]}, only Beam: "
                  f"{list((b - a).elements())[:3]}")
        rows.append({"shape": shape, "events": args.events, "rows": len(bmr["rows"]),
                     "pomset": pmr, "beam": bmr, "match": match})
    version = subprocess.run([args.beam_python, "-c", "import apache_beam; "
                              "print(apache_beam.__version__)"], capture_output=True,
                             text=True).stdout.strip() or "?"
    text = render(rows, args, version)
    print(text)
    if not args.no_write:
        from results import write_block   # not in the measured workers' imports
        write_block(BEGIN, END, text)
    if not all(r["match"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
