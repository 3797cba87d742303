"""Event-based windowing as a DGS program (Kallas et al., Sec. 4.1): sensor readings arrive on
many streams, each a sample of a machine's eight sensors, and a separate stream of barrier
events (a machine's cycle ending, a batch finishing) cuts them into windows; at each barrier,
a summary of the readings since the previous one (their count and, per sensor, the mean,
spread, minimum and maximum). A window is not a key: every reading
depends on the barriers, so keyed parallelism cannot split this computation, and time windows
cannot express it. As a DGS program: readings are independent of each other and barriers
depend on everything; a fork hands one side the running summary and the other an empty one,
and a join adds two summaries up.

    python examples/event_windows.py [--runner=local|spark] [--workers=N --worker_mode=processes]
        [--events=N]

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

TRACE = pm.TraceType({"value": tuple, "barrier": int},
                     depends=[("barrier", "value"), ("barrier", "barrier")])
#: channels per reading (a sample of a machine's sensors: vibration, temperature, current...)
CHANNELS = 8


class Summary:
    """A window's summary so far: the readings' count and, per channel, the sum, the sum of
    squares, the minimum and the maximum (integers add up exactly)."""

    __slots__ = ("n", "sums", "squares", "lows", "highs")

    def __init__(self) -> None:
        self.n = 0
        self.sums = [0] * CHANNELS
        self.squares = [0] * CHANNELS
        self.lows: List[Optional[int]] = [None] * CHANNELS
        self.highs: List[Optional[int]] = [None] * CHANNELS

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Summary) and all(
            getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __repr__(self) -> str:
        return f"Summary(n={self.n}, sums={self.sums})"


def update(summary: Summary, tag: str, value: Any, emit: Callable[[Any], None]) -> Summary:
    """The sequential program: fold a reading into the window; at a barrier, emit the
    window's (barrier, count, and per channel mean, standard deviation, minimum, maximum)
    and start anew."""
    if tag == "value":
        summary.n += 1
        sums, squares, lows, highs = summary.sums, summary.squares, summary.lows, summary.highs
        for c, x in enumerate(value):
            sums[c] += x
            squares[c] += x * x
            low, high = lows[c], highs[c]
            if low is None or x < low:
                lows[c] = x
            if high is None or x > high:
                highs[c] = x
        return summary
    n = summary.n
    channels = []
    for c in range(CHANNELS):
        mean = summary.sums[c] / n if n else 0.0
        std = math.sqrt(max(0.0, summary.squares[c] / n - mean * mean)) if n else 0.0
        channels.append((round(mean, 6), round(std, 6), summary.lows[c], summary.highs[c]))
    emit((value, n, tuple(channels)))
    return Summary()


def fork(summary: Summary, left: FrozenSet[str], right: FrozenSet[str]
         ) -> Tuple[Summary, Summary]:
    """The running summary to the side that may close the window (the left if neither)."""
    return (Summary(), summary) if "barrier" in right else (summary, Summary())


def join(a: Summary, b: Summary) -> Summary:
    """Two summaries of disjoint readings, added up."""
    a.n += b.n
    for c in range(CHANNELS):
        a.sums[c] += b.sums[c]
        a.squares[c] += b.squares[c]
        if b.lows[c] is not None and (a.lows[c] is None or b.lows[c] < a.lows[c]):
            a.lows[c] = b.lows[c]
        if b.highs[c] is not None and (a.highs[c] is None or b.highs[c] > a.highs[c]):
            a.highs[c] = b.highs[c]
    return a


class EventWindows(pm.DGS):
    """Summaries between barriers, for `events | EventWindows()`."""

    trace = TRACE

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(init=Summary, update=update, fork=fork, join=join, **kwargs)


def generate(n: int, per_barrier: int = 10_000, streams: int = 4,
             seed: int = 3) -> List[Tuple[float, Tuple[str, Any]]]:
    """`n` readings on `streams` streams, a millisecond apart on each, and a barrier after
    every `per_barrier` readings; returned in arrival order (stream by stream interleaved)."""
    rng = random.Random(seed)
    centres = [rng.randint(100, 1000) for _ in range(CHANNELS)]
    out: List[Tuple[float, Tuple[str, Any]]] = []
    for i in range(n):
        reading = tuple(int(rng.gauss(m, m / 8)) for m in centres)
        out.append(((i // streams) / 1000 + (i % streams) / (1000 * streams),
                    ("value", reading)))
        if i % per_barrier == per_barrier - 1:
            out.append((out[-1][0] + 1e-6, ("barrier", i // per_barrier)))
    return out


def sequential(events: List[Tuple[float, Tuple[str, Any]]]) -> List[Tuple[float, Any]]:
    """The specification: the sequential program over the events sorted by timestamp."""
    state, outs, result = Summary(), [], []
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
    from hypothesis import strategies as st
    pm.dgs.check_consistency(program, max_examples=100, values={
        "value": st.tuples(*[st.integers(-50, 50)] * CHANNELS)})
    print("consistent: C1-C3 hold on generated states and events")
    leaves = (2 if options.runner != "local" else options.workers
              if options.worker_mode in ("processes", "threads") else 1)
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
