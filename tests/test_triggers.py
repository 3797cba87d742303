"""When in processing time: every trigger and their compositions, run through TestStream
pipelines on the local runner, asserting pane values, PaneInfo and diffs (Beam semantics
where Beam defines them; the paper's where Beam is silent)."""
from __future__ import annotations

import pytest

import pomset as pm

TV = pm.TimestampedValue
EARLY, ON_TIME, LATE = pm.PaneTiming.EARLY, pm.PaneTiming.ON_TIME, pm.PaneTiming.LATE
DISCARDING = pm.AccumulationMode.DISCARDING
ACCUMULATING = pm.AccumulationMode.ACCUMULATING
RETRACTING = pm.AccumulationMode.RETRACTING
GW = pm.GlobalWindow()


def iw(s, e):
    return pm.IntervalWindow(s, e)


def run(source, windowing, agg=None):
    """source | windowing | agg (default CombinePerKey(sum)); returns (result, panes)."""
    p = pm.Pipeline(runner="local")
    out = p | source | windowing | (agg if agg is not None else pm.CombinePerKey(sum))
    result = p.run()
    return result, result.collect(out)


def pane(value, timing, index, nonspec, first=False, last=False, diff=1):
    return (value, timing, index, nonspec, first, last, diff)


def summary(panes, with_key=False):
    """(value, timing, index, nonspeculative_index, is_first, is_last, diff) per output."""
    return [((wv.value if with_key else wv.value[1]), wv.pane.timing, wv.pane.index,
             wv.pane.nonspeculative_index, wv.pane.is_first, wv.pane.is_last, wv.diff)
            for wv in panes]


def per_window(panes):
    """{window: [(value, timing), ...]} in emission order: panes of one window are ordered,
    panes of different windows fired by the same step need not be."""
    out = {}
    for wv in panes:
        out.setdefault(wv.window, []).append((wv.value[1], wv.pane.timing))
    return out


def one_by_one(values, ts=1):
    """A TestStream delivering ("k", v) at event time `ts`, one element per bundle."""
    s = pm.TestStream()
    for v in values:
        s = s.add_elements([TV(("k", v), ts)])
    return s


def stream_of(*steps, endless=False):
    s = pm.TestStream(endless=endless)
    for step in steps:
        kind, arg = step
        if kind == "e":
            s = s.add_elements(arg)
        elif kind == "wm":
            s = s.advance_watermark_to_infinity() if arg == "inf" else s.advance_watermark_to(arg)
        elif kind == "pt":
            s = s.advance_processing_time(arg)
    return s


def e(*pairs):
    """Elements ("k", v) at event times: e((v, t), ...)."""
    return ("e", [TV(("k", v), t) for v, t in pairs])


def wm(t):
    return ("wm", t)


def pt(d):
    return ("pt", d)


# --- the default trigger, watermark, lateness ----------------------------------------------------

class TestDefaultTrigger:
    def test_on_time_pane_then_one_late_pane_per_late_element(self):
        src = stream_of(e((1, 1), (2, 2)), wm(5), e((3, 3)), wm(11), e((4, 4)), wm(15), e((5, 5)),
                        wm("inf"))
        result, panes = run(src, pm.WindowInto(pm.FixedWindows(10), allowed_lateness=100))
        assert summary(panes) == [
            pane(6, ON_TIME, 0, 0, first=True),
            pane(4, LATE, 1, 1),
            pane(5, LATE, 2, 2),
        ]
        assert all(wv.window == iw(0, 10) for wv in panes)
        assert all(wv.timestamp == iw(0, 10).max_timestamp() for wv in panes)
        assert result.counter("dropped") == 0

    def test_batch_default_single_pane_per_window(self):
        data = [TV(("a", 1), 1), TV(("a", 2), 12), TV(("b", 3), 3), TV(("a", 4), 9)]
        _, panes = run(pm.Create(data), pm.WindowInto(pm.FixedWindows(10)))
        got = sorted((wv.value, wv.window, wv.pane) for wv in panes)
        only = pm.PaneInfo(True, True, ON_TIME, 0, 0)
        assert got == sorted([(("a", 5), iw(0, 10), only), (("a", 2), iw(10, 20), only),
                              (("b", 3), iw(0, 10), only)])

    def test_default_trigger_is_repeatedly_after_watermark(self):
        assert pm.DefaultTrigger() == pm.DefaultTrigger()
        src = stream_of(e((1, 1)), wm(20), e((2, 2)), e((3, 3)), wm("inf"))
        _, a = run(src, pm.WindowInto(pm.FixedWindows(10), allowed_lateness=60))
        _, b = run(src, pm.WindowInto(pm.FixedWindows(10), trigger=pm.Repeatedly(pm.AfterWatermark()),
                                      allowed_lateness=60))
        assert summary(a) == summary(b) == [pane(1, ON_TIME, 0, 0, first=True),
                                            pane(2, LATE, 1, 1), pane(3, LATE, 2, 2)]

    def test_no_lateness_makes_the_on_time_pane_last_and_drops_late_data(self):
        src = stream_of(e((1, 1)), wm(10), e((2, 2)), wm("inf"))
        result, panes = run(src, pm.WindowInto(pm.FixedWindows(10)))
        assert summary(panes) == [pane(1, ON_TIME, 0, 0, first=True, last=True)]
        assert result.counter("dropped") == 1

    def test_window_with_only_late_data_starts_with_a_late_pane(self):
        src = stream_of(wm(30), e((1, 3)), e((2, 4)), wm(100))
        _, panes = run(src, pm.WindowInto(pm.FixedWindows(10), allowed_lateness=30))
        assert summary(panes) == [pane(1, LATE, 0, 0, first=True), pane(2, LATE, 1, 1)]


