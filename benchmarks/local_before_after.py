"""The local runner's throughput at this checkout against an earlier commit, in one run.

Each shape of `benchmarks/local_vs_beam.py` (a windowed sum per key over in-memory events:
fixed windows over 1 and 3 hours, sessions over 3 hours) runs on pomset as it is at `--base`
(checked out into a temporary git worktree) and as it is here, each run alone in a fresh
process by that benchmark's own worker, the two interleaved so that a noisy machine slows both
alike. Reported: the median wall time of each, events/s, the ratio (here / base), and whether
the two produced the same rows.

Reproduce: `.venv/bin/python benchmarks/local_before_after.py --base 41dfc86`
(`--no-write` prints without updating BENCHMARKS.md).
"""
from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

from results import write_block

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BEGIN, END = "<!-- before-after:begin -->", "<!-- before-after:end -->"


def run_once(tree: str, shape: str, hours: float, args: argparse.Namespace) -> Dict[str, Any]:
    """One run of pomset from `tree` on one shape, in a fresh process."""
    fd, path = tempfile.mkstemp(suffix=".pkl", prefix="bench-")
    os.close(fd)
    try:
        cmd = [sys.executable, os.path.join(tree, "benchmarks", "local_vs_beam.py"),
               "--worker", "pomset", "--shape", shape, "--events", str(args.events),
               "--keys", str(args.keys), "--hours", str(hours), "--gap", str(args.gap),
               "--seed", str(args.seed), "--result", path]
        env = dict(os.environ, PYTHONPATH=tree)
        subprocess.run(cmd, check=True, cwd=tree, env=env)
        with open(path, "rb") as f:
            return pickle.load(f)
    finally:
        os.unlink(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="41dfc86", help="the commit to compare with")
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--gap", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--shapes", default="fixed@1,fixed@3,sessions@3")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each side per shape")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    base_tree = tempfile.mkdtemp(prefix="pomset-base-")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "-q", base_tree, args.base],
                   check=True)
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "pomset"], check=True,
                           capture_output=True, text=True).stdout.strip()
    rows: List[Dict[str, Any]] = []
    try:
        for spec in args.shapes.split(","):
            shape, _, hours = spec.partition("@")
            times: Dict[str, List[float]] = {"base": [], "here": []}
            results: Dict[str, Any] = {}
            for _ in range(args.repeat):
                for side, tree in (("base", base_tree), ("here", ROOT)):
                    r = run_once(tree, shape, float(hours), args)
                    times[side].append(r["elapsed"])
                    results[side] = r["rows"]
            base, here = statistics.median(times["base"]), statistics.median(times["here"])
            rows.append(dict(shape=f"{shape} ({hours} h)", base=base, here=here,
                             match=results["base"] == results["here"], n=len(results["here"]),
                             spread={s: (min(t), max(t)) for s, t in times.items()}))
            print(rows[-1], flush=True)
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", base_tree])
    text = render(rows, args, head + ("+changes" if dirty else ""))
    print(text)
    if not args.no_write:
        write_block(BEGIN, END, text)


def render(rows: List[Dict[str, Any]], args: argparse.Namespace, head: str) -> str:
    n = args.events
    lines = [f"Measured by `benchmarks/local_before_after.py "
             f"--base {args.base}` at {head} ({n:,} events, {args.keys} keys, seed {args.seed}; "
             f"median of {args.repeat} interleaved runs of each side, each in a fresh process; "
             f"{os.cpu_count()} cores).", "",
             "| shape | before: time (events/s) | after: time (events/s) | after / before "
             "throughput | runs' spread before, after | same rows |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        (b0, b1), (h0, h1) = r["spread"]["base"], r["spread"]["here"]
        lines.append(f"| {r['shape']} | {r['base']:.2f} s ({n / r['base']:,.0f}) | "
                     f"{r['here']:.2f} s ({n / r['here']:,.0f}) | **{r['base'] / r['here']:.2f}x** | "
                     f"{b0:.2f}-{b1:.2f} s, {h0:.2f}-{h1:.2f} s | "
                     f"{'yes' if r['match'] else 'NO'} ({r['n']:,} rows) |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
