"""Event-based windowing as a DGS program (Kallas et al., Sec. 4.1): sensor readings arrive on
many streams and a separate stream of barrier events (a machine's cycle ending, a market's
session closing) cuts them into windows; at each barrier, a summary of the readings since the
previous one (count, mean, spread, minimum, maximum). A window is not a key: every reading
depends on the barriers, so keyed parallelism cannot split this computation, and time windows
cannot express it. As a DGS program: readings are independent of each other and barriers
depend on everything; a fork hands one side the running summary and the other an empty one,
and a join adds two summaries up.

    python examples/event_windows.py [--runner=local|spark] [--workers=N] [--events=N]

It checks the program's consistency, prints the plan, runs the pipeline, and checks its
output against the sequential program on the sorted input.
"""
from __future__ import annotations

import argparse
import math
import os
import random
import sys
from typing import Any, Callable, FrozenSet, List, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402

TRACE = pm.TraceType({"value": int, "barrier": int},
                     depends=[("barrier", "value"), ("barrier", "barrier")])

#: a window's summary: count, sum, sum of squares, minimum, maximum (integers add up exactly)
Summary = Tuple[int, int, int, Optional[int], Optional[int]]
EMPTY: Summary = (0, 0, 0, None, None)


def update(summary: Summary, tag: str, value: int, emit: Callable[[Any], None]) -> Summary:
    """The sequential program: fold a reading into the window; at a barrier, emit the
    window's (barrier, count, mean, standard deviation, minimum, maximum) and start anew."""
    n, s, ss, lo, hi = summary
    if tag == "value":
        return (n + 1, s + value, ss + value * value,
                value if lo is None or value < lo else lo,
                value if hi is None or value > hi else hi)
    mean = s / n if n else 0.0
    std = math.sqrt(max(0.0, ss / n - mean * mean)) if n else 0.0
    emit((value, n, round(mean, 6), round(std, 6), lo, hi))
    return EMPTY


def fork(summary: Summary, left: FrozenSet[str], right: FrozenSet[str]) -> Tuple[Summary, Summary]:
    """The running summary to the side that may close the window (the left if neither)."""
    return (EMPTY, summary) if "barrier" in right else (summary, EMPTY)


def join(a: Summary, b: Summary) -> Summary:
    """Two summaries of disjoint readings, added up."""
    lo = a[3] if b[3] is None else b[3] if a[3] is None else min(a[3], b[3])
    hi = a[4] if b[4] is None else b[4] if a[4] is None else max(a[4], b[4])
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], lo, hi)


class EventWindows(pm.DGS):
    """Summaries between barriers, for `events | EventWindows()`."""

    trace = TRACE

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(init=lambda: EMPTY, update=update, fork=fork, join=join, **kwargs)


def generate(n: int, per_barrier: int = 10_000, streams: int = 4,
             seed: int = 3) -> List[Tuple[float, Tuple[str, int]]]:
    """`n` readings on `streams` streams, a millisecond apart on each, and a barrier after
    every `per_barrier` readings; returned in arrival order (stream by stream interleaved)."""
    rng = random.Random(seed)
    out: List[Tuple[float, Tuple[str, int]]] = []
    for i in range(n):
        out.append(((i // streams) / 1000 + (i % streams) / (1000 * streams),
                    ("value", int(rng.gauss(500, 120)))))
        if i % per_barrier == per_barrier - 1:
            out.append((out[-1][0] + 1e-6, ("barrier", i // per_barrier)))
    return out


def sequential(events: List[Tuple[float, Tuple[str, int]]]) -> List[Tuple[float, Any]]:
    """The specification: the sequential program over the events sorted by timestamp."""
    state, outs, result = EMPTY, [], []
    for ts, (tag, value) in sorted(events, key=lambda e: e[0]):
        state = update(state, tag, value, outs.append)
        result.extend((ts, o) for o in outs)
        outs.clear()
    return result


class WindowOptions(pm.PipelineOptions):
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--events", type=int, default=100_000, help="readings to make")
        parser.add_argument("--per_barrier", type=int, default=10_000,
                            help="readings between two barriers")


def main(argv: Optional[List[str]] = None) -> int:
    options = WindowOptions(argv if argv is not None else sys.argv[1:])
    program = EventWindows(label="EventWindows")
    pm.dgs.check_consistency(program, max_examples=100)
    print("consistent: C1-C3 hold on generated states and events")
    leaves = options.workers if options.runner == "local" else 2
    print(pm.dgs.optimize(program, leaves, {"value": options.per_barrier, "barrier": 1})
          .describe())
    events = generate(options.events, options.per_barrier)
    with pm.Pipeline(options=options) as p:
        out = (p | pm.Create([pm.TimestampedValue(e, ts) for ts, e in events])
               | pm.Typed(TRACE, period=1) | program)
    got = [(float(wv.timestamp), wv.value) for wv in p.result.collect(out)]
    want = [(float(pm.Timestamp.of(ts)), o) for ts, o in sequential(events)]
    ok = sorted(got, key=repr) == sorted(want, key=repr)
    print(f"{len(events):,} events, {len(got)} windows; equal to the sequential program: "
          f"{'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