class TestAllowedLateness:
    def test_boundary_is_max_timestamp_plus_lateness(self):
        # [0, 10) has max timestamp 9.999999; with 5 s lateness it expires once the watermark
        # is past 14.999999.
        src = stream_of(wm(14.999999), e((1, 3)), wm(15), e((2, 4)), wm(100))
        result, panes = run(src, pm.WindowInto(pm.FixedWindows(10), allowed_lateness=5))
        assert summary(panes) == [pane(1, LATE, 0, 0, first=True)]
        assert result.counter("dropped") == 1
        assert result.counter("late") == 1

    def test_garbage_collection_emits_a_final_pane_with_pending_late_data(self):
        src = stream_of(e((1, 3)), wm(12), e((2, 4)), wm(100))
        result, panes = run(src, pm.WindowInto(pm.FixedWindows(10),
                                               trigger=pm.AfterWatermark(late=pm.AfterCount(5)),
                                               allowed_lateness=30))
        assert summary(panes) == [pane(1, ON_TIME, 0, 0, first=True),
                                  pane(2, LATE, 1, 1, last=True)]

    def test_garbage_collection_without_pending_data_emits_nothing(self):
        src = stream_of(e((1, 3)), wm(12), e((2, 4)), wm(100))
        _, panes = run(src, pm.WindowInto(pm.FixedWindows(10),
                                          trigger=pm.AfterWatermark(late=pm.AfterCount(1)),
                                          allowed_lateness=30))
        assert summary(panes) == [pane(1, ON_TIME, 0, 0, first=True), pane(2, LATE, 1, 1)]

    def test_lateness_accepts_timedelta(self):
        import datetime as dt
        src = stream_of(e((1, 3)), wm(40), e((2, 4)), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.FixedWindows(10),
                                          allowed_lateness=dt.timedelta(minutes=1)))
        assert [wv.value[1] for wv in panes] == [1, 2]

    def test_fluent_with_allowed_lateness(self):
        p = pm.Pipeline(runner="local")
        src = stream_of(e((1, 3)), wm(40), e((2, 4)), wm("inf"))
        out = (p | src).window_into(pm.FixedWindows(10)).with_allowed_lateness(60).combine_per_key(sum)
        panes = p.run().collect(out)
        assert summary(panes) == [pane(1, ON_TIME, 0, 0, first=True), pane(2, LATE, 1, 1)]


class TestAfterWatermark:
    def test_early_and_late_firings(self):
        src = stream_of(e((1, 1)), e((2, 2)), e((3, 3)), wm(10), e((4, 4)), e((5, 5)), wm("inf"))
        _, panes = run(src, pm.WindowInto(
            pm.FixedWindows(10),
            trigger=pm.AfterWatermark(early=pm.AfterCount(2), late=pm.AfterCount(2)),
            allowed_lateness=100))
        assert summary(panes) == [
            pane(3, EARLY, 0, -1, first=True),   # 1+2 after two elements
            pane(3, ON_TIME, 1, 0),              # the rest, at the watermark
            pane(9, LATE, 2, 1),                 # 4+5 after two late elements
        ]

    def test_on_time_pane_is_emitted_even_when_empty(self):
        src = stream_of(e((1, 1)), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.FixedWindows(10),
                                          trigger=pm.AfterWatermark(early=pm.AfterCount(1))),
                       agg=pm.GroupByKey())
        assert summary(panes) == [pane([1], EARLY, 0, -1, first=True),
                                  pane([], ON_TIME, 1, 0, last=True)]

    def test_empty_on_time_pane_of_a_combine_is_its_empty_output(self):
        src = stream_of(e((1, 1)), e((2, 1)), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.FixedWindows(10),
                                          trigger=pm.AfterWatermark(early=pm.AfterCount(2))))
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True),
                                  pane(0, ON_TIME, 1, 0, last=True)]

    def test_without_late_trigger_the_window_closes_at_the_watermark(self):
        src = stream_of(e((1, 1)), wm(10), e((2, 2)), wm("inf"))
        result, panes = run(src, pm.WindowInto(pm.FixedWindows(10), trigger=pm.AfterWatermark(),
                                               allowed_lateness=100))
        assert summary(panes) == [pane(1, ON_TIME, 0, 0, first=True, last=True)]
        assert result.counter("dropped") == 1

    def test_each_window_fires_when_the_watermark_passes_it(self):
        src = stream_of(e((1, 1), (10, 11), (100, 21)), wm(15), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.FixedWindows(10)))
        assert (panes[0].value[1], panes[0].window) == (1, iw(0, 10))   # at watermark 15
        assert per_window(panes[1:]) == {iw(10, 20): [(10, ON_TIME)], iw(20, 30): [(100, ON_TIME)]}

    def test_early_processing_time_and_late_count(self):
        src = stream_of(e((1, 1)), pt(30), e((2, 2)), pt(30), wm(10), e((4, 3)), wm("inf"))
        _, panes = run(src, pm.WindowInto(
            pm.FixedWindows(10),
            trigger=pm.AfterWatermark(early=pm.AfterProcessingTime(60), late=pm.AfterCount(1)),
            accumulation_mode=ACCUMULATING, allowed_lateness=100))
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True),
                                  pane(3, ON_TIME, 1, 0),
                                  pane(7, LATE, 2, 1)]

    def test_aliases(self):
        assert pm.AtWatermark is pm.AfterWatermark
        assert pm.AtCount is pm.AfterCount
        assert pm.Repeat is pm.Repeatedly
        assert pm.SequenceOf is pm.AfterEach
        assert pm.RepeatUntil(pm.AfterCount(2), pm.AfterWatermark()) == \
            pm.OrFinally(pm.Repeatedly(pm.AfterCount(2)), pm.AfterWatermark())
        assert pm.AfterWatermark(early=pm.AfterCount(1)) != pm.AfterWatermark(late=pm.AfterCount(1))


