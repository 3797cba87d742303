"""The local runner's ordered-parallel executor: speed-up over its workers, with a calibration.

Every figure is a ratio against one worker, measured in the same run, beside a calibration:
the same independent CPU-bound Python work in k processes at once against one (what this
machine gives k processes when nothing is shared; on a shared or throttled machine it is
below k, and no pipeline can beat it).

- **python**: a CPU-bound Python ParDo, `--worker_mode=processes`. A real text file of N lines
  `key,value` is read (`ReadFromText`), each line parsed and scored by a pure-Python loop,
  then summed per key (`CombinePerKey(Sum)`). *light*: 300 rounds (about 20 µs a line), with
  16 keys and with 50,000 keys; *heavy*: 3,000 rounds over a quarter of the lines. Reading and
  the grouping run serially (the driver, and the thread that releases units).
- **numpy**: a batched DoFn, `--worker_mode=threads`: numbers read from a text file, parsed by
  a `Map`, then a `process_batch` over numpy arrays (each number's sum of sin(k x) over K
  values of k, vectorized: numpy releases the GIL) and a global sum; K = 200 (light) and
  K = 2,000 (heavy).
- **python grouping**: the grouping itself Python-bound, `--worker_mode=processes`: lines
  parsed by a `Map`, then `CombinePerKey` of a CombineFn whose `add_input` runs 600 rounds of
  Python (about 30 µs a value), 16 keys and 50,000 keys. The grouping is partitioned: each
  worker process owns its buckets of keys and folds their values.
- **template**: a typed deployment, `--worker_mode=processes`: an `OpKeyedOrdered` of 4
  instances over 64 keys whose `on_item` runs 600 rounds of Python, after parsing lines into
  `(key, value)` items; the instances run in the worker processes (instance i in process
  i % k).
- **skew**: the paper's Figs. 9-10, a partitioned grouping's buckets run by k threads through
  the hybrid queue or through the partitioned baseline (bucket b on thread b % k), keys drawn
  from a Zipf law over 64 keys (s = 0 is uniform; at s = 2 one key has 61% of the values);
  each value costs a SHA-256 of 64 KB in the CombineFn (GIL-free). Values per second.
- **reorder**: the paper's Fig. 12: k threads run units of GIL-free work (SHA-256 of 32 KB)
  taken in serial order from a shared worklist and send their outputs through the
  non-blocking reorder buffer or the lock-based one; downstream does a few µs of Python per
  output. Units per second, and the ratio of the two.

Each pipeline's results at k workers must equal its results at one (exactly: the executor's
output is the sequential executor's), or the run fails.

    .venv/bin/python benchmarks/ordered_parallel.py                  # 1 and 2 workers; writes
    .venv/bin/python benchmarks/ordered_parallel.py --workers 1,2,4,8,16 --no-write
    .venv/bin/python benchmarks/ordered_parallel.py --profile numpy   # cProfile, 2 workers
"""
from __future__ import annotations

import argparse
import cProfile
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import platform
import pstats
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import pomset as pm  # noqa: E402
from pomset.runners.local.lanes import ThreadLanes  # noqa: E402
from pomset.runtime.kernel_host import KernelHost  # noqa: E402
from pomset.runtime.ordered import LockedReorder, NonBlockingReorder  # noqa: E402
from pomset.runtime.partitioned import PartitionedHost, new_buckets  # noqa: E402
from pomset.triggers.reducers import CombineReducer  # noqa: E402
from pomset.triggers.strategy import WindowingStrategy  # noqa: E402
from pomset.windowing import GLOBAL_WINDOW, MAX_MICROS, NO_FIRING, WindowedValue  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from pomset.sdk.options import usable_cores  # noqa: E402
from results import markers, write_block, write_plot  # noqa: E402
import local_vs_beam  # noqa: E402

BEGIN, END = "<!-- ordered-parallel-results:begin -->", "<!-- ordered-parallel-results:end -->"
SUMMARY = "ordered-parallel-summary"


# --- calibration ---------------------------------------------------------------------------------

def _spin(n: int) -> int:
    s = 0
    for i in range(n):
        s += (i * i) % 7
    return s


def _spin_in(n: int, ready: Any, go: Any) -> None:
    ready.release()
    go.wait()
    _spin(n)


