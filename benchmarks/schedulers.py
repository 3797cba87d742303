"""The local runner's schedulers (Prasaad et al., Sec. 6 and Fig. 8): throughput and latency of
QST, LP, ET and CT on a sessionization chain shaped like TPCx-BB Q4, with a calibration.

Q4 is shopping-cart abandonment: for users who put products in their cart but did not buy,
the mean number of pages they visited in the session. Its shape in the paper is
WC -> SL -> PS -> SL -> SF; here, over a click-stream file of `user,time,page,dwell` lines:

    ReadFromText                                    WC   the driver reads
    | parse: Map(line -> row, timestamped)          SL   Python
    | bot score: batched DoFn over Arrow batches    SL   numpy (sum of sin(k x), K terms;
                                                         releases the GIL)
    | humans: FlatMap(drop bots, key by user)       SL   Python
    | WindowInto(Sessions(30 min))                  SL
    | CombinePerKey(cart session)                   PS   partitioned over the workers
    | abandoned: FlatMap(pages where cart, no buy)  SL   (runs in the release)
    | WindowInto(GlobalWindows) | CombineGlobally(Mean)  SF

Two shapes: K = 300, where the sessionization (Python, under the GIL) takes most of the time,
and K = 2,000, where the bot score (numpy) does. Each scheduler runs them with
`--worker_mode=threads` at k workers, and the default flags (`--worker_mode=auto`: only the
steps up to the bot score on the workers, the grouping on one thread) at k workers too; one
worker (the sequential executor) is the baseline, and every run's answer must equal it. Throughput is clicks per
second over the whole run (reading included). Latency is the paper's: each unit's time from
the driver handing its bundle to the executor until its release has run it through the
steps the workers do not run (the grouping's buckets included); the benchmark measures it by
wrapping the executor's two ends, which are in serial order on both sides. The calibration
(independent Python work in k processes against one) is measured in the same run.

    .venv/bin/python benchmarks/schedulers.py                 # 1 and 2 workers; writes
    .venv/bin/python benchmarks/schedulers.py --workers 1,2,4,8,16 --no-write
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

import pomset as pm  # noqa: E402
from pomset.runners.local import parallel  # noqa: E402
from pomset.sdk.options import usable_cores  # noqa: E402
from ordered_parallel import calibration  # noqa: E402
from results import write_block  # noqa: E402

BEGIN, END = "<!-- schedulers-results:begin -->", "<!-- schedulers-results:end -->"
SCHEDULERS = ("ct", "lp", "qst", "et")
PAGES = ("view", "cart", "buy")


def write_clicks(path: str, clicks: int, users: int, hours: float, seed: int) -> None:
    """`user,seconds,page,dwell` lines in time order (a click stream): 85% views, 10% cart
    additions, 5% purchases."""
    rng = np.random.default_rng(seed)
    times = np.sort(rng.uniform(0, hours * 3600, clicks))
    who = rng.integers(0, users, clicks)
    page = rng.choice(3, clicks, p=[0.85, 0.10, 0.05])
    dwell = rng.exponential(20.0, clicks)
    with open(path, "w") as f:
        f.writelines(f"u{u},{t:.3f},{PAGES[p]},{d:.2f}\n"
                     for u, t, p, d in zip(who, times, page, dwell))


def parse(line: str) -> pm.TimestampedValue:
    user, t, page, dwell = line.split(",")
    return pm.TimestampedValue({"user": user, "page": page, "dwell": float(dwell)}, float(t))


class BotScore(pm.DoFn):
    """A per-click score over a whole Arrow batch: sum of sin(k * dwell), k = 1..K (a stand-in
    for a vectorized model; numpy releases the GIL while it runs)."""

    def __init__(self, k: int) -> None:
        self.ks = np.arange(1, k + 1, dtype=np.float64)

    def process_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        dwell = batch.column("dwell").to_numpy()
        score = np.sin(np.multiply.outer(dwell, self.ks)).sum(axis=1)
        return batch.append_column("score", pa.array(score))


def humans(row: Dict[str, Any]) -> List[Tuple[str, str]]:
    return [] if row["score"] > 20.0 else [(row["user"], row["page"])]


class CartSession(pm.CombineFn):
    """A session's pages visited, and whether it added to the cart and bought."""

    def create_accumulator(self) -> Tuple[int, bool, bool]:
        return 0, False, False

    def add_input(self, acc: Tuple[int, bool, bool], page: str) -> Tuple[int, bool, bool]:
        return acc[0] + 1, acc[1] or page == "cart", acc[2] or page == "buy"

    def merge_accumulators(self, accs: Any) -> Tuple[int, bool, bool]:
        accs = list(accs)
        return (sum(a[0] for a in accs), any(a[1] for a in accs), any(a[2] for a in accs))

    def extract_output(self, acc: Tuple[int, bool, bool]) -> Tuple[int, bool, bool]:
        return acc


def abandoned(kv: Tuple[str, Tuple[int, bool, bool]]) -> List[int]:
    pages, carted, bought = kv[1]
    return [pages] if carted and not bought else []


def q4(path: str, k: int, flags: List[str]) -> Callable[[], Any]:
    def run() -> Any:
        p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", *flags]))
        out = (p | pm.ReadFromText(path) | "parse" >> pm.Map(parse)
               | "bot score" >> pm.ParDo(BotScore(k)) | "humans" >> pm.FlatMap(humans)
               | pm.WindowInto(pm.Sessions(1800))
               | "cart sessions" >> pm.CombinePerKey(CartSession())
               | "abandoned" >> pm.FlatMap(abandoned) | pm.WindowInto(pm.GlobalWindows())
               | pm.CombineGlobally(pm.Mean()))
        return [round(wv.value, 9) for wv in p.run().collect(out)]
    return run