# --- timestamp combiners -----------------------------------------------------------------------

class TestTimestampCombiners:
    SRC = stream_of(e((1, 3), (2, 7)), wm(5), e((4, 6)), wm(12), e((8, 2)), wm("inf"))
    TRIGGER = pm.AfterWatermark(early=pm.AfterCount(2), late=pm.AfterCount(1))

    def outputs(self, combiner):
        _, panes = run(self.SRC, pm.WindowInto(pm.FixedWindows(10), trigger=self.TRIGGER,
                                               accumulation_mode=ACCUMULATING,
                                               allowed_lateness=50, timestamp_combiner=combiner))
        return [(wv.value[1], wv.pane.timing, float(wv.timestamp)) for wv in panes]

    def test_end_of_window_is_the_default(self):
        eow = iw(0, 10).max_timestamp()
        assert self.outputs(pm.TimestampCombiner.OUTPUT_AT_EOW) == [
            (3, EARLY, float(eow)), (7, ON_TIME, float(eow)), (15, LATE, float(eow))]

    def test_earliest(self):
        # each pane is output at the earliest timestamp among the elements since the last pane;
        # a late pane cannot hold the watermark and is output at the end of the window
        assert self.outputs(pm.TimestampCombiner.OUTPUT_AT_EARLIEST) == [
            (3, EARLY, 3.0), (7, ON_TIME, 6.0), (15, LATE, 9.999999)]

    def test_latest(self):
        assert self.outputs(pm.TimestampCombiner.OUTPUT_AT_LATEST) == [
            (3, EARLY, 7.0), (7, ON_TIME, 6.0), (15, LATE, 9.999999)]

    def test_merged_sessions_combine_their_timestamps(self):
        # 1 and 12 are separate sessions until 6 bridges them
        src = stream_of(e((1, 1)), e((2, 12)), e((4, 6)), wm("inf"))
        got = {}
        for combiner in pm.TimestampCombiner:
            _, panes = run(src, pm.WindowInto(pm.Sessions(10), timestamp_combiner=combiner))
            assert [(wv.value[1], wv.window) for wv in panes] == [(7, iw(1, 22))]
            got[combiner] = float(panes[0].timestamp)
        assert got == {pm.TimestampCombiner.OUTPUT_AT_EARLIEST: 1.0,
                       pm.TimestampCombiner.OUTPUT_AT_LATEST: 12.0,
                       pm.TimestampCombiner.OUTPUT_AT_EOW: 21.999999,
                       # Sessions moves no element's time: the earliest
                       pm.TimestampCombiner.OUTPUT_AT_EARLIEST_TRANSFORMED: 1.0}

    def test_earliest_holds_the_downstream_watermark(self):
        # With OUTPUT_AT_EARLIEST the pane is output at 3, so a downstream fixed window [0, 5)
        # receives it on time (not late) and fires once, on time.
        src = stream_of(e((1, 3), (2, 7)), wm("inf"))
        p = pm.Pipeline(runner="local")
        first = (p | src | pm.WindowInto(pm.FixedWindows(10),
                                         timestamp_combiner=pm.TimestampCombiner.OUTPUT_AT_EARLIEST)
                 | pm.CombinePerKey(sum)).keep()
        second = first | pm.WindowInto(pm.FixedWindows(5)) | pm.CombinePerKey(sum)
        result = p.run()
        (wv,) = result.collect(first)
        assert wv.timestamp == 3 and wv.value == ("k", 3)
        (wv2,) = result.collect(second)
        assert wv2.window == iw(0, 5) and wv2.value == ("k", 3)
        assert wv2.pane.timing is ON_TIME
        assert result.counter("late") == 0


# --- count and processing-time triggers ----------------------------------------------------------

class TestAfterCount:
    def test_fires_once_and_finishes(self):
        result, panes = run(one_by_one([1, 2, 3, 4]).advance_watermark_to_infinity(),
                            pm.WindowInto(pm.GlobalWindows(), trigger=pm.AfterCount(2)))
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True, last=True)]
        assert result.counter("dropped") == 2       # the window closed; 3 and 4 are dropped

    def test_repeatedly(self):
        _, panes = run(one_by_one([1, 2, 3, 4, 5]).advance_watermark_to_infinity(),
                       pm.WindowInto(pm.GlobalWindows(), trigger=pm.Repeatedly(pm.AfterCount(2))))
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True), pane(7, EARLY, 1, -1),
                                  pane(5, ON_TIME, 2, 0, last=True)]

    def test_counts_are_per_key_and_window(self):
        src = stream_of(("e", [TV(("a", 1), 1)]), ("e", [TV(("b", 10), 1)]),
                        ("e", [TV(("a", 2), 11)]), ("e", [TV(("a", 3), 2)]), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.FixedWindows(10),
                                          trigger=pm.Repeatedly(pm.AfterCount(2))))
        got = [(wv.value, wv.window, wv.pane.timing) for wv in panes]
        assert got[0] == (("a", 4), iw(0, 10), EARLY)
        # at the end of each window an on-time pane, even an empty one (a's [0, 10))
        assert sorted(got[1:], key=repr) == sorted([
            (("a", 0), iw(0, 10), ON_TIME), (("b", 10), iw(0, 10), ON_TIME),
            (("a", 2), iw(10, 20), ON_TIME)], key=repr)

    def test_invalid(self):
        for bad in (0, -1, 1.5, "2"):
            with pytest.raises(ValueError):
                pm.AfterCount(bad)


