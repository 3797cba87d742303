"""Fraud detection as a DGS program (Kallas et al., Sec. 1 and 4.1): card transactions arrive
on many streams, and an unsupervised model flags those far from what the model has learned:
per merchant category, the amount, the distance from the card's home and the time since the
card's previous transaction (each's mean and spread) and the hours of the day; how often each
country is seen. The model
is retrained at every rule event, from everything since the last one, so every transaction
depends on the rules and the rules on every transaction: no key splits this computation.
As a DGS program it is a sequential `update`, the dependence (rules depend on everything,
transactions are independent of each other), and a fork that gives both sides the model and
a join that adds up what the two sides learned.

    python examples/fraud_detection.py [--runner=local|spark] [--workers=N --worker_mode=processes]
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
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402

#: a transaction: (id, amount in cents, merchant category, country, hour of day, distance from
#: the card's home in km, minutes since the card's previous transaction)
Txn = Tuple[int, int, str, str, int, int, int]
TRACE = pm.TraceType({"txn": tuple, "rule": int}, depends=[("rule", "txn"), ("rule", "rule")])
CATEGORIES = ["grocery", "fuel", "travel", "electronics", "dining", "pharmacy", "apparel",
              "gaming"]
COUNTRIES = ["DE", "FR", "US", "GB", "NL", "ES", "IT", "PL", "SE", "BR"]
#: the numeric features the model learns per category: their places in a transaction
FEATURES = (1, 5, 6)
ZERO = ((0, 0, 0),) * len(FEATURES)


class Model:
    """What the detector knows, as learned at the last rule (`stats`, `hours`, `countries`)
    and since then (`recent_*`): per merchant category, each numeric feature's (count, sum,
    sum of squares) and the transactions per hour of day; per country a count. Also the
    rule's threshold, how many rules came (`generation`), and the window's transactions and
    flags. Integer sums add up exactly, so the order in which parallel parts are joined
    cannot change a decision."""

    __slots__ = ("stats", "hours", "countries", "recent_stats", "recent_hours",
                 "recent_countries", "threshold", "generation", "seen", "flagged")

    def __init__(self, stats: Dict[str, Tuple[Tuple[int, int, int], ...]],
                 hours: Dict[str, Tuple[int, ...]], countries: Dict[str, int],
                 threshold: float, generation: int = 0) -> None:
        self.stats = stats
        self.hours = hours
        self.countries = countries
        self.recent_stats: Dict[str, List[List[int]]] = {}
        self.recent_hours: Dict[str, List[int]] = {}
        self.recent_countries: Dict[str, int] = {}
        self.threshold = threshold
        self.generation = generation
        self.seen = 0
        self.flagged = 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Model) and all(
            getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __repr__(self) -> str:
        return (f"Model(generation={self.generation}, recent={self.recent_stats}, "
                f"countries={self.recent_countries}, seen={self.seen}, "
                f"flagged={self.flagged})")


def score(model: Model, txn: Txn) -> float:
    """How unusual a transaction is for the model: each feature's distance from its
    category's mean in standard deviations (at most 6), the surprise of its hour for the
    category and of its country."""
    category = txn[2]
    z = 0.0
    for (n, s, ss), place in zip(model.stats.get(category, ZERO), FEATURES):
        if n > 1:
            mean = s / n
            var = ss / n - mean * mean
            if var > 0:
                z += min(6.0, abs(txn[place] - mean) / math.sqrt(var))
    hours = model.hours.get(category)
    hour = -math.log((hours[txn[4]] + 1) / (sum(hours) + 24)) / math.log(24) if hours else 0.0
    total = sum(model.countries.values())
    country = (-math.log((model.countries.get(txn[3], 0) + 1) / (total + len(COUNTRIES)))
               if total else 0.0)
    return z / len(FEATURES) + hour + 0.5 * country


def learn(state: Model, txn: Txn) -> None:
    """Add a transaction to what was learned since the last rule."""
    category = txn[2]
    acc = state.recent_stats.get(category)
    if acc is None:
        acc = state.recent_stats[category] = [[0, 0, 0] for _ in FEATURES]
    for a, place in zip(acc, FEATURES):
        x = txn[place]
        a[0] += 1
        a[1] += x
        a[2] += x * x
    hours = state.recent_hours.get(category)
    if hours is None:
        hours = state.recent_hours[category] = [0] * 24
    hours[txn[4]] += 1
    state.recent_countries[txn[3]] = state.recent_countries.get(txn[3], 0) + 1


def update(state: Model, tag: str, value: Any, emit: Callable[[Any], None]) -> Model:
    """The sequential program: score and learn from a transaction; at a rule, retrain."""
    if tag == "txn":
        state.seen += 1
        if score(state, value) > state.threshold:
            state.flagged += 1
            emit(("fraud", value[0]))
        learn(state, value)
        return state
    emit(("retrained", value, state.seen, state.flagged))
    stats = dict(state.stats)
    for category, acc in state.recent_stats.items():
        stats[category] = tuple((m[0] + a[0], m[1] + a[1], m[2] + a[2])
                                for m, a in zip(stats.get(category, ZERO), acc))
    hours = dict(state.hours)
    for category, counts in state.recent_hours.items():
        hours[category] = tuple(map(sum, zip(hours.get(category, (0,) * 24), counts)))
    countries = dict(state.countries)
    for country, n in state.recent_countries.items():
        countries[country] = countries.get(country, 0) + n
    return Model(stats, hours, countries, value / 10, state.generation + 1)


def fork(state: Model, left: FrozenSet[str], right: FrozenSet[str]) -> Tuple[Model, Model]:
    """Both sides score with the same model; what was learned since the last rule goes to
    the side that may retrain (the left if neither may), the other starts from nothing."""
    other = Model(state.stats, state.hours, state.countries, state.threshold, state.generation)
    return (other, state) if "rule" in right else (state, other)


def join(left: Model, right: Model) -> Model:
    """The newer model (a side that retrained took no transactions on the other side), and
    what both sides learned since, added up."""
    base, other = (right, left) if right.generation > left.generation else (left, right)
    for category, acc in other.recent_stats.items():
        mine = base.recent_stats.get(category)
        if mine is None:
            base.recent_stats[category] = [list(a) for a in acc]
        else:
            for m, a in zip(mine, acc):
                m[0] += a[0]
                m[1] += a[1]
                m[2] += a[2]
    for category, counts in other.recent_hours.items():
        mine = base.recent_hours.get(category)
        base.recent_hours[category] = (list(counts) if mine is None
                                       else [x + y for x, y in zip(mine, counts)])
    for country, n in other.recent_countries.items():
        base.recent_countries[country] = base.recent_countries.get(country, 0) + n
    base.seen += other.seen
    base.flagged += other.flagged
    return base


def initial() -> Model:
    return Model({}, {}, {}, threshold=4.5)


class FraudDetection(pm.DGS):
    """The detector as a DGS program, for `events | FraudDetection()`."""

    trace = TRACE

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(init=initial, update=update, fork=fork, join=join, **kwargs)


def generate(n: int, per_rule: int = 10_000, seed: int = 7) -> List[Tuple[float, Tuple[str, Any]]]:
    """`n` transactions a millisecond apart, a rule every `per_rule` of them; a few are
    unusual (large amounts, far from home, in quick succession, rare countries, at night)."""
    rng = random.Random(seed)
    base = {c: rng.randint(500, 20_000) for c in CATEGORIES}
    weights = [2 ** -i for i in range(len(COUNTRIES))]
    out: List[Tuple[float, Tuple[str, Any]]] = []
    for i in range(n):
        category = rng.choice(CATEGORIES)
        amount = max(1, int(rng.gauss(base[category], base[category] / 4)))
        distance, gap = int(rng.expovariate(1 / 20)), int(rng.expovariate(1 / 600))
        if rng.random() < 0.002:
            amount, distance, gap = amount * 12, distance + 3000, 1
        country = rng.choices(COUNTRIES, weights)[0]
        hour = rng.randrange(24) if rng.random() < 0.1 else rng.randrange(8, 22)
        out.append((i / 1000, ("txn", (i, amount, category, country, hour, distance, gap))))
        if i % per_rule == per_rule - 1:
            out.append((i / 1000 + 0.0005, ("rule", rng.randint(40, 55))))
    return out


def sequential(events: List[Tuple[float, Tuple[str, Any]]]) -> List[Tuple[float, Any]]:
    """The specification: the sequential program over the events sorted by timestamp."""
    state, outs, result = initial(), [], []
    for ts, (tag, value) in sorted(events, key=lambda e: e[0]):
        state = update(state, tag, value, outs.append)
        result.extend((ts, o) for o in outs)
        outs.clear()
    return result


class FraudOptions(pm.PipelineOptions):
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--events", type=int, default=50_000, help="transactions to make")
        parser.add_argument("--per_rule", type=int, default=10_000,
                            help="transactions between two rules")


def main(argv: Optional[List[str]] = None) -> int:
    options = FraudOptions(argv if argv is not None else sys.argv[1:])
    program = FraudDetection(label="FraudDetection")
    pm.dgs.check_consistency(program, max_examples=100, values={
        "txn": _txns(), "rule": __import__("hypothesis").strategies.integers(40, 55)})
    print("consistent: C1-C3 hold on generated states and events")
    leaves = (2 if options.runner != "local" else options.workers
              if options.worker_mode in ("processes", "threads") else 1)
    print(pm.dgs.optimize(program, leaves, {"txn": options.per_rule, "rule": 1}).describe())
    events = generate(options.events, options.per_rule)
    with pm.Pipeline(options=options) as p:
        out = (p | pm.Create([pm.TimestampedValue(e, ts) for ts, e in events])
               | pm.Typed(TRACE, period=1) | program)
    got = [(float(wv.timestamp), wv.value) for wv in p.result.collect(out)]
    want = [(float(pm.Timestamp.of(ts)), o) for ts, o in sequential(events)]
    frauds = sum(1 for _, o in got if o[0] == "fraud")
    ok = sorted(got, key=repr) == sorted(want, key=repr)
    print(f"{len(events):,} events, {frauds:,} flagged; equal to the sequential program: "
          f"{'yes' if ok else 'NO'}")
    return 0 if ok else 1


def _txns() -> Any:
    from hypothesis import strategies as st
    return st.tuples(st.integers(0, 10**6), st.integers(1, 50_000), st.sampled_from(CATEGORIES),
                     st.sampled_from(COUNTRIES), st.integers(0, 23), st.integers(0, 5000),
                     st.integers(0, 10_000))


if __name__ == "__main__":
    sys.exit(main())