def calibration(k: int, n: int) -> float:
    """Seconds for k processes each spinning n iterations at once."""
    ctx = multiprocessing.get_context("fork")
    ready, go = ctx.Semaphore(0), ctx.Event()
    procs = [ctx.Process(target=_spin_in, args=(n, ready, go)) for _ in range(k)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire()
    t = time.perf_counter()
    go.set()
    for p in procs:
        p.join()
    return time.perf_counter() - t


# --- pipelines -----------------------------------------------------------------------------------

def scorer(rounds: int) -> Callable[[str], tuple]:
    """Parse `key,value` and score it with a deliberately Python-bound loop of `rounds`."""
    def score(line: str) -> tuple:
        key, value = line.split(",")
        v = int(value)
        s = 0
        for i in range(rounds):
            s = (s * 31 + v + i) % 1_000_003
        return key, s
    return score


def python_pipeline(path: str, rounds: int, flags: List[str]) -> Callable[[], Any]:
    def run() -> Any:
        p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", *flags]))
        out = (p | pm.ReadFromText(path) | "score" >> pm.Map(scorer(rounds))
               | pm.CombinePerKey(pm.Sum()))
        return sorted(wv.value for wv in p.run().collect(out))
    return run


class SinSum(pm.DoFn):
    """Each number's sum of sin(k x), k = 1..K, over a whole batch at once."""

    def __init__(self, k: int) -> None:
        self.ks = np.arange(1, k + 1, dtype=np.float64)

    def process_batch(self, batch: np.ndarray) -> np.ndarray:
        return np.sin(np.multiply.outer(batch, self.ks)).sum(axis=1)


def numpy_pipeline(path: str, k: int, flags: List[str]) -> Callable[[], Any]:
    def run() -> Any:
        p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", *flags]))
        out = (p | pm.ReadFromText(path) | "parse" >> pm.Map(float)
               | "sin sum" >> pm.ParDo(SinSum(k)) | pm.CombineGlobally(pm.Sum()))
        return [wv.value for wv in p.run().collect(out)]
    return run


class Scored(pm.CombineFn):
    """Per key: how many values, and the sum of a Python-bound score of each."""

    def create_accumulator(self) -> tuple:
        return 0, 0

    def add_input(self, acc: tuple, value: int) -> tuple:
        s = 0
        for i in range(600):
            s = (s * 31 + value + i) % 1_000_003
        return acc[0] + 1, acc[1] + s

    def merge_accumulators(self, accs: Any) -> tuple:
        accs = list(accs)
        return sum(a[0] for a in accs), sum(a[1] for a in accs)

    def extract_output(self, acc: tuple) -> tuple:
        return acc


def grouping_pipeline(path: str, flags: List[str]) -> Callable[[], Any]:
    def run() -> Any:
        p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", *flags]))
        out = (p | pm.ReadFromText(path)
               | "parse" >> pm.Map(lambda line: (line.split(",")[0], int(line.split(",")[1])))
               | pm.CombinePerKey(Scored()))
        return sorted(wv.value for wv in p.run().collect(out))
    return run


def _ordered_score(state: Any, key: int, value: int, emit: Callable[[Any, Any], None]) -> int:
    s = state or 0
    for i in range(600):
        s = (s * 31 + value + i) % 1_000_003
    emit(key, s)
    return s


def template_pipeline(path: str, flags: List[str]) -> Callable[[], Any]:
    def run() -> Any:
        p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", *flags]))
        items = (p | pm.ReadFromText(path)
                 | "parse" >> pm.Map(lambda line: pm.TimestampedValue(
                     (int(line.split(",")[0][1:]) % 64, int(line.split(",")[1])), 0))
                 | pm.Typed(pm.O(int, int), period=1))
        out = items | "score" >> pm.OpKeyedOrdered(initial_state=lambda: None,
                                                   on_item=_ordered_score, parallelism=4)
        return sorted(wv.value for wv in p.run().collect(out))
    return run


def timed(run: Callable[[], Any], repeats: int) -> tuple:
    """(best seconds of `repeats`, the result)."""
    best, result = math.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - t)
    return best, result


# --- reorder buffers (Fig. 12) ------------------------------------------------------------------

def reorder_rate(kind: str, threads: int, units: int) -> float:
    """Units per second through `threads` workers and the reorder buffer `kind`."""
    block = os.urandom(32 * 1024)
    out: List[int] = []

    def downstream(o: int) -> None:
        x = o
        for _ in range(20):
            x = (x * 7 + 3) % 1_000_003
        out.append(o)

    size = 4 * threads
    buf = (NonBlockingReorder(size, downstream) if kind == "non-blocking"
           else LockedReorder(downstream))
    serials = itertools.count(1)
    take = threading.Lock()

    def worker() -> None:
        while True:
            with take:
                n = next(serials)
            if n > units:
                return
            hashlib.sha256(block).digest()
            while not buf.send(n, n):
                time.sleep(0)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    t = time.perf_counter()
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    elapsed = time.perf_counter() - t
    assert out == list(range(1, units + 1)), "the reorder buffer broke the order"
    return units / elapsed