class TestAfterProcessingTime:
    def test_delay_from_first_element_of_each_pane(self):
        src = stream_of(e((1, 1)), pt(5), e((2, 2)), pt(5),       # pt 10: fire 1+2
                        e((4, 3)), pt(9),                          # pt 19: not yet (due at 20)
                        pt(1),                                     # pt 20: fire 4
                        wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.GlobalWindows(),
                                          trigger=pm.Repeatedly(pm.AfterProcessingTime(10))))
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True), pane(4, EARLY, 1, -1),
                                  pane(0, ON_TIME, 2, 0, last=True)]

    def test_once_finishes(self):
        src = stream_of(e((1, 1)), pt(10), e((2, 2)), pt(10), wm("inf"))
        result, panes = run(src, pm.WindowInto(pm.GlobalWindows(),
                                               trigger=pm.AfterProcessingTime(5)))
        assert summary(panes) == [pane(1, EARLY, 0, -1, first=True, last=True)]
        assert result.counter("dropped") == 1

    def test_nothing_fires_without_elements(self):
        src = stream_of(pt(100), wm(5), pt(100), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.FixedWindows(10),
                                          trigger=pm.Repeatedly(pm.AfterProcessingTime(1))))
        assert panes == []

    def test_at_period_aligns_to_multiples_of_the_period(self):
        # the clock starts at 0; the first element arrives at 3, so the pane fires at 10
        src = stream_of(pt(3), e((1, 1)), pt(5), e((2, 2)),       # pt 8
                        pt(1),                                     # pt 9: nothing yet
                        pt(1),                                     # pt 10: fire 1+2
                        e((3, 3)), pt(11),                         # pt 21: fired at 20
                        e((4, 4)), pt(8),                          # pt 29: nothing
                        wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.GlobalWindows(),
                                          trigger=pm.Repeatedly(pm.AtPeriod(10))))
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True), pane(3, EARLY, 1, -1),
                                  pane(4, ON_TIME, 2, 0, last=True)]

    def test_at_period_with_offset(self):
        src = stream_of(pt(1), e((1, 1)), pt(2), pt(1),    # pt 4: before the boundary at 5
                        pt(1),                              # pt 5: fire
                        wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.GlobalWindows(),
                                          trigger=pm.Repeatedly(pm.AtPeriod(10, offset=5))))
        assert summary(panes) == [pane(1, EARLY, 0, -1, first=True),
                                  pane(0, ON_TIME, 1, 0, last=True)]

    def test_invalid(self):
        with pytest.raises(ValueError):
            pm.AfterProcessingTime(-1)
        with pytest.raises(ValueError):
            pm.AtPeriod(0)


# --- composites ---------------------------------------------------------------------------------

