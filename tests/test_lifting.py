"""Combiner lifting (`runtime.lifting`): a micro-batch's elements folded into partial
accumulators per key and window before the shuffle give the grouping the same panes and the
same late and dropped counts as the elements one by one, wherever a streaming plan lifts."""
from __future__ import annotations

from collections import Counter

from hypothesis import assume, given, settings
from hypothesis import strategies as st

import pomset as pm
from pomset.runtime.kernel_host import KernelHost
from pomset.runtime.lifting import PartialFold, Tallied, liftable, liftable_in_streams
from pomset.triggers.reducers import CombineReducer
from pomset.triggers.strategy import WindowingStrategy
from pomset.windowing import MAX_MICROS, NO_FIRING, WindowedValue

from combinefns import VectorSum

S = 1_000_000
WINDOWS = {"fixed": lambda: pm.FixedWindows(60), "sliding": lambda: pm.SlidingWindows(60, 20),
           "global": pm.GlobalWindows}
TRIGGERS = {"default": pm.DefaultTrigger,
            "early": lambda: pm.AfterWatermark(early=pm.AfterProcessingTime(2)),
            "early_and_late": lambda: pm.AfterWatermark(early=pm.AfterProcessingTime(1),
                                                        late=pm.AfterProcessingTime(1)),
            "processing_time": lambda: pm.Repeatedly(pm.AfterProcessingTime(1))}

step_st = st.tuples(
    st.lists(st.tuples(st.sampled_from("abc"), st.integers(-5, 20), st.integers(0, 600),
                       st.sampled_from([1, 1, 1, -1])), max_size=12),
    st.integers(0, 3),      # seconds the processing clock moves before the step's elements
    st.integers(0, 150))    # seconds the watermark moves after them


def _keyed(elements, window_fn):
    return [WindowedValue.raw((k, v), ts * S, w, NO_FIRING, d)
            for k, v, ts, d in elements for w in window_fn.assign_micros(ts * S, (k, v))]


def _folded(bundle, combiner):
    fold = PartialFold(pm.Sum(), combiner, "Sum", tally=True)
    fold.add(bundle, [repr(wv.value[0]).encode() for wv in bundle])
    return fold.take()[0]


@settings(max_examples=150, deadline=None)
@given(window=st.sampled_from(sorted(WINDOWS)), trigger=st.sampled_from(sorted(TRIGGERS)),
       mode=st.sampled_from(list(pm.AccumulationMode)),
       combiner=st.sampled_from(list(pm.TimestampCombiner)),
       lateness=st.sampled_from([0, 0, 30 * S]), steps=st.lists(step_st, min_size=1, max_size=6))
def test_tallied_partials_give_the_elements_panes_and_counts(window, trigger, mode, combiner,
                                                             lateness, steps):
    strategy = WindowingStrategy(window_fn=WINDOWS[window](), trigger=TRIGGERS[trigger](),
                                 accumulation_mode=mode, allowed_lateness_us=lateness,
                                 timestamp_combiner=combiner)
    assume(liftable_in_streams(pm.Sum(), strategy, True, None))
    one_by_one = KernelHost(strategy, CombineReducer(pm.Sum()), "Sum")
    lifted = KernelHost(strategy, CombineReducer(pm.Sum()), "Sum")
    pt, wm = 1_000 * S, 0
    for elements, ticks, moves in steps:
        pt += ticks * S
        wm += moves * S
        bundle = _keyed(elements, strategy.window_fn)
        outs = []
        for host, lift in ((one_by_one, False), (lifted, True)):
            out: list = []
            host.processing_time(pt, out)
            if lift:
                host.partials(_folded(bundle, combiner), out)
            else:
                host.elements(bundle, out)
            host.watermark(wm, out)
            host.end_step()
            outs.append(Counter((wv.value, wv.ts, wv.window, wv.pane, wv.diff) for wv in out))
        assert outs[0] == outs[1]
    for host in (one_by_one, lifted):
        host.watermark(MAX_MICROS, out := [])
        host.processing_time(MAX_MICROS, out)
    c, d = one_by_one.counters, lifted.counters
    assert (c.late, c.dropped_expired, c.dropped_closed) == \
        (d.late, d.dropped_expired, d.dropped_closed)


def test_a_fold_keeps_its_elements_times_only_when_tallying():
    w = pm.GlobalWindow()
    bundle = [WindowedValue.raw(("a", v), ts, w, NO_FIRING, d)
              for v, ts, d in ((3, 5, 1), (4, 9, 1), (3, 7, -1))]
    for tally in (False, True):
        fold = PartialFold(pm.Sum(), pm.TimestampCombiner.OUTPUT_AT_EARLIEST, "S", tally=tally)
        fold.add(bundle, [b"a"] * 3)
        [partial], keys = fold.take()
        assert keys == [b"a"] and partial.ts == 5 and not fold
        acc = partial.value[1]
        assert (acc.acc, acc.times) == (4, [5, 9, 7]) if tally else acc == 4
        assert type(acc) is (Tallied if tally else int)