class UnitLatency:
    """Each unit's seconds from the driver handing its bundle to the executor to the end of
    its release: the executor makes a `_Unit` for each such bundle and `_replay`s them in the
    same (serial) order, so the n-th of each belong together."""

    def __init__(self) -> None:
        self.born: List[float] = []
        self.done: List[float] = []

    def __enter__(self) -> "UnitLatency":
        self._init, self._replay = parallel._Unit.__init__, parallel.ParallelExecutor._replay
        init, replay, born, done = self._init, self._replay, self.born, self.done

        def timed_init(unit: Any, *args: Any) -> None:
            init(unit, *args)
            born.append(time.perf_counter())

        def timed_replay(executor: Any, *args: Any) -> None:
            replay(executor, *args)
            done.append(time.perf_counter())

        parallel._Unit.__init__ = timed_init
        parallel.ParallelExecutor._replay = timed_replay
        return self

    def __exit__(self, *exc: Any) -> None:
        parallel._Unit.__init__, parallel.ParallelExecutor._replay = self._init, self._replay

    def seconds(self) -> List[float]:
        assert len(self.born) == len(self.done), "units and releases do not pair"
        return [d - b for b, d in zip(self.born, self.done)]


def measured(run: Callable[[], Any], repeats: int) -> Tuple[float, float, float, Any]:
    """(best seconds, median and 95th-percentile unit latency of that run, the result)."""
    best = (math.inf, 0.0, 0.0, None)
    for _ in range(repeats):
        with UnitLatency() as lat:
            t = time.perf_counter()
            result = run()
            elapsed = time.perf_counter() - t
        units = sorted(lat.seconds())
        if elapsed < best[0]:
            p50 = statistics.median(units) if units else 0.0
            p95 = units[min(len(units) - 1, int(0.95 * len(units)))] if units else 0.0
            best = (elapsed, p50, p95, result)
    return best


def measure(path: str, counts: List[int], args: Any) -> Dict[str, Any]:
    spin = 3_000_000
    alone = {k: calibration(k, spin) for k in counts}
    figures: Dict[str, Any] = {"calibration": {k: k * alone[1] / alone[k] for k in counts},
                               "one": {}, "runs": {}}
    for terms in args.k:
        base_s, _, _, want = measured(q4(path, terms, ["--workers=1"]), args.repeats)
        figures["one"][terms] = base_s
        print(f"K={terms} one worker", round(base_s, 2), want, file=sys.stderr)
        for k in counts[1:]:
            for name in (*SCHEDULERS, "auto"):
                flags = [f"--workers={k}"] + ([] if name == "auto" else [
                    "--worker_mode=threads", f"--schedule={name}"])
                s, p50, p95, got = measured(q4(path, terms, flags), args.repeats)
                if got != want:
                    raise SystemExit(f"K={terms}: {' '.join(flags)} gave {got}, one worker "
                                     f"{want}")
                figures["runs"][terms, k, name] = (s, p50, p95)
                print(f"K={terms}", name, k, round(s, 2), f"{p50 * 1e3:.1f} ms",
                      f"{p95 * 1e3:.1f} ms", file=sys.stderr)
    return figures


def render(figures: Dict[str, Any], counts: List[int], args: Any) -> str:
    cal = figures["calibration"]
    lines = [f"Measured by `benchmarks/schedulers.py --workers "
             f"{args.workers}`: {args.clicks:,} clicks of {args.users:,} users, best of "
             f"{args.repeats}. Machine: {usable_cores()} cores, {platform.system()} "
             f"{platform.release()}, Python {platform.python_version()}, numpy "
             f"{np.__version__}. Calibration (independent Python work in k processes "
             f"against one): " + ", ".join(f"{cal[k]:.2f}x at {k}" for k in counts[1:]) + ".",
             "", "| bot score | workers | scheduler | seconds | clicks/s | speed-up over one "
             "worker | unit latency p50 | p95 |", "|---|---|---|---|---|---|---|---|"]
    for terms in args.k:
        one = figures["one"][terms]
        lines.append(f"| K = {terms} | 1 | (sequential) | {one:.2f} s | "
                     f"{args.clicks / one:,.0f} | 1.00x | | |")
        for k in counts[1:]:
            for name in (*SCHEDULERS, "auto"):
                s, p50, p95 = figures["runs"][terms, k, name]
                label = ("CT, default flags (`--worker_mode=auto`)" if name == "auto"
                         else name.upper())
                lines.append(f"| K = {terms} | {k} | {label} | {s:.2f} s | "
                             f"{args.clicks / s:,.0f} | **{one / s:.2f}x** | "
                             f"{p50 * 1e3:.1f} ms | {p95 * 1e3:.1f} ms |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", default="1,2", help="worker counts, comma-separated (1 first)")
    ap.add_argument("--clicks", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=20_000)
    ap.add_argument("--k", default="300,2000",
                    help="terms of the bot score per click, one shape each, comma-separated")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    args.k = [int(k) for k in args.k.split(",")]
    assert counts[0] == 1, "the first worker count must be 1 (the baseline)"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "clicks.csv")
        write_clicks(path, args.clicks, args.users, 6.0, 5)
        figures = measure(path, counts, args)
    block = render(figures, counts, args)
    print(block)
    if not args.no_write:
        write_block(BEGIN, END, block)


if __name__ == "__main__":
    main()