class TestComposites:
    def test_after_any_fires_on_the_first_and_finishes(self):
        src = stream_of(e((1, 1)), e((2, 1)), pt(10), e((4, 1)), wm("inf"))
        result, panes = run(src, pm.WindowInto(pm.GlobalWindows(), trigger=pm.AfterAny(
            pm.AfterCount(3), pm.AfterProcessingTime(5))))
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True, last=True)]
        assert result.counter("dropped") == 1

    def test_repeatedly_after_any(self):
        src = stream_of(e((1, 1)), e((2, 1)), e((4, 1)),       # count 3 fires: 7
                        e((8, 1)), pt(10),                      # processing time fires: 8
                        wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.GlobalWindows(), trigger=pm.Repeatedly(pm.AfterAny(
            pm.AfterCount(3), pm.AfterProcessingTime(5)))))
        assert summary(panes) == [pane(7, EARLY, 0, -1, first=True), pane(8, EARLY, 1, -1),
                                  pane(0, ON_TIME, 2, 0, last=True)]

    def test_after_all_waits_for_every_subtrigger(self):
        src = stream_of(e((1, 1)), e((2, 1)), e((4, 1)),        # count 3 ready, time not yet
                        pt(10),                                  # both: fire 7, finish
                        e((8, 1)), wm("inf"))
        result, panes = run(src, pm.WindowInto(pm.GlobalWindows(), trigger=pm.AfterAll(
            pm.AfterCount(3), pm.AfterProcessingTime(5))))
        assert summary(panes) == [pane(7, EARLY, 0, -1, first=True, last=True)]
        assert result.counter("dropped") == 1

    def test_repeatedly_after_all_counts(self):
        _, panes = run(one_by_one(range(8)).advance_watermark_to_infinity(),
                       pm.WindowInto(pm.GlobalWindows(), trigger=pm.Repeatedly(pm.AfterAll(
                           pm.AfterCount(2), pm.AfterCount(3)))))
        assert summary(panes) == [pane(0 + 1 + 2, EARLY, 0, -1, first=True),
                                  pane(3 + 4 + 5, EARLY, 1, -1),
                                  pane(6 + 7, ON_TIME, 2, 0, last=True)]

    def test_after_each_runs_in_sequence(self):
        result, panes = run(one_by_one(range(8)).advance_watermark_to_infinity(),
                            pm.WindowInto(pm.GlobalWindows(), trigger=pm.AfterEach(
                                pm.AfterCount(2), pm.AfterCount(3))))
        assert summary(panes) == [pane(0 + 1, EARLY, 0, -1, first=True),
                                  pane(2 + 3 + 4, EARLY, 1, -1, last=True)]
        assert result.counter("dropped") == 3

    def test_repeatedly_after_each(self):
        _, panes = run(one_by_one(range(8)).advance_watermark_to_infinity(),
                       pm.WindowInto(pm.GlobalWindows(), trigger=pm.Repeatedly(pm.SequenceOf(
                           pm.AfterCount(2), pm.AfterCount(3)))))
        assert [(v, t, i) for v, t, i, *_ in summary(panes)] == [
            (1, EARLY, 0), (9, EARLY, 1), (11, EARLY, 2), (7, ON_TIME, 3)]

    def test_after_each_of_count_then_watermark(self):
        src = stream_of(e((1, 1)), e((2, 2)), e((4, 3)), wm(10), e((8, 4)), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.FixedWindows(10), trigger=pm.AfterEach(
            pm.AfterCount(2), pm.AfterWatermark(late=pm.AfterCount(1))), allowed_lateness=100))
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True), pane(4, ON_TIME, 1, 0),
                                  pane(8, LATE, 2, 1)]

    def test_or_finally(self):
        result, panes = run(one_by_one(range(8)).advance_watermark_to_infinity(),
                            pm.WindowInto(pm.GlobalWindows(), trigger=pm.OrFinally(
                                pm.Repeatedly(pm.AfterCount(2)), pm.AfterCount(5))))
        assert summary(panes) == [pane(0 + 1, EARLY, 0, -1, first=True),
                                  pane(2 + 3, EARLY, 1, -1),
                                  pane(4, EARLY, 2, -1, last=True)]
        assert result.counter("dropped") == 3

    def test_repeat_until_watermark(self):
        # the paper's RepeatUntil(AtCount(1), AtWatermark()): a pane per element until the
        # watermark passes the window, then a final on-time pane
        src = stream_of(e((1, 1)), e((2, 2)), wm(10), e((4, 3)), wm("inf"))
        result, panes = run(src, pm.WindowInto(pm.FixedWindows(10), trigger=pm.RepeatUntil(
            pm.AtCount(1), pm.AtWatermark()), allowed_lateness=100))
        assert summary(panes) == [pane(1, EARLY, 0, -1, first=True), pane(2, EARLY, 1, -1),
                                  pane(0, ON_TIME, 2, 0, last=True)]
        assert result.counter("dropped") == 1

    def test_never_fires_only_at_garbage_collection(self):
        # 8 arrives behind the watermark, but [4, 8) still holds the output watermark at its
        # end (its first element's end-of-window hold), so its single pane is on time
        src = stream_of(e((1, 1), (2, 2), (4, 5)), wm(8), e((8, 6)), pt(1000), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.FixedWindows(4), trigger=pm.Never(),
                                          allowed_lateness=10))
        got = [(wv.value[1], wv.window, wv.pane) for wv in panes]
        assert got == [(3, iw(0, 4), pm.PaneInfo(True, True, ON_TIME, 0, 0)),
                       (12, iw(4, 8), pm.PaneInfo(True, True, ON_TIME, 0, 0))]

    def test_nested_composition(self):
        # early: every 2 elements or 5 s of processing time; late: every element
        trigger = pm.AfterWatermark(
            early=pm.AfterAny(pm.AfterCount(2), pm.AfterProcessingTime(5)),
            late=pm.AfterCount(1))
        src = stream_of(e((1, 1)), e((2, 2)),          # count: 3
                        e((4, 3)), pt(6),              # time: 4
                        e((8, 4)), wm(10),             # on time: 8
                        e((16, 5)), wm("inf"))         # late: 16
        _, panes = run(src, pm.WindowInto(pm.FixedWindows(10), trigger=trigger,
                                          allowed_lateness=100))
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True), pane(4, EARLY, 1, -1),
                                  pane(8, ON_TIME, 2, 0), pane(16, LATE, 3, 1)]

    def test_composites_take_only_triggers(self):
        with pytest.raises(TypeError):
            pm.AfterAny(pm.AfterCount(1), 5)
        with pytest.raises(TypeError):
            pm.AfterWatermark(early=3)
        with pytest.raises(TypeError):
            pm.Repeatedly("often")


