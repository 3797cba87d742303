"""pomset at this checkout against an earlier commit, in one run, on the benchmarks a change to
the shared runtime must not slow: `local_vs_beam`, `columnar`, `spark_streaming`,
`kafka_streaming` and `stateful_vs_beam`, their pomset side only.

`--base` is checked out into a temporary git worktree (removed at the end). Both sides run the
same benchmark scripts, this checkout's, with only `PYTHONPATH` different (the base tree or
this one), each measurement in a fresh process; round 1 runs base then here, round 2 here then
base, and so on, so that a machine's drift slows both alike. The peers (Beam, DuckDB, Polars,
native Spark) are left out: they cost the same on both sides. Measured, per shape: local_vs_beam
and stateful_vs_beam, a pipeline's wall time (their workers'); columnar, one engine's timed run
after its warm-up (its `--worker`, Spark engines included); spark_streaming, the steady
events/s of its micro-batches (`--worker`); kafka_streaming, the sustained events/s of a
throughput run (`--no-latency`). Reported: each side's median, the ratio (here's speed over
base's: 1.00x or more is as fast or faster) and whether the outputs are equal: every run's
result the same on both sides, and passing the benchmark's own check where it has one.

    .venv/bin/python benchmarks/before_after.py --base e0bb2a1              # default shapes
    .venv/bin/python benchmarks/before_after.py --base e0bb2a1 --quick --only columnar
"""
from __future__ import annotations

import argparse
import compileall
import hashlib
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, NamedTuple, Optional

from results import markers, write_block
from run_all import SET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
#: the benchmarks' default shapes, where a pomset-only run takes one shape at a time
LOCAL_SHAPES = "fixed@1,fixed@3,sessions@3"
STATEFUL_KEYS = "1000,10"
STREAMING_SHAPES = "100:2000000:10,10000:2000000:10,10000:2000000:1"
COLUMNAR_ENGINES = ("local-schema", "local-map", "spark-schema", "spark-map")
#: kafka_streaming's flags that size a throughput run (the rest are its latency runs')
KAFKA_FLAGS = ("--users", "--local-events", "--spark-events", "--spark-batch-records")


class Measure(NamedTuple):
    """One shape's figure from one run of one side."""
    shape: str
    value: float     # seconds, or events/s, as the benchmark's `unit` says
    digest: str      # a hash of what the run produced ("" where its check below stands alone)
    ok: bool         # the benchmark's own check of pomset's output


class Failed(RuntimeError):
    pass


def flags(name: str, quick: bool) -> Dict[str, str]:
    """`run_all.py`'s flags for benchmark `name` (its quick ones with `quick`), as a dict."""
    given = next(b for b in SET if b.name == name)
    pairs = given.quick if quick else given.full
    return dict(zip(pairs[::2], pairs[1::2]))


