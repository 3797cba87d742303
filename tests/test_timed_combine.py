"""The windowed combine held a window at a time (`runtime.timed_combine`) gives what the
kernel under `KernelHost` gives: the same panes in every step, the same output watermarks and
counters, over random steps (elements or partial accumulators, late and expired data, clock
and watermark moves in a step's order, a second clock move after the watermark as Spark's
real clock makes), every non-merging window kind, the trigger family it takes, accumulating
and discarding, with its state through bytes after every step as Spark keeps it."""
from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pomset as pm
from pomset.runtime import timed_combine
from pomset.runtime.kernel_host import KernelHost
from pomset.runtime.timed_combine import InMemoryTables, TimedCombineHost
from pomset.sdk.errors import UserCodeError
from pomset.triggers import kernel as kernel_mod
from pomset.triggers.drivers import TriggerDriver
from pomset.triggers.reducers import BufferReducer, CombineReducer
from pomset.triggers.strategy import WindowingStrategy
from pomset.windowing import MAX_MICROS, WindowedValue
from pomset.windowing.pane import NO_FIRING

S = 1_000_000
WINDOWS = {"fixed": pm.FixedWindows(10), "sliding": pm.SlidingWindows(20, 5),
           "global": pm.GlobalWindows()}
TRIGGERS = {"early+late": pm.AfterWatermark(early=pm.AfterProcessingTime(2),
                                            late=pm.AfterProcessingTime(1)),
            "early": pm.AfterWatermark(early=pm.AfterProcessingTime(3)),
            "late": pm.AfterWatermark(late=pm.AfterProcessingTime(1)),
            "late at once": pm.AfterWatermark(late=pm.AfterProcessingTime(0)),
            "early at once": pm.AfterWatermark(early=pm.AfterProcessingTime(0))}
MODES = [pm.AccumulationMode.ACCUMULATING, pm.AccumulationMode.DISCARDING]


def _strategy(window: str, trigger: str, mode, lateness_s: int) -> WindowingStrategy:
    return WindowingStrategy(WINDOWS[window], TRIGGERS[trigger], mode, lateness_s * S)


class _BytesTables(InMemoryTables):
    """Tables kept as bytes, as Spark's state store keeps them."""

    def load(self, window):
        data = self.tables.get(pickle.dumps(window))
        return {} if data is None else pickle.loads(data)

    def save(self, tables):
        for window, table in tables.items():
            if table:
                self.tables[pickle.dumps(window)] = pickle.dumps(table)
            else:
                self.tables.pop(pickle.dumps(window), None)


def _bundle(strategy, elements, partial: bool) -> list:
    fn = pm.Sum()
    out = []
    for key, value, ts in elements:
        for w in strategy.window_fn.assign_micros(ts, value):
            v = fn.add_input(fn.create_accumulator(), value) if partial else value
            out.append(WindowedValue.raw((key, v), ts, w, NO_FIRING, 1))
    return out


def _panes(out: list) -> list:
    return sorted(repr((wv.value, wv.ts, wv.window, wv.pane, wv.diff)) for wv in out)


def _run(strategy, steps, partial: bool, fresh_each_step: bool, through_objects: bool = False):
    """Both hosts over `steps` [(clock advance, elements, watermark, clock advance after)]:
    per step (panes, output watermark) of each, and the counters at the end. With
    `through_objects`, the kernel asks the trigger objects (`TriggerDriver`), not the timed
    driver the timed combine asks."""
    with pytest.MonkeyPatch.context() as mp:
        if through_objects:
            mp.setattr(kernel_mod, "driver", TriggerDriver)
        general = KernelHost(strategy, CombineReducer(pm.Sum()), "g")
    tables = _BytesTables()
    meta = None
    timed = TimedCombineHost(strategy, CombineReducer(pm.Sum()), "g", tables)
    got, want = [], []
    pt, totals = 0, (0, 0, 0)
    for advance, elements, wm, after in steps:
        if fresh_each_step:
            timed = TimedCombineHost(strategy, CombineReducer(pm.Sum()), "g", tables)
            if meta is not None:
                timed.restore_meta(pickle.loads(meta))
        pt += advance
        bundle = _bundle(strategy, elements, partial)
        for host, into in ((general, want), (timed, got)):
            out: list = []
            host.processing_time(pt, out)
            if bundle:
                (host.partials if partial else host.elements)(bundle, out)
            host.watermark(wm, out)
            if after:
                host.processing_time(pt + after, out)
            into.append((_panes(out), host.output_watermark()))
            host.end_step()
        pt += after
        meta = pickle.dumps(timed.save_meta())
        if fresh_each_step:   # a fresh host counts one step's
            totals = [t + c for t, c in zip(totals, _counts(timed))]
    if not fresh_each_step:
        totals = _counts(timed)
    return got, want, tuple(totals), _counts(general)


