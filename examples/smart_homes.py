"""Load prediction for smart plugs: the "Smart Homes" case study (DEBS 2014 Grand Challenge) of
Mamouras et al., "Data-Trace Types for Distributed Stream Processing Systems", Section 6 and
Figure 5, on generated plug data.

    python examples/smart_homes.py [--buildings=2] [--units=3] [--plugs=5] [--minutes=60]
                                   [--start_hour=17] [--parallelism=4] [--runner=local|spark]

The data. Plugs sit in units in buildings; a plug is (building, unit, plug) and has one
device connected: an A/C unit, lights, a fridge, a heater, a washing machine, a TV or a
router, each with its own load curve over the day (a fridge's compressor cycle, lights in
the evening, an A/C whose duty cycle follows the afternoon heat, washing programmes, ...).
A plug measures its load in Watts about every 2 s, irregularly: sometimes 1 s apart,
sometimes several measurements for one timestamp, sometimes a gap of up to `MAX_GAP`
seconds. Events are the DEBS tuples (ts, value, plug, unit, building); the stream is typed
U(Unit, dict) with a marker every 10 s of event time, and the generator shuffles each 10-s
period's events but never moves one across a marker.

The pipeline is the transduction DAG of Figure 5:

    JFM (OpStateless)      join with the plugs' device types, keep A/C, lights, fridges,
                           heaters and washers, key by plug: U(Plug, (ts, W))
    SORT                   per plug, by (ts, W) between markers: O(Plug, (ts, W))
    LI (OpKeyedOrdered)    per plug, one point per second: several measurements of one second
                           are averaged, missing seconds interpolated linearly
    Map (OpStateless)      re-key each point by its plug's device type: U(Device, (ts, plug, W))
    SORT                   per device type, by (ts, plug) between markers
    AVG (OpKeyedOrdered)   per device type, the average load of its plugs at every second; a
                           second is averaged once no plug can still send a point for it (its
                           marker is more than MAX_GAP s later), so the input's last MAX_GAP
                           seconds are never averaged
    Predict (OpKeyedOrdered, a subclass)
                           per device type and second, the energy in Wh an average plug of
                           that type will use over the next 10 minutes, from the current time,
                           the current load and the mean load over the past minute

The model. The paper uses a REPTree regression tree trained on part of the data; here the
model is a hand-written linear one: per device type, least squares (numpy's lstsq) on the
features 1, sin/cos of the time of day (periods of 24, 12, 8 and 6 h), the current load and
the past minute's mean load, fitted at start-up on a generated training set: several days of
the same load curves for as many fresh plugs of that type as the deployment has, at
one-second resolution, with measurement noise. A linear model cannot foresee rare events
(a washing programme starting, lights switched on): for such devices it predicts their
average share, which is far above the near-zero actual of a quiet hour, so their relative
error is large while their error in Wh is small.

Once the run ends, each prediction is compared with the actual energy of the next 10 minutes
computed from AVG's own output, and with the naive "the current load for 10 more minutes";
the error figure is the weighted absolute percentage error, sum |predicted - actual| / sum
actual.

Every stage runs at `--parallelism`; the printed digest of all predictions is the same for
every parallelism (the paper's Corollary 4.4).
"""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import random
import sys
from collections import Counter, defaultdict, deque
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402

PERIOD = 10            # seconds of event time between markers
MAX_GAP = 30           # a plug measures at least every MAX_GAP seconds
HORIZON = 600          # predict the energy over the next 10 minutes
PAST = 60              # the past-minute feature
HARMONICS = 4          # time of day as sin/cos of periods 24, 12, 8 and 6 hours
DAY = 86400
DEVICES = ("ac", "lights", "fridge", "heater", "washer", "tv", "router")
DEVICE_WEIGHTS = (3, 4, 3, 2, 2, 3, 2)
KEPT = ("ac", "lights", "fridge", "heater", "washer")

Plug = Tuple[int, int, int]            # (building, unit, plug)
Event = Dict[str, Any]                 # {"ts", "value", "plug", "unit", "building"}


class SmartHomeOptions(pm.PipelineOptions):
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """The example's flags."""
        parser.add_argument("--buildings", type=int, default=2, help="buildings")
        parser.add_argument("--units", type=int, default=3, help="units per building")
        parser.add_argument("--plugs", type=int, default=5, help="plugs per unit")
        parser.add_argument("--minutes", type=float, default=60.0,
                            help="minutes of measurements")
        parser.add_argument("--start_hour", type=float, default=17.0,
                            help="time of day the measurements start (hours)")
        parser.add_argument("--train_days", type=int, default=3,
                            help="days of generated training data per device type")
        parser.add_argument("--seed", type=int, default=2014, help="the generator's seed")
        parser.add_argument("--parallelism", type=int, default=4,
                            help="instances of every stage")
        parser.add_argument("--show", type=int, default=3,
                            help="device types whose predictions are printed")
        parser.add_argument("--every", type=int, default=300,
                            help="print one prediction every this many seconds")