def run(tree: str, script: str, args: List[str]) -> str:
    """Run this checkout's `benchmarks/<script>.py` with `args` in a fresh process on the pomset
    of `tree`; its stdout."""
    cmd = [sys.executable, os.path.join(HERE, script + ".py"), *args]
    proc = subprocess.run(cmd, cwd=tree, env=dict(os.environ, PYTHONPATH=tree),
                          capture_output=True, text=True)
    if proc.returncode:
        raise Failed(f"{script}.py {' '.join(args)} on {tree} exited {proc.returncode}:\n"
                     f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def rows_digest(rows: list) -> str:
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def local_vs_beam(tree: str, quick: bool, scratch: str) -> List[Measure]:
    events = flags("local_vs_beam", quick).get("--events", "200000")
    out = []
    for spec in LOCAL_SHAPES.split(","):
        shape, _, hours = spec.partition("@")
        path = os.path.join(scratch, "local_vs_beam.pkl")
        run(tree, "local_vs_beam", ["--worker", "pomset", "--shape", shape, "--hours", hours,
                                    "--events", events, "--result", path])
        with open(path, "rb") as f:
            r = pickle.load(f)
        out.append(Measure(f"{shape} ({hours} h), {int(events):,} events", r["elapsed"],
                           rows_digest(r["rows"]), True))
    return out


def columnar(tree: str, quick: bool, scratch: str) -> List[Measure]:
    given = flags("columnar", quick)
    rows = given.get("--rows", "10000000")
    out = []
    for shape in given.get("--shape", "a,b,c").split(","):
        for engine in COLUMNAR_ENGINES:
            stdout = run(tree, "columnar", ["--worker", engine, "--shape", shape, "--rows", rows,
                                            "--worker-out", os.path.join(scratch, "columnar"),
                                            "--worker-digest"])
            r = json.loads([ln for ln in stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])
            out.append(Measure(f"{engine}, shape {shape}, {int(rows):,} rows", r["seconds"],
                               r["digest"], True))
    return out


def spark_streaming(tree: str, quick: bool, scratch: str) -> List[Measure]:
    out = []
    for shape in flags("spark_streaming", quick).get("--shapes", STREAMING_SHAPES).split(","):
        path = os.path.join(scratch, "spark_streaming.json")
        run(tree, "spark_streaming", ["--worker", shape, "--result", path])
        with open(path) as f:
            forms = json.load(f)
        keys, events, files = map(int, shape.split(":"))
        for form, r in forms.items():
            out.append(Measure(f"{form}, {keys:,} keys, {events:,} events, {files} files",
                               r["rate"], r["digest"], r["ok"]))
    return out


def kafka_streaming(tree: str, quick: bool, scratch: str) -> List[Measure]:
    given = flags("kafka_streaming", quick)
    path = os.path.join(scratch, "kafka_streaming.json")
    sizes = [a for k in KAFKA_FLAGS if k in given for a in (k, given[k])]
    run(tree, "kafka_streaming", [*sizes, "--no-latency", "--no-write", "--result", path])
    with open(path) as f:
        doc = json.load(f)
    if doc["errors"]:
        raise Failed("kafka_streaming: " + "; ".join(doc["errors"]))
    return [Measure(f"{t['runner']}, {t['users']:,} users, {t['events']:,} events", t["sustained"],
                    "", t["billing_ok"] and t["sessions_ok"]) for t in doc["throughput"]]


def stateful_vs_beam(tree: str, quick: bool, scratch: str) -> List[Measure]:
    events = flags("stateful_vs_beam", quick).get("--events", "100000")
    out = []
    for keys in STATEFUL_KEYS.split(","):
        path = os.path.join(scratch, "stateful.pkl")
        run(tree, "stateful_vs_beam", ["--worker", "pomset", "--events", events, "--keys", keys,
                                       "--result", path])
        with open(path, "rb") as f:
            r = pickle.load(f)
        out.append(Measure(f"{int(keys):,} keys, {int(events):,} events", r["elapsed"],
                           rows_digest(r["rows"]), True))
    return out


class Benchmark(NamedTuple):
    measure: Callable[[str, bool, str], List[Measure]]
    unit: str        # "s" (lower is faster) or "events/s" (higher is faster)
    what: str


BENCHMARKS: Dict[str, Benchmark] = {
    "local_vs_beam": Benchmark(local_vs_beam, "s", "wall time"),
    "columnar": Benchmark(columnar, "s", "wall time"),
    "spark_streaming": Benchmark(spark_streaming, "events/s", "steady events/s"),
    "kafka_streaming": Benchmark(kafka_streaming, "events/s", "sustained events/s"),
    "stateful_vs_beam": Benchmark(stateful_vs_beam, "s", "wall time"),
}


class Row(NamedTuple):
    benchmark: str
    shape: str
    base: Optional[float]
    here: Optional[float]
    equal: bool
    error: str = ""

    def ratio(self) -> Optional[float]:
        """Here's speed over base's."""
        if not self.base or not self.here:
            return None
        unit = BENCHMARKS[self.benchmark].unit
        return self.base / self.here if unit == "s" else self.here / self.base


def compare(name: str, trees: Dict[str, str], rounds: int, quick: bool) -> List[Row]:
    """Run benchmark `name` on both sides `rounds` times, alternating which goes first."""
    bench = BENCHMARKS[name]
    runs: Dict[str, List[List[Measure]]] = {"base": [], "here": []}
    scratch = tempfile.mkdtemp(prefix="pomset-before-after-")
    try:
        for r in range(rounds):
            for side in ("base", "here") if r % 2 == 0 else ("here", "base"):
                started = time.perf_counter()
                runs[side].append(bench.measure(trees[side], quick, scratch))
                print(f"[{name}] round {r + 1}, {side}: "
                      + ", ".join(f"{m.shape}: {m.value:,.2f} {bench.unit}"
                                  for m in runs[side][-1])
                      + f" ({time.perf_counter() - started:.0f} s)", flush=True)
    except Failed as e:
        print(f"[{name}] FAILED: {e}", flush=True)
        return [Row(name, "-", None, None, False, str(e).splitlines()[0])]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rows = []
    for i, m in enumerate(runs["here"][0]):
        each = [run[i] for side in runs.values() for run in side]
        if any(x.shape != m.shape for x in each):
            raise Failed(f"{name}: the two sides measured different shapes at row {i + 1}")
        rows.append(Row(name, m.shape,
                        statistics.median(run[i].value for run in runs["base"]),
                        statistics.median(run[i].value for run in runs["here"]),
                        all(x.ok for x in each) and len({x.digest for x in each}) == 1))
    return rows


def render(rows: List[Row], args: argparse.Namespace, head: str, base: str) -> str:
    """The table: a row per benchmark, a line per shape in each cell (`<br>`)."""
    shown = f"--base {args.base}" + (" --quick" if args.quick else "")
    lines = [f"Measured by `benchmarks/before_after.py {shown} --rounds {args.rounds}` at {head} "
             f"against {base} ({'run_all.py --quick sizes' if args.quick else 'default shapes'}; "
             f"median of {args.rounds} alternated runs of each side, each in a fresh process; "
             f"{os.cpu_count()} cores). Ratio: here's speed over base's.", "",
             "| benchmark | measure | shape | base | here | ratio | outputs equal |",
             "|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r.benchmark for r in rows):
        bench, mine = BENCHMARKS[name], [r for r in rows if r.benchmark == name]
        if mine[0].error:
            lines.append(f"| {name} | {bench.what} | - | - | - | - | FAILED: {mine[0].error} |")
            continue
        fmt = "{:,.2f} s" if bench.unit == "s" else "{:,.0f}"
        cells = [[r.shape for r in mine], [fmt.format(r.base) for r in mine],
                 [fmt.format(r.here) for r in mine], [f"**{r.ratio():.2f}x**" for r in mine],
                 ["yes" if r.equal else "NO" for r in mine]]
        lines.append(f"| {name} | {bench.what} | " + " | ".join("<br>".join(c) for c in cells)
                     + " |")
    return "\n".join(lines)


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", ROOT, *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the commit to compare with")
    ap.add_argument("--only", default=",".join(BENCHMARKS),
                    help="comma-separated, of: " + ", ".join(BENCHMARKS))
    ap.add_argument("--rounds", type=int, default=2, help="runs of each side (median)")
    ap.add_argument("--quick", action="store_true", help="run_all.py's quick sizes")
    ap.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md")
    args = ap.parse_args(argv)
    chosen = [n for n in args.only.split(",") if n]
    unknown = [n for n in chosen if n not in BENCHMARKS]
    if unknown:
        ap.error(f"--only: no benchmark {', '.join(unknown)} (of: {', '.join(BENCHMARKS)})")
    if args.rounds < 1:
        ap.error(f"--rounds: {args.rounds}; at least 1")
    base = git("rev-parse", "--short", args.base)
    head = git("rev-parse", "--short", "HEAD") + ("+changes" if git("status", "--porcelain",
                                                                     "pomset") else "")
    base_tree = tempfile.mkdtemp(prefix="pomset-base-")
    git("worktree", "add", "--detach", "-q", base_tree, args.base)
    started = time.perf_counter()
    rows: List[Row] = []
    try:
        trees = {"base": base_tree, "here": ROOT}
        for tree in trees.values():   # bytecode, as installed from a wheel: no run compiles it
            compileall.compile_dir(os.path.join(tree, "pomset"), quiet=1)
        for name in chosen:
            rows += compare(name, trees, args.rounds, args.quick)
    finally:
        git("worktree", "remove", "--force", base_tree)
    text = render(rows, args, head, base)
    print(text)
    print(f"\n{len(chosen)} benchmarks in {time.perf_counter() - started:.0f} s", flush=True)
    failed = [r for r in rows if r.error or not r.equal]
    if not args.no_write and not failed:
        write_block(*markers("before-after"), text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