class TestSessionsAndTriggers:
    def test_counts_merge_with_windows(self):
        # 0 and 20 are separate sessions with one element each; 8 merges into the first,
        # whose merged count reaches 2 and fires
        src = stream_of(e((1, 0)), e((2, 20)), e((4, 8)), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.Sessions(10), trigger=pm.AfterWatermark(
            early=pm.AfterCount(2))))
        assert per_window(panes) == {iw(0, 18): [(5, EARLY), (0, ON_TIME)],
                                     iw(20, 30): [(2, ON_TIME)]}

    def test_session_bridged_by_late_element_refires(self):
        src = stream_of(e((1, 0)), e((2, 15)), wm(40), e((4, 8)), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.Sessions(10), allowed_lateness=100,
                                          accumulation_mode=ACCUMULATING))
        assert per_window(panes[:2]) == {iw(0, 10): [(1, ON_TIME)], iw(15, 25): [(2, ON_TIME)]}
        assert per_window(panes[2:]) == {iw(0, 25): [(7, LATE)]}
        # pane indices are per window (Beam does not merge them): [0, 25) is a new window
        assert summary(panes[2:]) == [pane(7, LATE, 0, 0, first=True)]

    def test_late_elements_inside_a_fired_session_count_towards_its_late_trigger(self):
        # [1, 14) fires on time; the late 2 and 3 open [2, 12) and [3, 13), which merge into
        # it: the merged window is [1, 14) itself, past its on-time firing, so the late
        # AfterCount(2) counts them and fires once; [1, 14) goes on with its pane indices
        src = stream_of(e((1, 1)), e((4, 4)), wm(50), e((2, 2)), e((3, 3)), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.Sessions(10), allowed_lateness=100,
                                          trigger=pm.AfterWatermark(late=pm.AfterCount(2)),
                                          accumulation_mode=ACCUMULATING))
        assert [wv.window for wv in panes] == [iw(1, 14)] * 2
        assert summary(panes) == [pane(5, ON_TIME, 0, 0, first=True), pane(10, LATE, 1, 1)]

    def test_beam_transcript_early_late_sessions(self):
        # Beam's trigger_transcripts.yaml, `early_late_sessions`, bundle by bundle. pomset
        # evaluates a trigger after each element, Beam after each bundle, so the early panes
        # differ (here [1, 12) after 2, in Beam [1, 13) after the bundle 1, 2, 3); from the
        # on-time pane on they are the transcript's: the late 1 and then 3, 4 give one late
        # pane with every value (with allowed lateness, which keeps late elements)
        src = stream_of(e((1, 1), (2, 2), (3, 3)), e((4, 4)), e((5, 5)), e((6, 6)), wm(100),
                        e((1, 1)), e((3, 3), (4, 4)))
        trigger = pm.AfterWatermark(early=pm.AfterCount(2), late=pm.AfterCount(3))
        _, panes = run(src, pm.WindowInto(pm.Sessions(10), trigger=trigger, allowed_lateness=100,
                                          accumulation_mode=ACCUMULATING,
                                          timestamp_combiner=pm.TimestampCombiner.OUTPUT_AT_EOW),
                       pm.CombinePerKey(pm.ToList()))
        got = [(wv.window, sorted(wv.value[1]), wv.pane.timing) for wv in panes]
        assert got == [(iw(1, 12), [1, 2], EARLY), (iw(1, 14), [1, 2, 3, 4], EARLY),
                       (iw(1, 16), [1, 2, 3, 4, 5, 6], EARLY),
                       (iw(1, 16), [1, 2, 3, 4, 5, 6], ON_TIME),
                       (iw(1, 16), [1, 1, 2, 3, 3, 4, 4, 5, 6], LATE)]

    @pytest.mark.parametrize("wm_s, expected", [
        (100, [2, None, 1]),   # past the merged window: late, with the fired source's late count
        (12, [1, 1, None]),    # before its end: early, with the armed source's early count
    ])
    def test_watermark_trigger_merge_is_late_if_any_source_is(self, wm_s, expected):
        # AfterWatermark(early=AfterCount(2), late=AfterCount(3)) has slots [itself, early
        # count, late count]; states 1 = armed, 2 = past the on-time firing. Beam ORs the
        # sources' late flags (provided the watermark has passed the merged window)
        from pomset.triggers.kernel import TimeView, WindowRec
        trigger = pm.AfterWatermark(early=pm.AfterCount(2), late=pm.AfterCount(3))
        k = TimeView()
        k.wm = wm_s * 1_000_000
        fired = WindowRec(iw(1, 11), None, [2, None, 1])
        armed = WindowRec(iw(8, 18), None, [1, 1, None])
        merged = WindowRec(iw(1, 18), None, [None] * 3)
        trigger.slot_on_merge(k, merged, 0, [fired, armed])
        assert (merged.ts, merged.fin) == (expected, 0)

    def test_session_grown_past_the_watermark_owes_its_on_time_pane(self):
        # [1, 11) fires on time at watermark 12; 2 at 8 grows it to [1, 18), whose end the
        # watermark has not passed: early phase again, the early count starting afresh (the
        # on-time firing ended the early firings), then the on-time pane of [1, 18), then
        # late firings
        src = stream_of(e((1, 1)), wm(12), e((2, 8)), e((4, 7)), wm(20), e((8, 2)), e((16, 3)),
                        wm("inf"))
        trigger = pm.AfterWatermark(early=pm.AfterCount(2), late=pm.AfterCount(2))
        _, panes = run(src, pm.WindowInto(pm.Sessions(10), allowed_lateness=100, trigger=trigger,
                                          accumulation_mode=ACCUMULATING))
        assert [wv.window for wv in panes] == [iw(1, 11)] + [iw(1, 18)] * 3
        assert summary(panes) == [pane(1, ON_TIME, 0, 0, first=True),
                                  pane(7, EARLY, 0, -1, first=True),
                                  pane(7, ON_TIME, 1, 0),
                                  pane(31, LATE, 2, 1)]

    @pytest.mark.parametrize("trigger", [pm.AfterWatermark(), pm.AfterCount(2)],
                             ids=["AfterWatermark", "AfterCount"])
    def test_finished_session_stays_finished_when_elements_merge_into_it(self, trigger):
        # the trigger finishes [1, 14) (its pane is the last); later elements whose windows
        # merge into it are dropped, as in Beam, instead of reopening it
        src = stream_of(e((1, 1)), e((2, 4)), wm(50), e((4, 2)), e((8, 3)), wm("inf"))
        result, panes = run(src, pm.WindowInto(pm.Sessions(10), allowed_lateness=100,
                                               trigger=trigger, accumulation_mode=ACCUMULATING))
        assert [wv.window for wv in panes] == [iw(1, 14)]
        assert [wv.value[1] for wv in panes] == [3] and panes[0].pane.is_last
        assert result.counter("dropped") == 2

    def test_merged_sequence_goes_on_from_the_furthest_source(self):
        # AfterEach(AfterCount(2), AfterCount(2)): [0, 11) has fired its first step, [18, 28)
        # has one element in its first. 8 at 9 bridges them: the merged [0, 28) goes on with
        # the second step (Beam's AfterEach merge takes the furthest index), whose count
        # starts at the bridge, so it fires with the next element and finishes the sequence
        src = stream_of(e((1, 0)), e((2, 1)), e((4, 18)), e((8, 9)), e((16, 5)), wm("inf"))
        trigger = pm.AfterEach(pm.AfterCount(2), pm.AfterCount(2))
        result, panes = run(src, pm.WindowInto(pm.Sessions(10), trigger=trigger,
                                               accumulation_mode=ACCUMULATING))
        assert [wv.window for wv in panes] == [iw(0, 11), iw(0, 28)]
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True),
                                  pane(31, EARLY, 0, -1, first=True, last=True)]
        assert result.counter("dropped") == 0

    @pytest.mark.parametrize("sources, expected", [
        ([[1, 2, 1], [0, 1, None]], [1, None, 1]),   # the furthest step, with its count
        ([[2, 2, 2], [0, 1, None]], [0, 1, None]),   # finished in one source only: not finished
        ([[2, 2, 2], [2, 2, 2]], [2, None, None]),   # finished in every source
    ])
    def test_sequence_merge_state(self, sources, expected):
        # AfterEach(AfterCount(2), AfterCount(2)) has slots [its step, first count, second count]
        from pomset.triggers.kernel import TimeView, WindowRec
        trigger = pm.AfterEach(pm.AfterCount(2), pm.AfterCount(2))
        merged = WindowRec(iw(0, 28), None, [None] * 3)
        trigger.slot_on_merge(TimeView(), merged, 0, [WindowRec(iw(0, 11), None, s) for s in sources])
        assert merged.ts == expected