def test_what_lifts_a_combine():
    fixed = WindowingStrategy(window_fn=pm.FixedWindows(60))
    assert liftable(pm.Sum(), fixed, False, None)
    assert liftable(pm.Sum(), fixed, True, None)         # retractions invert additions
    assert not liftable(pm.ToList(), fixed, True, None)  # a fresh accumulator cannot retract
    assert liftable(pm.ToList(), fixed, False, None)
    assert not liftable(None, fixed, False, None)        # a GroupByKey
    assert not liftable(pm.Sum(), fixed, False, "late")  # late elements go out as they came
    assert not liftable(pm.Sum(), fixed.with_(window_fn=pm.Sessions(10)), False, None)
    late = fixed.with_(allowed_lateness_us=S)
    assert liftable(pm.Sum(), late, False, None) and not liftable_in_streams(pm.Sum(), late, False, None)
    assert liftable_in_streams(pm.Sum(), late.with_(window_fn=pm.GlobalWindows()), False, None)
    counting = fixed.with_(trigger=pm.AfterWatermark(early=pm.AfterCount(2)))
    assert not liftable_in_streams(pm.Sum(), counting, False, None)


rows_st = st.lists(st.tuples(st.sampled_from("abc"), st.integers(-5, 20), st.integers(0, 600)),
                   max_size=12)


@settings(max_examples=150, deadline=None)
@given(trigger=st.sampled_from(["default", "early_and_late"]), vector=st.booleans(),
       lateness=st.sampled_from([0, 30 * S, 200 * S]),
       combiner=st.sampled_from(list(pm.TimestampCombiner)),
       steps=st.lists(st.tuples(rows_st, st.integers(0, 3), st.integers(0, 150)), min_size=1,
                      max_size=6))
def test_columnar_partials_count_their_rows_late_and_dropped(trigger, vector, lateness,
                                                             combiner, steps):
    """A schema'd combine's rows folded by the runtime's aggregators (`columnar.aggregator`,
    with `tally`) count late and dropped as the rows one by one, under the general kernel and
    under the timed-watermark host, allowed lateness or not; each window's last pane holds
    what it does one by one (a partial fires once where its rows might have fired twice)."""
    import pyarrow as pa
    from pomset.runtime import columnar
    from pomset.runtime.timed_combine import TimedCombineHost, fits
    fn = VectorSum() if vector else pm.Sum()
    strategy = WindowingStrategy(window_fn=pm.FixedWindows(60), trigger=TRIGGERS[trigger](),
                                 accumulation_mode=pm.AccumulationMode.ACCUMULATING,
                                 allowed_lateness_us=lateness, timestamp_combiner=combiner)
    hosts = [lambda: KernelHost(strategy, CombineReducer(fn), "Sum")]
    if fits(strategy, CombineReducer(fn)):
        hosts.append(lambda: TimedCombineHost(strategy, CombineReducer(fn), "Sum"))
    for make in hosts:
        one_by_one, folded = make(), make()
        last = [{}, {}]
        pt, wm = 1_000 * S, 0
        for rows, ticks, moves in steps:
            pt += ticks * S
            wm += moves * S
            bundle = _keyed([(k, v, ts, 1) for k, v, ts in rows], strategy.window_fn)
            agg = columnar.aggregator(fn, strategy.timestamp_combiner, tally=True)
            if bundle:
                table = pa.table({columnar.KEY: [wv.value[0] for wv in bundle],
                                  columnar.VALUE: pa.array([wv.value[1] for wv in bundle],
                                                           pa.int64()),
                                  columnar.TS: pa.array([wv.ts for wv in bundle], pa.int64()),
                                  columnar.WS: [wv.window.start_us for wv in bundle],
                                  columnar.WE: [wv.window.max_ts + 1 for wv in bundle]})
                assert agg.add(columnar.Columns(table, keys=[columnar.KEY],
                                                values=[columnar.VALUE], pairs=True))
            for i, host in enumerate((one_by_one, folded)):
                out: list = []
                host.processing_time(pt, out)
                if i:
                    host.partials(agg.partials() if agg else [], out)
                else:
                    host.elements(bundle, out)
                host.watermark(wm, out)
                host.end_step()
                last[i].update(((wv.value[0], wv.window), wv.value[1]) for wv in out)
        for i, host in enumerate((one_by_one, folded)):
            host.watermark(MAX_MICROS, out := [])
            host.processing_time(MAX_MICROS, out)
            last[i].update(((wv.value[0], wv.window), wv.value[1]) for wv in out)
        assert last[0] == last[1]
        c, d = one_by_one.counters, folded.counters
        assert (c.late, c.dropped_expired, c.dropped_closed) == \
            (d.late, d.dropped_expired, d.dropped_closed)
