"""Time-series interpolation for home temperature sensors: Example 4.1 and Table 2 of
Mamouras et al., "Data-Trace Types for Distributed Stream Processing Systems" (PLDI 2019).

    python examples/iot_interpolation.py [--sensors=12] [--seconds=600] [--parallelism=4]
                                         [--shuffle_merges=SEED] [--runner=local|spark]

A generator plays the HUB: temperature sensors measure once a second, some measurements are
missing (single points and longer outages), and the hub sends each 10-second period's
measurements in a shuffled order, but never across periods: a measurement with timestamp t
goes out before the marker at the next multiple of 10 s. The stream is typed
U(Unit, dict) with markers every 10 s, and the pipeline is the paper's

    HUB -> joinFilterMap (OpStateless) -> SORT -> linearInterpolation (OpKeyedOrdered)
        -> maxOfAvgPerID (OpKeyedUnordered)

with the three operators written as in Table 2: JFM joins with the location table and keeps
the sensors at windows, LI fills each sensor's missing seconds, and maxOfAvgPerID reports at
every marker the largest average of a 10-second block seen so far (the table divides by the
count; here a block in which a sensor had no point leaves its state as it was).

The script runs the pipeline twice, every stage at parallelism 1 and then at
`--parallelism`, and says whether the two outputs are the same trace: the U output as a
multiset of (value, timestamp), the O output as each sensor's sequence (Corollary 4.4).

Why the types matter. Without them this pipeline is easy to parallelize wrongly. Deal the
hub's stream round-robin to four JFM instances and hash their outputs by sensor to four LI
instances, as one would in Storm: it runs, but LI now sees a sensor's measurements in the
order the hub shuffled them and the JFM instances happened to forward them. Its `dt` is
then negative for a measurement that overtook an earlier one (no points emitted, and the
state jumps back in time) or spans a point that is still to come (a ramp interpolated over a
value that exists), and the output differs from run to run with the thread timing; nothing
reports it. With the types, that graph is not built: the JFM's output is U(str, tuple),
unordered between markers, and the OpKeyedOrdered LI needs an ordered O(K, V) input, so
applying LI raises a PipelineConstructionError that names both steps ("it got
U(str, tuple) from 'joinFilterMap'") and says to insert `| pm.Sort(order=...)` (or to pass
`order=` to LI and run with `--auto_sort`). With the SORT in place,
every deployment of the graph is equivalent to the sequential one, which is what the two
runs below show.
"""
from __future__ import annotations

import argparse
import math
import os
import random
import sys
from collections import Counter, defaultdict
from typing import Callable, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402

PERIOD = 10            # seconds of event time between markers (the paper's 10 s)
LOCATIONS = ("window", "door", "window", "wall", "ceiling", "window", "floor")

Measurement = Dict[str, object]   # {"id": str, "scalar": float, "ts": int}
Point = Tuple[float, int]         # (scalar, ts): the paper's V
AvgPair = Tuple[float, int]       # (sum, count)


class IotOptions(pm.PipelineOptions):
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """The example's flags."""
        parser.add_argument("--sensors", type=int, default=12, help="temperature sensors")
        parser.add_argument("--seconds", type=int, default=600,
                            help="seconds of measurements (one a second per sensor)")
        parser.add_argument("--missing", type=float, default=0.15,
                            help="probability that a single measurement is missing")
        parser.add_argument("--outages", type=float, default=0.01,
                            help="probability per second that a sensor starts an outage "
                                 "of 3-25 s")
        parser.add_argument("--seed", type=int, default=2019, help="the generator's seed")
        parser.add_argument("--parallelism", type=int, default=4,
                            help="instances of every stage in the second run")


# --- the hub: generated measurements ------------------------------------------------------

def location_table(sensors: int) -> Dict[str, str]:
    """Where each sensor is installed: the table JFM joins with."""
    return {sensor_id(i): LOCATIONS[i % len(LOCATIONS)] for i in range(sensors)}


def sensor_id(i: int) -> str:
    """The identifier of the i-th sensor."""
    return f"temp-{i:02d}"