# --- partitioned groupings under key skew (Figs. 9-10) ---------------------------------------

_BLOCK = os.urandom(64 * 1024)


class Digested(pm.CombineFn):
    """A sum of one byte of a SHA-256 of 64 KB per value: hashing releases the GIL."""

    def create_accumulator(self) -> int:
        return 0

    def add_input(self, acc: int, value: int) -> int:
        return acc + hashlib.sha256(_BLOCK).digest()[value % 32]

    def merge_accumulators(self, accs: Any) -> int:
        return sum(accs)

    def extract_output(self, acc: int) -> int:
        return acc


def zipf_keys(s: float, keys: int, n: int) -> List[int]:
    rng = np.random.default_rng(11)
    weights = 1.0 / np.arange(1, keys + 1) ** s
    return list(rng.choice(keys, n, p=weights / weights.sum()))


def skew_rate(kind: str, threads: int, keys: List[int], bundle: int) -> tuple:
    """(values per second, panes) through one grouping: one host (`kind` "one"), or
    4 x `threads` buckets run through the hybrid queue or the partitioned baseline."""
    def new() -> KernelHost:
        return KernelHost(WindowingStrategy(), CombineReducer(Digested()), "skew")

    pool = None
    if kind == "one":
        host: Any = new()
    else:
        pool = ThreadPoolExecutor(threads)
        host = PartitionedHost(4 * threads, ThreadLanes(new_buckets(new, 4 * threads), threads,
                                                        pool.submit, kind))
    elements = [WindowedValue.raw((k, i), 0, GLOBAL_WINDOW, NO_FIRING, 1)
                for i, k in enumerate(keys)]
    out: list = []
    t = time.perf_counter()
    for i in range(0, len(elements), bundle):
        host.elements(elements[i:i + bundle], out)
        host.end_step()
    host.watermark(MAX_MICROS, out)
    elapsed = time.perf_counter() - t
    if pool is not None:
        pool.shutdown()
    return len(elements) / elapsed, sorted(wv.value for wv in out)


# --- the run -------------------------------------------------------------------------------------

