"""Partitioned groupings (Prasaad et al., Sec. 4): a grouping split into buckets by key, run
by several worker threads (through the hybrid queue) or processes (each owning its buckets),
gives every key the panes the sequential executor gives it, in the same order, for random
streams, windows, triggers and accumulation modes; panes caused by elements keep the
elements' order across keys; a checkpoint taken at any number of buckets restores at any
other; a failing CombineFn fails the run naming the step, with the user's exception."""
from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings, strategies as st

import pomset as pm
from pomset.runtime.kernel_host import KernelHost
from pomset.runtime.partitioned import PartitionedHost, new_buckets
from pomset.runners.local.lanes import ThreadLanes
from pomset.sdk.errors import UserCodeError
from pomset.sdk.options import SCHEDULES
from pomset.triggers.reducers import CombineReducer
from pomset.triggers.strategy import WindowingStrategy
from pomset.windowing import MAX_MICROS, NO_FIRING, WindowedValue
from test_parallel_executor import by_key
from test_properties import (AGGREGATIONS, LATENESS, agg_st, eager_trigger_st, events_st,
                             make_stream, steps_st, window_fn, window_st)

PARALLEL = [["--workers=2", "--worker_mode=processes"], ["--workers=3", "--worker_mode=threads"],
            ["--workers=2", "--worker_mode=threads"]]
#: the parallel executor's flags under every scheduler, random picks with any seed included
parallel_st = st.builds(lambda flags, schedule, seed: [*flags, f"--schedule={schedule}",
                                                       f"--schedule_seed={seed}"],
                        st.sampled_from(PARALLEL), st.sampled_from(SCHEDULES),
                        st.integers(0, 10_000))


def _run(flags, steps, spec, trigger, mode, agg):
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", *flags]))
    out = (p | make_stream(steps)
           | pm.WindowInto(window_fn(spec), trigger=trigger, accumulation_mode=mode,
                           allowed_lateness=LATENESS)
           | AGGREGATIONS[agg]()).keep()
    result = p.run()
    panes = [(wv.value[0], wv.value[1] if agg != "gbk" else list(wv.value[1]), wv.ts,
              wv.window, wv.pane, wv.diff) for wv in result.collect(out)]
    return panes, result.metrics()


@settings(max_examples=40, deadline=None)
@given(st.data(), events_st, window_st, eager_trigger_st, st.sampled_from(list(pm.AccumulationMode)),
       agg_st, parallel_st)
def test_every_key_gets_the_sequential_panes_in_order(data, events, spec, trigger, mode, agg,
                                                      flags):
    steps = data.draw(steps_st(events))
    want, want_metrics = _run(["--workers=1"], steps, spec, trigger, mode, agg)
    got, got_metrics = _run(flags, steps, spec, trigger, mode, agg)
    assert by_key(got) == by_key(want)
    assert got_metrics == want_metrics


@pytest.mark.parametrize("flags", PARALLEL)
def test_panes_caused_by_elements_keep_the_elements_order(flags):
    rng = random.Random(7)
    events = [(rng.choice("abcdefgh"), rng.randrange(10), rng.randrange(100)) for _ in range(200)]
    steps = [("e", events[i:i + 25]) for i in range(0, len(events), 25)]
    trigger = pm.AfterWatermark(early=pm.AfterCount(1))
    want, _ = _run(["--workers=1"], steps, ("fixed", 30, 0), trigger,
                   pm.AccumulationMode.ACCUMULATING, "sum")
    got, _ = _run(flags, steps, ("fixed", 30, 0), trigger, pm.AccumulationMode.ACCUMULATING,
                  "sum")
    early = [p for p in want if p[4].timing.name == "EARLY"]
    assert len(early) == len(events)
    assert [p for p in got if p[4].timing.name == "EARLY"] == early


@pytest.mark.parametrize("flags", PARALLEL)
def test_a_failing_combine_fails_the_run_naming_the_step_and_its_cause(flags):
    def add(values):
        values = list(values)
        if 13 in values:
            raise ValueError("unlucky")
        return sum(values)

    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", *flags]))
    (p | pm.Create([(i % 5, i) for i in range(100)]) | "add up" >> pm.CombinePerKey(add))
    with pytest.raises(UserCodeError, match="add up") as info:
        p.run()
    assert isinstance(info.value.__cause__, ValueError)


def _host_ops(seed: int):
    """A random run of one grouping: bundles of (key, value) elements in fixed windows,
    processing-time and watermark moves, step ends."""
    rng = random.Random(seed)
    window_fn = pm.FixedWindows(10)
    ops, wm = [], 0
    for _ in range(30):
        bundle = []
        for _ in range(rng.randrange(8)):
            ts = (wm + rng.randrange(-5, 40)) * 1_000_000
            for w in window_fn.assign_windows(ts / 1e6, None):
                bundle.append(WindowedValue.raw((rng.choice("abcdefg"), rng.randrange(9)), ts, w,
                                                NO_FIRING, 1))
        ops.append(("elements", bundle))
        if rng.random() < 0.5:
            wm += rng.randrange(15)
            ops.append(("watermark", wm * 1_000_000))
        ops.append(("end", None))
    ops.append(("watermark", MAX_MICROS))
    return ops


def _strategy():
    return WindowingStrategy(pm.FixedWindows(10), trigger=pm.AfterWatermark(
        early=pm.AfterCount(2), late=pm.AfterCount(1)), allowed_lateness_us=20_000_000,
        accumulation_mode=pm.AccumulationMode.ACCUMULATING)


def _apply(host, op, arg, out):
    if op == "elements":
        host.processing_time(0, out)
        host.elements(arg, out)
    elif op == "watermark":
        host.watermark(arg, out)
    else:
        host.end_step()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), cut=st.integers(0, 60), before=st.integers(1, 9),
       after=st.integers(0, 9), queue=st.sampled_from(["hybrid", "partitioned"]))
def test_a_checkpoint_restores_at_any_number_of_buckets(seed, cut, before, after, queue):
    """`after` 0 restores into one host, as the sequential executor keeps it; the buckets
    run through the hybrid queue or the partitioned baseline."""
    ops = _host_ops(seed)
    cut = min(cut, len(ops))
    pool = ThreadPoolExecutor(3)

    def host(buckets):
        new = lambda: KernelHost(_strategy(), CombineReducer(pm.Sum()), "g")
        if buckets == 0:
            return new()
        return PartitionedHost(buckets, ThreadLanes(new_buckets(new, buckets), 3, pool.submit, queue))

    want: list = []
    reference = host(0)
    for op, arg in ops:
        _apply(reference, op, arg, want)
    got: list = []
    first = host(before)
    for op, arg in ops[:cut]:
        _apply(first, op, arg, got)
    second = host(after)
    second.load(first.save())
    for op, arg in ops[cut:]:
        _apply(second, op, arg, got)
    pool.shutdown()

    def rows(panes):
        return by_key([(wv.value[0], wv.value[1], wv.ts, wv.window, wv.pane)
                       for wv in panes])
    assert rows(got) == rows(want)
    c1, c2 = reference.counters, second.counters
    assert (c1.late, c1.dropped_expired, c1.dropped_closed) == \
        (c2.late, c2.dropped_expired, c2.dropped_closed)
