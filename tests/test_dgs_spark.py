"""DGS on the Spark runner: in batch, each program gives exactly the local runner's sequential
output (`--workers=1`: the same values at the same timestamps) on the optimizer's plan and on
explicit ones, with ties in time broken by the input's order, and downstream steps read its
output; Spark streaming refuses a DGS step, saying where it runs. The programs are this
module's own, not test_dgs_consistency's: Spark's executors load the functions' module."""
from __future__ import annotations

import random
from collections import Counter

import pytest

import pomset as pm
from pomset.sdk.errors import PipelineConstructionError, UserCodeError
from pomset.traces.dgs import Worker, SyncPlan, optimize

SPARK = ["--runner=spark", "--quiet"]
LOCAL = ["--runner=local", "--workers=1", "--quiet"]


@pytest.fixture(scope="module")
def spark(spark_session):
    """Spark's workers cannot import this test module: ship its functions by value."""
    import sys
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def run(flags, events, trace, program, then=None):
    """The (timestamp, value) pairs of a DGS program (and the steps `then`) over `events`."""
    p = pm.Pipeline(argv=flags)
    out = p | pm.Create(events) | pm.Typed(trace, period=10) | program
    if then is not None:
        out = out | then
    result = p.run()
    return Counter((wv.ts, wv.value) for wv in result.collect(out)), result


def same_as_local(events, trace, make, then=None):
    """Run the program `make()` gives on Spark and sequentially on the local runner; Spark's
    result, checked equal to the local one and not empty."""
    local, _ = run(LOCAL, events, trace, make(), then and then())
    spark, result = run(SPARK, events, trace, make(), then and then())
    assert spark == local
    assert local
    return result


# --- event-based windowing: the sum of the values between barriers -------------------------

WINDOWS = pm.TraceType({"v": int, "b": int}, depends=[("b", "v"), ("b", "b")])


def window_update(s, tag, value, emit):
    if tag == "v":
        return s + value
    emit(s)
    return 0


def window_fork(s, left, right):
    """The sum so far goes to the side that may close the window (the left if neither)."""
    return (0, s) if "b" in right else (s, 0)


def windows(plan=None):
    return pm.DGS(init=int, update=window_update, fork=window_fork, join=lambda a, b: a + b,
                  trace=WINDOWS, plan=plan, label="windows")