def _counts(host) -> tuple:
    return host.counters.late, host.counters.dropped_expired, host.counters.dropped_closed


elements = st.lists(st.tuples(st.sampled_from("abc"), st.integers(-3, 9),
                              st.integers(0, 120).map(lambda s: s * S)), max_size=6)
steps = st.lists(st.tuples(st.integers(0, 3).map(lambda s: s * S), elements,
                           st.integers(0, 150).map(lambda s: s * S),
                           st.integers(0, 3).map(lambda s: s * S)), max_size=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(window=st.sampled_from(sorted(WINDOWS)), trigger=st.sampled_from(sorted(TRIGGERS)),
       mode=st.sampled_from(MODES), lateness=st.sampled_from([0, 5, 30]), steps=steps,
       partial=st.booleans(), fresh=st.booleans(), through_objects=st.booleans())
def test_the_same_panes_watermarks_and_counters_as_the_kernel(window, trigger, mode, lateness,
                                                               steps, partial, fresh,
                                                               through_objects):
    # watermarks never go back within a run; the end of input closes everything
    wms = []
    for _, _, wm, _ in steps:
        wms.append(max([wm] + wms[-1:]))
    steps = [(a, e, wm, b) for (a, e, _, b), wm in zip(steps, wms)] + [(1 * S, [], MAX_MICROS, 0)]
    got, want, got_counts, want_counts = _run(_strategy(window, trigger, mode, lateness), steps,
                                              partial, fresh, through_objects)
    assert got == want
    assert got_counts == want_counts


def test_a_worked_example_early_on_time_and_late_panes():
    """Fixed 10 s windows, early and late panes, 5 s allowed lateness: what each step emits."""
    strategy = _strategy("fixed", "early+late", pm.AccumulationMode.ACCUMULATING, 5)
    steps = [(0, [("a", 1, 1 * S), ("a", 2, 3 * S)], 0, 0),
             (3 * S, [], 5 * S, 0),                 # the early pane fires (2 s after)
             (1 * S, [("a", 4, 4 * S)], 12 * S, 0),  # the watermark passes 10 s: on time
             (1 * S, [("a", 8, 6 * S)], 12 * S, 2 * S),   # late, fired 1 s after
             (1 * S, [("a", 16, 7 * S)], 16 * S, 0),      # in before its window expires
             (1 * S, [("a", 32, 8 * S)], 16 * S, 0)]      # expired: dropped
    got, want, counts, _ = _run(strategy, steps, partial=False, fresh_each_step=True)
    assert got == want
    panes = [[p.split("PaneInfo(")[1].split(")")[0] for p in step] for step, _ in got]
    assert panes == [[], ["EARLY #0/-1 first"], ["ON_TIME #1/0"], ["LATE #2/1"],
                     ["LATE #3/2 last"], []]
    assert [panes[0].split(", ")[1] for panes, _ in got[1:5]] == ["3)", "7)", "15)", "31)"]
    assert counts == (3, 1, 0)   # late: the 4, the 8 and the 16; the 32 dropped (expired)


def test_it_takes_only_what_it_gives_the_same_answer_for():
    timed = _strategy("fixed", "early+late", pm.AccumulationMode.ACCUMULATING, 5)
    assert timed_combine.fits(timed, CombineReducer(pm.Sum()))
    assert not timed_combine.fits(timed, CombineReducer(pm.Sum()), keep_late=True)
    assert not timed_combine.fits(timed, BufferReducer())
    for other in (timed.with_(window_fn=pm.Sessions(5)),
                  timed.with_(trigger=pm.AfterWatermark()),
                  timed.with_(trigger=pm.AfterWatermark(early=pm.AfterCount(2))),
                  timed.with_(accumulation_mode=pm.AccumulationMode.RETRACTING),
                  timed.with_(timestamp_combiner=pm.TimestampCombiner.OUTPUT_AT_LATEST)):
        assert not timed_combine.fits(other, CombineReducer(pm.Sum()))


@pytest.mark.parametrize("element, says", [
    (WindowedValue.raw("not a pair", 0, pm.GlobalWindows().assign_micros(0, None)[0], NO_FIRING, 1),
     "needs (key, value) pairs"),
    (WindowedValue.raw(("a", "x"), 0, pm.GlobalWindows().assign_micros(0, None)[0], NO_FIRING, 1),
     "failed on element ('a', 'x')")])
def test_a_bad_element_is_a_user_error_naming_it(element, says):
    strategy = _strategy("global", "early", pm.AccumulationMode.ACCUMULATING, 0)
    host = TimedCombineHost(strategy, CombineReducer(pm.Sum()), "sums")
    with pytest.raises(UserCodeError, match="transform 'sums'") as e:
        host.elements([element], [])
    assert says in str(e.value)