def write_inputs(tmp: str, lines: int, keys_small: int, keys_large: int, numbers: int) -> dict:
    rng = np.random.default_rng(7)
    paths = {}
    for name, keys in (("few keys", keys_small), ("many keys", keys_large)):
        path = os.path.join(tmp, f"{name.replace(' ', '_')}.txt")
        ks, vs = rng.integers(0, keys, lines), rng.integers(0, 1000, lines)
        with open(path, "w") as f:
            f.writelines(f"k{a},{b}\n" for a, b in zip(ks, vs))
        paths[name] = path
    path = os.path.join(tmp, "heavy.txt")   # a quarter of the lines, ten times the work each
    with open(path, "w") as f:
        f.writelines(f"k{a},{b}\n" for a, b in zip(rng.integers(0, keys_small, lines // 4),
                                                   rng.integers(0, 1000, lines // 4)))
    paths["heavy"] = path
    path = os.path.join(tmp, "numbers.txt")
    with open(path, "w") as f:
        f.writelines(f"{x:.6f}\n" for x in rng.random(numbers))
    paths["numbers"] = path
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", default="1,2", help="worker counts, comma-separated (1 first)")
    ap.add_argument("--lines", type=int, default=60_000)
    ap.add_argument("--numbers", type=int, default=120_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--units", type=int, default=20_000, help="reorder benchmark units")
    ap.add_argument("--skew_values", type=int, default=20_000, help="skew benchmark values")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--json", default=None, help="also write the figures here")
    ap.add_argument("--profile", choices=("python", "numpy"), default=None)
    args = ap.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    assert counts[0] == 1, "the first worker count must be 1 (the baseline)"
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_inputs(tmp, args.lines, 16, 50_000, args.numbers)
        if args.profile:
            run = (python_pipeline(paths["few keys"], 300,
                                   ["--workers=2", "--worker_mode=processes"])
                   if args.profile == "python" else
                   numpy_pipeline(paths["numbers"], 2000, ["--workers=2"]))
            cProfile.runctx("run()", globals(), {"run": run}, os.path.join(tmp, "prof"))
            pstats.Stats(os.path.join(tmp, "prof")).sort_stats("tottime").print_stats(15)
            return
        figures = measure(paths, counts, args)
    block = render(figures, counts, args)
    print(block)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    if not args.no_write:
        write_block(BEGIN, END, block)
        write_block(*markers(SUMMARY), "\n".join([header(args), ""] + speedups(figures, counts)))
        write_plot("ordered_parallel", speedup_plot(figures, counts))


def measure(paths: dict, counts: List[int], args: Any) -> Dict[str, Any]:
    figures: Dict[str, Any] = {"calibration": {}, "pipelines": {}, "reorder": {}}
    spin = 3_000_000
    alone = {k: calibration(k, spin) for k in counts}
    for k in counts:
        figures["calibration"][k] = k * alone[1] / alone[k]
    shapes = [("python light, 16 keys", "processes",
               lambda f: python_pipeline(paths["few keys"], 300, f)),
              ("python light, 50,000 keys", "processes",
               lambda f: python_pipeline(paths["many keys"], 300, f)),
              ("python heavy, 16 keys", "processes",
               lambda f: python_pipeline(paths["heavy"], 3000, f)),
              ("python grouping, 16 keys", "processes",
               lambda f: grouping_pipeline(paths["few keys"], f)),
              ("python grouping, 50,000 keys", "processes",
               lambda f: grouping_pipeline(paths["many keys"], f)),
              ("template, 4 instances, 64 keys", "processes",
               lambda f: template_pipeline(paths["many keys"], f)),
              ("numpy K=200", "threads", lambda f: numpy_pipeline(paths["numbers"], 200, f)),
              ("numpy K=2000", "threads", lambda f: numpy_pipeline(paths["numbers"], 2000, f))]
    for name, mode, make in shapes:
        rows = {}
        base_s, base = timed(make(["--workers=1"]), args.repeats)
        rows[1] = base_s
        for k in counts[1:]:
            s, got = timed(make([f"--workers={k}", f"--worker_mode={mode}"]), args.repeats)
            if got != base:
                raise SystemExit(f"{name}: {k} workers gave other results than one")
            rows[k] = s
        figures["pipelines"][name] = {"mode": mode, "seconds": rows}
        print(name, {k: round(v, 2) for k, v in rows.items()}, file=sys.stderr)
    events = local_vs_beam.make_events(200_000, 1000, 1.0, 7)
    defaults = [("local benchmark, fixed windows", lambda f: lambda: local_vs_beam.run_pomset(
                     events, "fixed", 30.0, tuple(f))),
                ("local benchmark, sessions", lambda f: lambda: local_vs_beam.run_pomset(
                    events, "sessions", 30.0, tuple(f))),
                ("python light, 16 keys", lambda f: python_pipeline(paths["few keys"], 300, f)),
                ("numpy K=2000", lambda f: numpy_pipeline(paths["numbers"], 2000, f))]
    figures["defaults"] = {}
    for name, make in defaults:
        # alternated, each the best of its runs: a run leaves garbage for the one after it
        one_s = default_s = math.inf
        for i in range(args.repeats):
            for flags in ((["--workers=1"], []) if i % 2 == 0 else ([], ["--workers=1"])):
                s_, got = timed(make(flags), 1)
                if flags:
                    one_s, one = min(one_s, s_), got
                else:
                    default_s, default = min(default_s, s_), got
        if sorted(default) != sorted(one):
            raise SystemExit(f"{name}: the default flags gave other results than one worker")
        figures["defaults"][name] = (one_s, default_s)
        print(name, "default flags", round(one_s, 2), round(default_s, 2), file=sys.stderr)
    for k in counts:
        figures["reorder"][k] = {kind: reorder_rate(kind, k, args.units)
                                 for kind in ("non-blocking", "locked")}
    figures["skew"] = {}
    for s in (0.0, 1.0, 2.0):
        keys = zipf_keys(s, 64, args.skew_values)
        one, want = skew_rate("one", 1, keys, 500)
        row = {"one": one, "hot share": keys.count(0) / len(keys)}
        for k in counts[1:]:
            for kind in ("hybrid", "partitioned"):
                rate, got = skew_rate(kind, k, keys, 500)
                if got != want:
                    raise SystemExit(f"skew {s}: {kind} at {k} threads gave other panes")
                row[f"{kind} {k}"] = rate
        figures["skew"][s] = row
        print("skew", s, {str(a): round(b) for a, b in row.items()}, file=sys.stderr)
    return figures


def speedups(figures: Dict[str, Any], counts: List[int]) -> List[str]:
    """The table of each pipeline's time at each worker count and its speed-up over one."""
    cal = figures["calibration"]
    head = "| shape | mode | " + " | ".join(f"{k} worker{'s' if k > 1 else ''}" for k in counts)
    lines = [head + " |", "|---|---|" + "---|" * len(counts)]
    lines.append("| calibration (independent Python work in k processes) | processes | "
                 + " | ".join(f"**{cal[k]:.2f}x**" for k in counts) + " |")
    for name, row in figures["pipelines"].items():
        secs = row["seconds"]
        cells = [f"{secs[1]:.2f} s"] + [f"{secs[k]:.2f} s (**{secs[1] / secs[k]:.2f}x**)"
                                        for k in counts[1:]]
        lines.append(f"| {name} | {row['mode']} | " + " | ".join(cells) + " |")
    return lines


def speedup_plot(figures: Dict[str, Any], counts: List[int]) -> Dict[str, Any]:
    """Speed-up over one worker by worker count, a curve per pipeline and the calibration's."""
    series = {"calibration": [[k, figures["calibration"][k]] for k in counts]}
    for name, row in figures["pipelines"].items():
        series[name] = [[k, row["seconds"][1] / row["seconds"][k]] for k in counts]
    return {"title": "Local runner, --workers: speed-up over one worker", "xlabel": "workers",
            "ylabel": "speed-up over one worker", "series": series, "ideal": True,
            "logx": max(counts) > 4,
            "note": f"benchmarks/ordered_parallel.py --workers {','.join(map(str, counts))}, "
                    f"{usable_cores()} cores"}


def header(args: Any) -> str:
    """What the tables were measured by and on."""
    return (f"Measured by `benchmarks/ordered_parallel.py --workers {args.workers}`: "
            f"{args.lines:,} lines, {args.numbers:,} numbers, best of {args.repeats}. Machine: "
            f"{usable_cores()} cores, {platform.system()} {platform.release()}, Python "
            f"{platform.python_version()}, numpy {np.__version__}.")


def render(figures: Dict[str, Any], counts: List[int], args: Any) -> str:
    lines = [header(args), ""]
    lines += speedups(figures, counts)
    lines += ["", f"Default flags (`--workers=0`, one per core: {usable_cores()}; "
              "`--worker_mode=auto`) against `--workers=1`, same run, results checked equal; "
              "the local benchmark's shapes are `benchmarks/local_vs_beam.py`'s pomset pipeline "
              "over 200,000 events:", "",
              "| shape | --workers=1 | default flags | ratio |", "|---|---|---|---|"]
    for name, (one_s, default_s) in figures["defaults"].items():
        lines.append(f"| {name} | {one_s:.2f} s | {default_s:.2f} s | "
                     f"**{one_s / default_s:.2f}x** |")
    lines += ["", "Reorder buffers (units of SHA-256 over 32 KB per second; non-blocking / "
              "lock-based):", "", "| threads | non-blocking | lock-based | ratio |",
              "|---|---|---|---|"]
    for k in counts:
        r = figures["reorder"][k]
        lines.append(f"| {k} | {r['non-blocking']:,.0f}/s | {r['locked']:,.0f}/s | "
                     f"{r['non-blocking'] / r['locked']:.2f}x |")
    lines += ["", "A partitioned grouping under key skew (the paper's Figs. 9-10; values per second, "
              "500 values a step, 64 keys, 4 buckets per thread; the hybrid queue / the "
              "partitioned baseline):", "",
              "| Zipf s | hot key's share | one host | "
              + " | ".join(f"{k} threads hybrid | {k} threads partitioned | hybrid / partitioned"
                           for k in counts[1:]) + " |",
              "|---|---|---|" + "---|---|---|" * len(counts[1:])]
    for s, row in figures["skew"].items():
        cells = [f"{row['one']:,.0f}/s"]
        for k in counts[1:]:
            h, p = row[f"hybrid {k}"], row[f"partitioned {k}"]
            cells += [f"{h:,.0f}/s ({h / row['one']:.2f}x)", f"{p:,.0f}/s ({p / row['one']:.2f}x)",
                      f"**{h / p:.2f}x**"]
        lines.append(f"| {s:g} | {row['hot share']:.0%} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