# --- custom triggers ------------------------------------------------------------------------------

class AtLeast(pm.Trigger):
    """Data-driven: fires once a value >= threshold has arrived in the pane."""

    def __init__(self, threshold):
        self.threshold = threshold

    def on_element(self, ctx, value, timestamp):
        if value >= self.threshold:
            ctx.state["hit"] = True

    def should_fire(self, ctx):
        return ctx.state.get("hit", False)

    def on_fire(self, ctx):
        return True

    def on_merge(self, ctx, source_states):
        if any(s.get("hit") for s in source_states):
            ctx.state["hit"] = True


class AfterEventDelay(pm.Trigger):
    """Fires once the watermark is `delay` seconds past the first element's timestamp."""

    def __init__(self, delay):
        self.delay = delay

    def on_element(self, ctx, value, timestamp):
        if "at" not in ctx.state:
            ctx.state["at"] = (timestamp + self.delay).micros
            ctx.set_timer(timestamp + self.delay, "event")

    def should_fire(self, ctx):
        return "at" in ctx.state and ctx.watermark.micros >= ctx.state["at"]


class AfterClockDelay(pm.Trigger):
    """Fires 7 s of processing time after the first element of the pane."""

    def on_element(self, ctx, value, timestamp):
        if "at" not in ctx.state:
            ctx.state["at"] = (ctx.processing_time + 7).micros
            ctx.set_timer(ctx.processing_time + 7, "processing")

    def should_fire(self, ctx):
        return "at" in ctx.state and ctx.processing_time.micros >= ctx.state["at"]


class TestCustomTriggers:
    def test_data_driven_trigger_repeated(self):
        _, panes = run(one_by_one([1, 2, 100, 3, 4, 200, 5]).advance_watermark_to_infinity(),
                       pm.WindowInto(pm.GlobalWindows(), trigger=pm.Repeatedly(AtLeast(100))))
        assert summary(panes) == [pane(103, EARLY, 0, -1, first=True),
                                  pane(207, EARLY, 1, -1),
                                  pane(5, ON_TIME, 2, 0, last=True)]

    def test_data_driven_trigger_once_finishes(self):
        result, panes = run(one_by_one([1, 2, 100, 3]).advance_watermark_to_infinity(),
                            pm.WindowInto(pm.GlobalWindows(), trigger=AtLeast(100)))
        assert summary(panes) == [pane(103, EARLY, 0, -1, first=True, last=True)]
        assert result.counter("dropped") == 1

    def test_data_driven_trigger_as_early_firing_with_sessions(self):
        src = stream_of(e((1, 1)), e((150, 5)), e((2, 30)), e((3, 12)), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.Sessions(10),
                                          trigger=pm.AfterWatermark(early=AtLeast(100)),
                                          accumulation_mode=ACCUMULATING))
        assert per_window(panes) == {iw(1, 15): [(151, EARLY)], iw(1, 22): [(154, ON_TIME)],
                                     iw(30, 40): [(2, ON_TIME)]}

    def test_data_driven_trigger_composes(self):
        # fire on a big value or every 3 elements, whichever first
        _, panes = run(one_by_one([1, 2, 3, 50, 4, 5, 6]).advance_watermark_to_infinity(),
                       pm.WindowInto(pm.GlobalWindows(), trigger=pm.Repeatedly(pm.AfterAny(
                           AtLeast(50), pm.AfterCount(3)))))
        assert [v for v, *_ in summary(panes)] == [6, 50, 15, 0]

    def test_custom_event_time_timer(self):
        src = stream_of(e((1, 10)), e((2, 12)), wm(14), wm(15),   # fires at 15 (10 + 5)
                        e((4, 16)), wm(21),                        # fires at 21
                        e((8, 22)), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.GlobalWindows(),
                                          trigger=pm.Repeatedly(AfterEventDelay(5))))
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True), pane(4, EARLY, 1, -1),
                                  pane(8, ON_TIME, 2, 0, last=True)]

    def test_custom_processing_time_timer(self):
        src = stream_of(e((1, 10)), pt(3), e((2, 12)), pt(4),      # pt 7: fire 3
                        e((4, 16)), pt(6), pt(1),                  # pt 14: fire 4
                        wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.GlobalWindows(),
                                          trigger=pm.Repeatedly(AfterClockDelay())))
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True), pane(4, EARLY, 1, -1),
                                  pane(0, ON_TIME, 2, 0, last=True)]

    def test_custom_trigger_context(self):
        seen = []

        class Spy(pm.Trigger):
            def on_element(self, ctx, value, timestamp):
                seen.append((value, timestamp, ctx.window, ctx.watermark, ctx.processing_time))
                ctx.state["n"] = ctx.state.get("n", 0) + 1

            def should_fire(self, ctx):
                return ctx.state.get("n", 0) >= 2

        src = stream_of(pt(4), e((1, 3)), wm(5), pt(2), e((2, 7)), wm("inf"))
        _, panes = run(src, pm.WindowInto(pm.FixedWindows(10), trigger=pm.Repeatedly(Spy())))
        assert seen == [(1, pm.Timestamp(3), iw(0, 10), pm.MIN_TIMESTAMP, pm.Timestamp(4)),
                        (2, pm.Timestamp(7), iw(0, 10), pm.Timestamp(5), pm.Timestamp(6))]
        assert summary(panes) == [pane(3, EARLY, 0, -1, first=True, last=False),
                                  pane(0, ON_TIME, 1, 0, last=True)]

    def test_set_timer_rejects_unknown_domain(self):
        class Bad(pm.Trigger):
            def on_element(self, ctx, value, timestamp):
                ctx.set_timer(5, "wallclock")

            def should_fire(self, ctx):
                return False

        with pytest.raises(Exception) as info:
            run(one_by_one([1]).advance_watermark_to_infinity(),
                pm.WindowInto(pm.GlobalWindows(), trigger=pm.Repeatedly(Bad())))
        assert "wallclock" in str(info.value)