# --- plugs and their load curves ----------------------------------------------------------

class PlugSpec:
    """One plug's device and the parameters of its load curve."""

    def __init__(self, device: str, rng: random.Random) -> None:
        """Draw the parameters of a `device`'s load curve from `rng`."""
        self.device = device
        self.phase = rng.uniform(0, DAY)
        self.salt = rng.uniform(0, 1000)
        self.power = {"ac": rng.uniform(900, 1500), "lights": rng.uniform(40, 180),
                      "fridge": rng.uniform(90, 150), "heater": rng.uniform(1200, 2000),
                      "washer": 1.0, "tv": rng.uniform(60, 140),
                      "router": rng.uniform(6, 12)}[device]
        self.cycle = {"fridge": rng.uniform(1800, 2700), "ac": rng.uniform(900, 1500),
                      "heater": rng.uniform(700, 1100)}.get(device, 1.0)
        self.duty = rng.uniform(0.3, 0.45)
        self.on_h = rng.uniform(17.5, 19.5)
        self.off_h = rng.uniform(22.0, 23.9)
        self.starts = [rng.uniform(0, DAY) for _ in range(rng.randint(1, 3))]

    def load(self, t: np.ndarray) -> np.ndarray:
        """The plug's true load in W at the seconds `t` (since midnight of day 0)."""
        h = (t / 3600.0) % 24
        d = self.device
        if d == "fridge":
            return np.where((t + self.phase) % self.cycle < self.duty * self.cycle,
                            self.power, 4.0)
        if d == "lights":
            lit = ((h >= self.on_h) & (h < self.off_h)) | ((h >= 6.5) & (h < 7.25))
            level = 0.3 + 0.7 * _hash01(np.floor((t + self.phase) / 900.0), self.salt)
            return np.where(lit, self.power * level, 0.5)
        if d == "ac":
            heat = np.where((h > 8) & (h < 22), np.sin(np.pi * (h - 8) / 14), 0.0)
            duty = np.clip(0.08 + 0.75 * heat, 0.08, 0.9)
            return np.where((t + self.phase) % self.cycle < duty * self.cycle, self.power, 35.0)
        if d == "heater":
            duty = 0.1 + 0.6 * (1 + np.cos(2 * np.pi * (h - 3) / 24)) / 2
            return np.where((t + self.phase) % self.cycle < duty * self.cycle, self.power, 2.0)
        if d == "washer":
            total = np.full_like(t, 1.5, dtype=float)
            for start in self.starts:
                dt = (t - start) % DAY
                spin = 250.0 + 250.0 * ((dt // 120) % 2)
                total += np.where(dt < 900, 1900.0,
                                  np.where(dt < 2700, spin, np.where(dt < 3300, 650.0, 0.0)))
            return total
        if d == "tv":
            return np.where((h >= self.on_h + 0.5) & (h < self.off_h), self.power, 6.0)
        return self.power + 2.0 * np.sin(2 * np.pi * (t + self.phase) / 3600.0)


def _hash01(x: np.ndarray, salt: float) -> np.ndarray:
    """A deterministic pseudo-random number in [0, 1) for each x."""
    v = np.sin(x * 12.9898 + salt * 78.233) * 43758.5453
    return v - np.floor(v)


def deployment(buildings: int, units: int, plugs: int, seed: int) -> Dict[Plug, PlugSpec]:
    """Every plug of every unit of every building, with its device: the table JFM joins with."""
    rng = random.Random(seed)
    return {(b, u, p): PlugSpec(rng.choices(DEVICES, DEVICE_WEIGHTS)[0], rng)
            for b in range(buildings) for u in range(units) for p in range(plugs)}


def generate(plugs: Dict[Plug, PlugSpec], start: int, seconds: int,
             seed: int) -> List[Event]:
    """The plugs' measurements: irregular, with duplicates and gaps, shuffled within periods."""
    rng = random.Random(seed + 1)
    periods: Dict[int, List[Event]] = defaultdict(list)
    end = start + seconds
    for (b, u, p), spec in plugs.items():
        curve = spec.load(np.arange(start, end, dtype=float))
        ts = start + rng.randint(0, 2)
        while ts < end:
            for _ in range(1 + (rng.randint(1, 3) if rng.random() < 0.12 else 0)):
                true = float(curve[ts - start])
                value = max(0.0, true * (1 + rng.gauss(0, 0.02)) + rng.gauss(0, 0.5))
                periods[ts // PERIOD].append({"ts": ts, "value": round(value, 3), "plug": p,
                                              "unit": u, "building": b})
            if rng.random() < 0.01:
                ts += rng.randint(5, MAX_GAP)
            else:
                ts += rng.choice((1, 2, 2, 2, 3))
    stream: List[Event] = []
    for block in sorted(periods):
        items = periods[block]
        rng.shuffle(items)
        stream.extend(items)
    return stream


# --- the model ----------------------------------------------------------------------------

def features(t: Any, load: Any, past: Any) -> np.ndarray:
    """The model's features for time(s) `t`, current load(s) and past-minute mean load(s)."""
    a = 2 * np.pi * (np.asarray(t, dtype=float) % DAY) / DAY
    columns = [np.ones_like(a)]
    for k in range(1, HARMONICS + 1):
        columns += [np.sin(k * a), np.cos(k * a)]
    columns += [np.asarray(load, dtype=float), np.asarray(past, dtype=float)]
    return np.stack(columns, axis=-1)


def train(plugs: Dict[Plug, PlugSpec], days: int, seed: int) -> Dict[str, np.ndarray]:
    """Per kept device type, least-squares weights fitted on generated days of that type."""
    rng = random.Random(seed + 2)
    noise = np.random.default_rng(seed + 3)
    counts = Counter(spec.device for spec in plugs.values())
    t = np.arange(0, DAY + HORIZON + 1, dtype=float)
    models: Dict[str, np.ndarray] = {}
    for device in KEPT:
        if not counts[device]:
            continue
        xs, ys = [], []
        for _ in range(days):
            group = [PlugSpec(device, rng) for _ in range(counts[device])]
            loads = np.mean([np.maximum(0.0, s.load(t) * (1 + noise.normal(0, 0.02, t.size)))
                             for s in group], axis=0)
            csum = np.concatenate([[0.0], np.cumsum(loads)])
            at = np.arange(PAST - 1, DAY, 15)
            past = (csum[at + 1] - csum[at + 1 - PAST]) / PAST
            target = (csum[at + 1 + HORIZON] - csum[at + 1]) / 3600.0
            xs.append(features(t[at], loads[at], past))
            ys.append(target)
        weights, *_ = np.linalg.lstsq(np.concatenate(xs), np.concatenate(ys), rcond=None)
        models[device] = weights
    return models


# --- the operators of Figure 5 ------------------------------------------------------------

def jfm(plugs: Dict[Plug, PlugSpec]) -> Callable[[None, Event, Callable], None]:
    """JFM's onItem: join with the device table, keep the KEPT devices, key by plug."""
    def on_item(key: None, event: Event, emit: Callable[[Plug, tuple], None]) -> None:
        """Emit (plug, (ts, W)) for a plug whose device is kept."""
        plug = (event["building"], event["unit"], event["plug"])
        spec = plugs.get(plug)
        if spec is not None and spec.device in KEPT:
            emit(plug, (event["ts"], event["value"]))
    return on_item


def li_initial_state() -> List[Any]:
    """LI's state: [last point (ts, W) or None, the pending second, its values]."""
    return [None, None, []]


def _li_flush(state: List[Any], key: Plug, emit: Callable[[Plug, tuple], None]) -> None:
    """Emit the pending second's mean and the interpolated seconds before it."""
    last, ts, values = state
    if ts is None:
        return
    value = math.fsum(values) / len(values)
    if last is None:
        emit(key, (ts, value))
    else:
        t0, x = last
        dt = ts - t0
        for i in range(1, dt + 1):
            emit(key, (t0 + i, x + i * (value - x) / dt))
    state[0], state[1], state[2] = (ts, value), None, []


def li_on_item(state: List[Any], key: Plug, value: tuple,
               emit: Callable[[Plug, tuple], None]) -> List[Any]:
    """LI's onItem: collect a second's measurements; a new second closes the pending one."""
    ts, watts = value
    if state[1] is not None and ts != state[1]:
        _li_flush(state, key, emit)
    state[1] = ts
    state[2].append(watts)
    return state


def li_on_marker(state: List[Any], key: Plug, marker: pm.Marker,
                 emit: Callable[[Plug, tuple], None]) -> List[Any]:
    """LI's onMarker: every measurement before the marker has come, so close the pending one."""
    _li_flush(state, key, emit)
    return state


def to_device(plugs: Dict[Plug, PlugSpec]) -> Callable[[Plug, tuple, Callable], None]:
    """Map's onItem: re-key a plug's point by the plug's device type."""
    def on_item(plug: Plug, value: tuple, emit: Callable[[str, tuple], None]) -> None:
        """Emit (device, (ts, plug, W))."""
        ts, watts = value
        emit(plugs[plug].device, (ts, plug, watts))
    return on_item


def avg_initial_state() -> List[Any]:
    """AVG's state: [{second: [W, ...]}, the last second averaged]."""
    return [{}, -math.inf]


def avg_on_item(state: List[Any], device: str, value: tuple,
                emit: Callable[[str, tuple], None]) -> List[Any]:
    """AVG's onItem: add a plug's point to its second."""
    ts, plug, watts = value
    if ts <= state[1]:
        raise ValueError(f"{device}: the point of {plug} for second {ts} came after that second "
                         f"was averaged (a plug was silent for more than {MAX_GAP} s)")
    state[0].setdefault(ts, []).append(watts)
    return state


def avg_on_marker(state: List[Any], device: str, marker: pm.Marker,
                  emit: Callable[[str, tuple], None]) -> List[Any]:
    """AVG's onMarker: average every second no point can still come for, in order."""
    seconds, _ = state
    until = marker.micros // 1_000_000 - MAX_GAP
    for ts in sorted(t for t in seconds if t < until):
        values = seconds.pop(ts)
        emit(device, (ts, math.fsum(values) / len(values), len(values)))
        state[1] = ts
    return state


class Predict(pm.OpKeyedOrdered):
    """Per device type and second: (ts, load, past-minute mean, predicted Wh next 10 min)."""

    def __init__(self, models: Dict[str, np.ndarray], **kwargs: Any) -> None:
        """The template with each device type's model weights."""
        super().__init__(**kwargs)
        self.models = models

    def initial_state(self) -> Deque[float]:
        """The past minute's loads."""
        return deque(maxlen=PAST)

    def on_item(self, state: Deque[float], device: str, value: tuple,
                emit: Callable[[str, tuple], None]) -> Deque[float]:
        """Predict once a full minute of loads is known."""
        ts, load, _ = value
        state.append(load)
        if len(state) == PAST:
            past = math.fsum(state) / PAST
            predicted = float(features(ts, load, past) @ self.models[device])
            emit(device, (ts, load, past, max(0.0, predicted)))
        return state


def build(p: pm.Pipeline, stream: List[Event], plugs: Dict[Plug, PlugSpec],
          models: Dict[str, np.ndarray], n: int) -> Tuple[pm.PCollection, pm.PCollection]:
    """The DAG of Figure 5, every stage at parallelism n; returns (AVG, Predict) outputs."""
    events = (p | "Plugs" >> pm.Create([pm.TimestampedValue(e, e["ts"]) for e in stream])
              | pm.Typed(pm.U(pm.Unit, dict), period=PERIOD))
    kept = events | "JFM" >> pm.OpStateless(on_item=jfm(plugs), out=pm.U(tuple, tuple),
                                            parallelism=n)
    points = (kept | "SORT by ts" >> pm.Sort(lambda v: v, parallelism=n)
              | "LI" >> pm.OpKeyedOrdered(initial_state=li_initial_state, on_item=li_on_item,
                                          on_marker=li_on_marker, out=pm.O(tuple, tuple),
                                          parallelism=n))
    by_device = points | "Map" >> pm.OpStateless(on_item=to_device(plugs),
                                                 out=pm.U(str, tuple), parallelism=n)
    averages = (by_device | "SORT by ts, plug" >> pm.Sort(lambda v: (v[0], v[1]),
                                                           parallelism=n)
                | "AVG" >> pm.OpKeyedOrdered(initial_state=avg_initial_state,
                                             on_item=avg_on_item, on_marker=avg_on_marker,
                                             out=pm.O(str, tuple), parallelism=n))
    predictions = averages | "Predict" >> Predict(models, out=pm.O(str, tuple), parallelism=n)
    return averages, predictions


# --- evaluation ---------------------------------------------------------------------------

def per_device(collected: list) -> Dict[str, List[tuple]]:
    """Collected (device, value) items as each device's sequence."""
    out: Dict[str, List[tuple]] = defaultdict(list)
    for wv in collected:
        device, value = wv.value
        out[device].append(value)
    return dict(out)


def evaluate(averages: Dict[str, List[tuple]],
             predictions: Dict[str, List[tuple]]) -> Dict[str, List[tuple]]:
    """Per device, (ts, load, past-minute mean, predicted, actual, naive) where the next 10
    minutes are known."""
    out: Dict[str, List[tuple]] = {}
    for device, preds in predictions.items():
        load = {ts: w for ts, w, _ in averages[device]}
        rows = []
        for ts, now, past, predicted in preds:
            future = [load.get(s) for s in range(ts + 1, ts + HORIZON + 1)]
            if any(w is None for w in future):
                continue
            rows.append((ts, now, past, predicted, math.fsum(future) / 3600.0,
                         now * HORIZON / 3600.0))
        out[device] = rows
    return out


def wape(rows: List[tuple], column: int) -> float:
    """sum |estimate - actual| / sum actual, in percent."""
    actual = math.fsum(r[4] for r in rows)
    error = math.fsum(abs(r[column] - r[4]) for r in rows)
    return 100.0 * error / actual if actual > 0 else math.nan


def clock(ts: int) -> str:
    """Seconds since midnight as HH:MM:SS."""
    ts %= DAY
    return f"{ts // 3600:02d}:{ts % 3600 // 60:02d}:{ts % 60:02d}"


def digest(predictions: Dict[str, List[tuple]]) -> str:
    """A fingerprint of every prediction, exact to the bit."""
    text = repr(sorted((d, [tuple(float(x).hex() for x in row) for row in rows])
                       for d, rows in predictions.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def main(argv: Optional[List[str]] = None) -> None:
    """Generate plugs and data, train, run the pipeline, print predictions and errors."""
    options = SmartHomeOptions(sys.argv[1:] if argv is None else argv)
    if options.parallelism < 1:
        raise SystemExit("--parallelism must be >= 1")
    plugs = deployment(options.buildings, options.units, options.plugs, options.seed)
    counts = Counter(spec.device for spec in plugs.values())
    start, seconds = int(options.start_hour * 3600), int(options.minutes * 60)
    stream = generate(plugs, start, seconds, options.seed)
    print(f"{len(plugs)} plugs in {options.buildings} building(s) x {options.units} units: "
          + ", ".join(f"{d} {counts[d]}" for d in DEVICES if counts[d])
          + f"; kept by JFM: {', '.join(d for d in KEPT if counts[d])}")
    print(f"{len(stream)} measurements from {clock(start)} to {clock(start + seconds)}, "
          f"markers every {PERIOD} s")
    models = train(plugs, options.train_days, options.seed)
    print(f"linear models fitted on {options.train_days} generated days per device type")
    with pm.Pipeline(options=options) as p:
        averages, predictions = build(p, stream, plugs, models, options.parallelism)
        averages.keep()   # Predict reads it: kept to print it too
    avg = per_device(p.result.collect(averages))
    pred = per_device(p.result.collect(predictions))
    print(f"parallelism {options.parallelism}: AVG {sum(map(len, avg.values()))} averages, "
          f"Predict {sum(map(len, pred.values()))} predictions, late items "
          f"{p.result.counter('late')}")
    print(f"predictions digest: {digest(pred)}")
    rows = evaluate(avg, pred)
    for device in [d for d in KEPT if rows.get(d)][:options.show]:
        print(f"\n{device} ({counts[device]} plug(s)): energy of an average plug over the next "
              f"10 minutes")
        print(f"  {'time':<8} {'load W':>8} {'past min W':>10} {'predicted Wh':>12} "
              f"{'actual Wh':>9} {'naive Wh':>8}")
        first = rows[device][0][0]
        for ts, now, past, predicted, actual, naive in rows[device]:
            if (ts - first) % options.every == 0:
                print(f"  {clock(ts):<8} {now:>8.1f} {past:>10.1f} {predicted:>12.2f} "
                      f"{actual:>9.2f} {naive:>8.2f}")
    print(f"\n{'device':<8} {'predictions':>11} {'model MAE Wh':>12} {'model WAPE':>10} "
          f"{'naive WAPE':>10}")
    evaluated = []
    for device in KEPT:
        if rows.get(device):
            evaluated += rows[device]
            mae = math.fsum(abs(r[3] - r[4]) for r in rows[device]) / len(rows[device])
            print(f"{device:<8} {len(rows[device]):>11} {mae:>12.2f} "
                  f"{wape(rows[device], 3):>9.1f}% "
                  f"{wape(rows[device], 5):>9.1f}%")
    print(f"error (WAPE of {len(evaluated)} predictions over all device types): "
          f"{wape(evaluated, 3):.2f}% (naive: {wape(evaluated, 5):.2f}%)")


if __name__ == "__main__":
    main()