def generate(sensors: int, seconds: int, missing: float, outages: float,
             seed: int) -> List[Measurement]:
    """The hub's stream: each period's measurements shuffled, periods in order."""
    rng = random.Random(seed)
    locations = location_table(sensors)
    periods: Dict[int, List[Measurement]] = defaultdict(list)
    for i in range(sensors):
        sid = sensor_id(i)
        base = 19.0 + 3.0 * rng.random()
        draft = 4.0 if locations[sid] == "window" else 0.5
        phase = rng.random() * 2 * math.pi
        down_until = -1
        for ts in range(seconds):
            if ts < down_until:
                continue
            if rng.random() < outages:
                down_until = ts + rng.randint(3, 25)
                continue
            if rng.random() < missing:
                continue
            temp = (base - draft * (0.5 + 0.5 * math.sin(phase + ts / 90.0))
                    + rng.gauss(0.0, 0.2))
            periods[ts // PERIOD].append({"id": sid, "scalar": round(temp, 2), "ts": ts})
    stream: List[Measurement] = []
    for block in sorted(periods):
        items = periods[block]
        rng.shuffle(items)
        stream.extend(items)
    return stream


def keeps_marker_promise(stream: List[Measurement], period: int = PERIOD) -> bool:
    """Whether every measurement comes before the marker at the next multiple of `period`
    (no measurement follows one of a later period), and some come out of order."""
    blocks = [m["ts"] // period for m in stream]
    in_blocks = all(a <= b for a, b in zip(blocks, blocks[1:]))
    disordered = any(a["ts"] > b["ts"] for a, b in zip(stream, stream[1:]))
    return in_blocks and disordered


# --- the operators of Table 2 -------------------------------------------------------------

def join_filter_map(locations: Dict[str, str]) -> Callable[[None, Measurement, Callable], None]:
    """joinFilterMap's onItem: keep sensors at windows, as (id, (scalar, ts))."""
    def on_item(key: None, value: Measurement, emit: Callable[[str, Point], None]) -> None:
        """Emit a window sensor's measurement, keyed by the sensor."""
        if locations.get(value["id"]) == "window":
            emit(value["id"], (value["scalar"], value["ts"]))
    return on_item


def li_initial_state() -> Optional[Point]:
    """linearInterpolation's initialState: nil."""
    return None


def li_on_item(state: Optional[Point], key: str, value: Point,
               emit: Callable[[str, Point], None]) -> Point:
    """linearInterpolation's onItem: the first point as is, then every second up to this one."""
    if state is None:
        emit(key, value)
    else:
        x, t0 = state
        dt = value[1] - t0
        for i in range(1, dt + 1):
            emit(key, (x + i * (value[0] - x) / dt, t0 + i))
    return value


def avg_in(key: str, value: Point) -> AvgPair:
    """maxOfAvgPerID's in: one point as (sum, count)."""
    return (value[0], 1)


def avg_id() -> AvgPair:
    """maxOfAvgPerID's id: the empty aggregate."""
    return (0.0, 0)


def avg_combine(x: AvgPair, y: AvgPair) -> AvgPair:
    """maxOfAvgPerID's combine: add sums and counts."""
    return (x[0] + y[0], x[1] + y[1])


def max_initial_state() -> float:
    """maxOfAvgPerID's initialState: -infinity."""
    return -math.inf


def max_update_state(old: float, agg: AvgPair) -> float:
    """maxOfAvgPerID's updateState: the larger of the old maximum and this block's average."""
    return max(old, agg[0] / agg[1]) if agg[1] else old


def max_on_marker(state: float, key: str, marker: pm.Marker,
                  emit: Callable[[str, Point], None]) -> None:
    """maxOfAvgPerID's onMarker: the maximum so far, stamped one second before the marker."""
    emit(key, (state, round(float(marker.timestamp)) - 1))


def build(p: pm.Pipeline, stream: List[Measurement], locations: Dict[str, str],
          parallelism: int) -> Tuple[pm.PCollection, pm.PCollection]:
    """The typed DAG of Example 4.1 plus maxOfAvgPerID; returns (LI output, max output)."""
    hub = (p | "HUB" >> pm.Create([pm.TimestampedValue(m, m["ts"]) for m in stream])
           | pm.Typed(pm.U(pm.Unit, dict), period=PERIOD))
    points = hub | "joinFilterMap" >> pm.OpStateless(
        on_item=join_filter_map(locations), out=pm.U(str, tuple), parallelism=parallelism)
    ordered = points | "SORT" >> pm.Sort(lambda v: v[1], parallelism=parallelism)
    filled = ordered | "linearInterpolation" >> pm.OpKeyedOrdered(
        initial_state=li_initial_state, on_item=li_on_item, out=pm.O(str, tuple),
        parallelism=parallelism)
    maxima = filled | "maxOfAvgPerID" >> pm.OpKeyedUnordered(
        in_=avg_in, id=avg_id, combine=avg_combine, initial_state=max_initial_state,
        update_state=max_update_state, on_marker=max_on_marker, out=pm.U(str, tuple),
        parallelism=parallelism)
    return filled, maxima


class Run:
    """One run's outputs and counters."""

    def __init__(self, parallelism: int, filled: list, maxima: list, late: int) -> None:
        """Keep the collected LI and maxOfAvgPerID outputs."""
        self.parallelism = parallelism
        self.filled = filled
        self.maxima = maxima
        self.late = late

    def sequences(self) -> Dict[str, List[Point]]:
        """The O output as each sensor's sequence of points, in output order."""
        out: Dict[str, List[Point]] = defaultdict(list)
        for wv in self.filled:
            key, value = wv.value
            out[key].append(value)
        return dict(out)

    def multiset(self) -> Counter:
        """The U output as a multiset of (value, timestamp µs)."""
        return Counter((wv.value, wv.ts) for wv in self.maxima)


def run(options: IotOptions, stream: List[Measurement], locations: Dict[str, str],
        parallelism: int) -> Run:
    """Build and run the pipeline with every stage at `parallelism`."""
    with pm.Pipeline(options=options) as p:
        filled, maxima = build(p, stream, locations, parallelism)
        filled.keep()   # maxOfAvgPerID reads it: kept to compare it too
    result = p.result
    return Run(parallelism, result.collect(filled), result.collect(maxima),
               result.counter("late"))


def summary(stream: List[Measurement], locations: Dict[str, str], base: Run) -> List[str]:
    """Per window sensor: measurements, points after interpolation, the final maximum."""
    received = Counter(m["id"] for m in stream)
    seqs = base.sequences()
    final: Dict[str, Point] = {}
    for wv in sorted(base.maxima, key=lambda wv: wv.ts):
        key, point = wv.value
        final[key] = point
    lines = [f"{'sensor':<9} {'location':<8} {'measured':>8} {'after LI':>8} "
             f"{'filled':>6} {'max avg':>8} {'at ts':>6}"]
    for sid in sorted(locations):
        if locations[sid] != "window":
            continue
        n, pts = received[sid], len(seqs.get(sid, []))
        value, ts = final.get(sid, (math.nan, -1))
        lines.append(f"{sid:<9} {locations[sid]:<8} {n:>8} {pts:>8} {pts - n:>6} "
                     f"{value:>8.2f} {ts:>6}")
    return lines


def main(argv: Optional[List[str]] = None) -> None:
    """Generate the hub's stream, run at parallelism 1 and N, print and compare."""
    options = IotOptions(sys.argv[1:] if argv is None else argv)
    if options.parallelism < 1:
        raise SystemExit("--parallelism must be >= 1")
    locations = location_table(options.sensors)
    stream = generate(options.sensors, options.seconds, options.missing, options.outages,
                      options.seed)
    windows = sum(1 for loc in locations.values() if loc == "window")
    print(f"hub: {len(stream)} measurements from {options.sensors} sensors ({windows} at "
          f"windows) over {options.seconds} s, markers every {PERIOD} s; shuffled within "
          f"periods, never across: {'yes' if keeps_marker_promise(stream) else 'NO'}")
    base = run(options, stream, locations, 1)
    other = run(options, stream, locations, options.parallelism)
    for r in (base, other):
        print(f"parallelism {r.parallelism}: linearInterpolation emitted {len(r.filled)} "
              f"points, maxOfAvgPerID {len(r.maxima)} reports, late items {r.late}")
    print()
    print("\n".join(summary(stream, locations, base)))
    print()
    same_u = base.multiset() == other.multiset()
    same_o = base.sequences() == other.sequences()
    print(f"maxOfAvgPerID (U) at parallelism 1 and {options.parallelism}, as multisets of "
          f"(value, timestamp): {'identical' if same_u else 'DIFFERENT'}")
    print(f"linearInterpolation (O) at parallelism 1 and {options.parallelism}, as per-sensor "
          f"sequences: {'identical' if same_o else 'DIFFERENT'}")
    print(f"the two runs' outputs are identical: {'yes' if same_u and same_o else 'no'}")


if __name__ == "__main__":
    main()