# --- continuation: downstream groupings ------------------------------------------------------------

def test_downstream_grouping_fires_when_upstream_panes_arrive():
    # upstream fires early per 2 elements; the second grouping (re-keyed) uses the
    # continuation trigger and fires as those panes arrive, before the watermark
    src = stream_of(e((1, 1)), e((2, 2)), e((4, 3)), e((8, 4)), wm("inf"))
    p = pm.Pipeline(runner="local")
    first = (p | src | pm.WindowInto(pm.FixedWindows(10), trigger=pm.AfterWatermark(
        early=pm.AfterCount(2))) | pm.CombinePerKey(sum)).keep()
    second = first | pm.Map(lambda kv: ("total", kv[1])) | pm.CombinePerKey(sum)
    result = p.run()
    assert summary(result.collect(first)) == [pane(3, EARLY, 0, -1, first=True),
                                              pane(12, EARLY, 1, -1),
                                              pane(0, ON_TIME, 2, 0, last=True)]
    down = summary(result.collect(second))
    assert [(v, t) for v, t, *_ in down if v != 0] == [(3, EARLY), (12, EARLY)]
    assert down[-1][1] is ON_TIME and down[-1][5]          # closes on time, last
    assert sum(v for v, *_ in down) == 15


def test_an_unbounded_run_leaves_open_windows_unfired():
    # the stream never reaches infinity: windows the watermark passed fire, the rest do not
    src = stream_of(e((1, 1), (2, 12), (4, 25)), wm(20), endless=True)
    _, panes = run(src, pm.WindowInto(pm.FixedWindows(10)))
    assert per_window(panes) == {iw(0, 10): [(1, ON_TIME)], iw(10, 20): [(2, ON_TIME)]}
    _, panes = run(stream_of(e((1, 1)), e((2, 1)), e((4, 1)), endless=True),
                   pm.WindowInto(pm.GlobalWindows(), trigger=pm.Repeatedly(pm.AfterCount(2))))
    assert summary(panes) == [pane(3, EARLY, 0, -1, first=True)]



def test_resetting_a_watermark_trigger_resets_early_and_late_even_when_one_object():
    """The same AfterCount object serves as early and late trigger: it occupies two sets of
    slots, and a reset (what a parent like Repeatedly does) must clear both."""
    from pomset.triggers.kernel import TimeView, WindowRec
    count = pm.AfterCount(2)
    trigger = pm.AfterWatermark(early=count, late=count)
    w = WindowRec(pm.IntervalWindow(0, 10), None, [None] * trigger.slot_count())
    w.ts[:] = [2, 1, 1]          # on-time fired; one element counted early and one late
    trigger.slot_reset(TimeView(), w, 0)
    assert w.ts == [None, None, None]


def test_global_window_expires_at_the_end_of_time_whatever_its_allowed_lateness():
    # Re-windowing into the global window keeps the upstream allowed lateness (a day here);
    # the global window's end plus that reaches the end of time, and still its last pane
    # comes when the watermark gets there, as in Beam.
    p = pm.Pipeline()
    totals = (p | pm.Create([pm.TimestampedValue(("a", 1), 10), pm.TimestampedValue(("a", 2), 20)])
              | pm.WindowInto(pm.FixedWindows(60), allowed_lateness=86400)
              | pm.CombinePerKey(sum)
              | pm.WindowInto(pm.GlobalWindows(), trigger=pm.Repeatedly(pm.AfterProcessingTime(60)),
                              accumulation_mode=pm.AccumulationMode.RETRACTING)
              | pm.CombinePerKey(sum))
    panes = p.run().collect(totals)
    assert [(wv.value, wv.diff, wv.pane.is_last) for wv in panes] == [(("a", 3), 1, True)]


def test_a_window_record_pickles_every_slot():
    """Keys' states cross Spark's state store pickled a record at a time: every slot comes
    back as it was."""
    import pickle
    from pomset.triggers.kernel import WindowRec
    rec = WindowRec(pm.IntervalWindow(0, 10), [7], [1, None])
    for i, slot in enumerate(WindowRec.__slots__[3:]):
        setattr(rec, slot, (slot, i))
    back = pickle.loads(pickle.dumps(rec))
    assert [getattr(back, s) for s in WindowRec.__slots__] == \
        [getattr(rec, s) for s in WindowRec.__slots__]