def window_events(n=480, every=80, seed=0):
    """Values with a barrier every `every` events, three events per timestamp (a barrier
    shares its time with the values around it: the input's order decides)."""
    rng = random.Random(seed)
    return [pm.TimestampedValue(("b" if i % every == every - 1 else "v", rng.randrange(10)),
                                i // 3) for i in range(n)]


def test_event_windows_on_the_optimizers_plan_with_ties_in_time(spark):
    pm.dgs.check_consistency(windows(), max_examples=50)
    result = same_as_local(window_events(), WINDOWS, windows)
    assert result.metrics()["windows"]["workers"] > 1


def test_event_windows_on_a_deeper_plan_and_a_step_after_it(spark):
    """Four leaves under a worker with no tags of its own: its children's states join through
    it at each barrier; a Map reads the DGS step's output."""
    plan = optimize(windows(), 4, {"v": 100, "b": 1})
    assert any(not w.is_leaf and not w.tags for w in plan.workers)
    same_as_local(window_events(seed=1), WINDOWS, lambda: windows(plan),
                  then=lambda: pm.Map(lambda s: s * 10))


def test_streams_are_read_by_the_driver_and_give_the_local_workers_output(spark):
    """`pm.dgs.ReadStreams` on Spark: the driver reads the streams merged (ties in stream
    order), as the local runner's worker processes read them each their own."""
    events = window_events(seed=2)
    per = {"v": [[], [], []], "b": [[]]}
    for i, tv in enumerate(events):
        tag, value = tv.value
        per[tag][i % len(per[tag])].append((tv.timestamp, value))
    streams = [pm.dgs.Stream(tag, lambda got=got: iter(got), name=f"{tag}{j}")
               for tag, lists in per.items() for j, got in enumerate(lists)]
    outs = {}
    for name, flags in (("spark", SPARK), ("local", ["--runner=local", "--workers=2",
                                                     "--worker_mode=processes", "--quiet"])):
        p = pm.Pipeline(argv=flags)
        out = p | pm.dgs.ReadStreams(streams, WINDOWS) | windows()
        outs[name] = sorted((wv.ts, wv.value) for wv in p.run().collect(out))
    assert outs["spark"] == outs["local"] and len(outs["local"]) == 6


# --- fraud detection: rules are barriers, transactions flagged against the last rule ---------

FRAUD = pm.TraceType({"t": int, "r": int}, depends=[("r", "t"), ("r", "r")])


def fraud_update(s, tag, value, emit):
    """State (sum of the transactions, rules so far, aggregate at the last rule, last rule)."""
    total, rules, aggregate, rule = s
    if tag == "t":
        if value % 10 == (aggregate + rule) % 10:
            emit(("flagged", value))
        return (total + value, rules, aggregate, rule)
    emit(("aggregate", total))
    return (total, rules + 1, total, value)


def fraud_fork(s, left, right):
    """Both sides flag with the last rule; the sum goes to the side that may see a rule."""
    other = (0,) + s[1:]
    return (other, s) if "r" in right else (s, other)


def fraud_join(a, b):
    """The sums added; the rule of the side that saw more rules (the other saw none)."""
    return (a[0] + b[0],) + max(a[1:], b[1:])


def fraud():
    return pm.DGS(init=lambda: (0, 0, 0, 0), update=fraud_update, fork=fraud_fork,
                  join=fraud_join, trace=FRAUD, label="fraud")


def test_fraud_detection(spark):
    pm.dgs.check_consistency(fraud(), max_examples=50)
    rng = random.Random(2)
    events = [pm.TimestampedValue(("r" if rng.random() < 0.02 else "t", rng.randrange(100)), i)
              for i in range(400)]
    same_as_local(events, FRAUD, fraud)


# --- a counter per key: increments add, a reset reads and clears its key ---------------------

KEYS = 3
COUNTER = pm.TraceType({(kind, k): int for k in range(KEYS) for kind in ("i", "r")},
                       depends=[(("r", k), ("i", k)) for k in range(KEYS)]
                       + [(("r", k), ("r", k)) for k in range(KEYS)])


def counter_update(s, tag, value, emit):
    kind, k = tag
    if kind == "i":
        s[k] = s.get(k, 0) + value
    else:
        emit((k, s.get(k, 0)))
        s[k] = 0
    return s


def counter_fork(s, left, right):
    a, b = {}, {}
    for k, count in s.items():
        (b if ("r", k) in right else a)[k] = count
    return a, b


def counter_join(a, b):
    out = dict(a)
    for k, count in b.items():
        out[k] = out.get(k, 0) + count
    return out


def per_key_plan():
    """Each key's resets at a worker of its own, its increments in two lanes on two leaves
    under it; the keys apart under workers with no tags."""
    def key(k, name):
        return Worker(f"r{k}", [(("r", k), 0)], children=[
            Worker(f"{name}a", [(("i", k), 0)]), Worker(f"{name}b", [(("i", k), 1)])])
    return SyncPlan(Worker("root", children=[
        key(0, "k0"), Worker("rest", children=[key(1, "k1"), key(2, "k2")])]))


def counter(plan=None):
    return pm.DGS(init=dict, update=counter_update, fork=counter_fork, join=counter_join,
                  trace=COUNTER, plan=plan, label="counter")


def counter_events(n=300, seed=3):
    rng = random.Random(seed)
    return [pm.TimestampedValue((("r" if rng.random() < 0.04 else "i", rng.randrange(KEYS)),
                                 rng.randrange(1, 5)), i // 2) for i in range(n)]


def test_keyed_counter_on_the_optimizers_plan(spark):
    """The keys split over the leaves, each leaf resetting its own: no synchronizing event,
    the leaves' events (dependent ones among them) in order in one round."""
    def nonzero(a, b):
        return {k: c for k, c in a.items() if c} == {k: c for k, c in b.items() if c}
    pm.dgs.check_consistency(counter(), equal=nonzero, max_examples=50)
    same_as_local(counter_events(seed=4), COUNTER, counter)


def test_keyed_counter_on_a_plan_with_a_worker_per_key(spark):
    plan = per_key_plan()
    result = same_as_local(counter_events(), COUNTER, lambda: counter(plan),
                           then=lambda: pm.CombinePerKey(sum))
    assert result.metrics()["counter"]["workers"] == len(plan.workers)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


def test_a_state_of_a_slotted_class_shipped_by_value_comes_back(spark, tmp_path):
    """cloudpickle rebuilds a class it ships by value without real slots, so a task's object
    of it comes back with a `__dict__`, which the driver's own class lacks."""
    import subprocess
    import sys
    from pyspark import cloudpickle
    from pomset.runners.spark.dgs import _load_state
    task = ("import pickle, sys; from pomset.runners.spark import codec; "
            "sys.stdout.buffer.write(codec.dumps(pickle.loads(sys.stdin.buffer.read())))")
    back = subprocess.run([sys.executable, "-c", task], input=cloudpickle.dumps(Slotted(1, 2)),
                          capture_output=True, check=True, cwd=tmp_path).stdout
    state = _load_state(back)
    assert type(state) is Slotted and (state.a, state.b) == (1, 2)


def test_a_failing_update_names_the_step(spark):
    def update(s, tag, value, emit):
        if tag == "b":
            raise ValueError("no barriers today")
        return s + value
    program = pm.DGS(init=int, update=update, fork=lambda s, left, right: (s, 0),
                     join=lambda a, b: a + b, trace=WINDOWS, label="fails")
    with pytest.raises(UserCodeError, match="(?s)DGS 'fails'.*no barriers today"):
        run(SPARK, window_events(n=60, every=30), WINDOWS, program)


def test_spark_streaming_refuses_a_dgs_step(spark):
    with pytest.raises(PipelineConstructionError,
                       match="(?s)DGS 'windows'.*local runner with --streaming.*Spark in batch"):
        run(SPARK + ["--streaming"], window_events(n=6, every=3), WINDOWS, windows())
