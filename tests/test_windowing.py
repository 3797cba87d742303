"""Where in event time: Timestamp, IntervalWindow/GlobalWindow and every WindowFn
(assignment and merging), both directly and through pipelines on the local runner."""
from __future__ import annotations

import datetime as dt
import pickle

import pytest

import pomset as pm

TV = pm.TimestampedValue
US = 1_000_000


def iw(start, end):
    return pm.IntervalWindow(start, end)


def run_collect(build):
    """build(p) -> pcoll; runs on the local runner and returns the collected WindowedValues."""
    p = pm.Pipeline(runner="local")
    out = build(p)
    result = p.run()
    return result.collect(out)


def grouped(panes):
    """{(key, window): sorted values} from GroupByKey panes (all +1 here)."""
    out = {}
    for wv in panes:
        assert wv.diff == 1
        k, vs = wv.value
        out.setdefault((k, wv.window), []).extend(vs)
    return {kw: sorted(vs) for kw, vs in out.items()}


# --- Timestamp ---------------------------------------------------------------------------------

class TestTimestamp:
    def test_seconds_int_and_float(self):
        assert pm.Timestamp(12).micros == 12 * US
        assert pm.Timestamp(1.5).micros == 1_500_000
        assert pm.Timestamp(0, micros=7).micros == 7
        assert pm.Timestamp(-2.25).micros == -2_250_000

    def test_int_and_float_give_seconds(self):
        t = pm.Timestamp(90.75)
        assert int(t) == 90
        assert float(t) == 90.75
        assert int(pm.Timestamp(3)) == 3
        assert float(pm.Timestamp.from_micros(1)) == 1e-6

    def test_of_accepts_seconds_datetime_and_timestamp(self):
        assert pm.Timestamp.of(60) == pm.Timestamp(60)
        assert pm.Timestamp.of(60.5).micros == 60_500_000
        naive = dt.datetime(1970, 1, 1, 0, 2, 0)          # naive datetimes are UTC
        assert pm.Timestamp.of(naive) == pm.Timestamp(120)
        aware = dt.datetime(1970, 1, 1, 1, 0, 0, 250, tzinfo=dt.timezone(dt.timedelta(hours=1)))
        assert pm.Timestamp.of(aware).micros == 250
        t = pm.Timestamp(5)
        assert pm.Timestamp.of(t) == t

    def test_to_datetime_round_trip(self):
        d = dt.datetime(2015, 8, 31, 12, 30, 15, 123456, tzinfo=dt.timezone.utc)
        t = pm.Timestamp.of(d)
        assert t.to_datetime() == d
        assert int(t) == int(d.timestamp())

    def test_rejects_other_types(self):
        for bad in ("12", None, True, [1]):
            with pytest.raises(TypeError):
                pm.Timestamp.of(bad)

    def test_comparisons_with_numbers_and_timestamps(self):
        a, b = pm.Timestamp(10), pm.Timestamp(10.5)
        assert a < b and b > a and a <= pm.Timestamp(10)
        assert a == 10 and a == 10.0 and b == 10.5
        assert a < 11 and b > 10
        assert sorted([b, pm.Timestamp(-1), a]) == [pm.Timestamp(-1), a, b]
        assert hash(pm.Timestamp(10)) == hash(a)
        assert len({pm.Timestamp(3), pm.Timestamp.of(3), pm.Timestamp(0, micros=3 * US)}) == 1
        # equal to its seconds, so it hashes like them
        assert hash(pm.Timestamp(10)) == hash(10) and hash(pm.Timestamp(1.5)) == hash(1.5)
        assert {pm.Timestamp(3): "x"}.get(3) == "x"

    def test_arithmetic(self):
        t = pm.Timestamp(100)
        assert t + 20 == pm.Timestamp(120)
        assert t + 0.5 == pm.Timestamp(100.5)
        assert t - 30 == pm.Timestamp(70)
        assert pm.Timestamp(130) - t == 30.0

    def test_min_and_max(self):
        assert pm.MIN_TIMESTAMP < pm.Timestamp(-10**9) < pm.Timestamp(10**9) < pm.MAX_TIMESTAMP
        assert "MIN" in repr(pm.MIN_TIMESTAMP) and "MAX" in repr(pm.MAX_TIMESTAMP)

    def test_timestamped_value_accepts_every_time_form(self):
        assert TV("a", 5).timestamp == pm.Timestamp(5)
        assert TV("a", 5.25).timestamp.micros == 5_250_000
        assert TV("a", dt.datetime(1970, 1, 1, 0, 0, 7)).timestamp == pm.Timestamp(7)
        assert TV("a", pm.Timestamp(8)).timestamp == 8
        assert TV("a", 5) == TV("a", 5.0) and TV("a", 5) != TV("b", 5)


# --- windows -----------------------------------------------------------------------------------

class TestIntervalWindow:
    def test_bounds_in_seconds_datetime_and_timestamp(self):
        w = iw(60, 120)
        assert w.start == pm.Timestamp(60) and w.end == pm.Timestamp(120)
        assert w.max_timestamp() == pm.Timestamp(120) - 0.000001
        assert w.max_timestamp().micros == 120 * US - 1
        d = iw(dt.datetime(1970, 1, 1, 0, 1), pm.Timestamp(120))
        assert d == w and hash(d) == hash(w)
        assert iw(60.0, 120.0) == w

    def test_half_open(self):
        w = iw(0, 10)
        assert w.contains(0) and w.contains(10 * US - 1)
        assert not w.contains(10 * US) and not w.contains(-1)

    def test_start_must_precede_end(self):
        with pytest.raises(ValueError):
            iw(10, 10)
        with pytest.raises(ValueError):
            iw(10, 5)

    def test_intersects_and_span(self):
        a, b, c = iw(0, 10), iw(5, 15), iw(10, 20)
        assert a.intersects(b) and b.intersects(a)
        assert not a.intersects(c)            # adjacent half-open intervals do not intersect
        assert a.span(c) == iw(0, 20) and c.span(a) == iw(0, 20)

    def test_ordering_equality_and_pickle(self):
        ws = [iw(10, 20), iw(0, 30), iw(0, 10)]
        assert sorted(ws) == [iw(0, 10), iw(0, 30), iw(10, 20)]
        assert iw(0, 10) != iw(0, 11)
        back = pickle.loads(pickle.dumps(iw(1.5, 2.5)))
        assert back == iw(1.5, 2.5) and hash(back) == hash(iw(1.5, 2.5))
        assert back.max_timestamp().micros == 2_500_000 - 1

    def test_global_window(self):
        g = pm.GlobalWindow()
        assert g is pm.GlobalWindow() and g == pm.GlobalWindow()
        assert pickle.loads(pickle.dumps(g)) is g
        assert g.max_timestamp() > pm.Timestamp(10**12)
        assert g.max_timestamp() < pm.MAX_TIMESTAMP   # so a watermark at MAX passes it
        assert g.contains(-10**15) and g.contains(10**15)
        assert g != iw(0, 1)


# --- WindowFns: assignment ------------------------------------------------------------------------

class TestGlobalWindows:
    def test_assigns_the_global_window(self):
        fn = pm.GlobalWindows()
        assert list(fn.assign_windows(pm.Timestamp(-5), "x")) == [pm.GlobalWindow()]
        assert list(fn.assign_windows(10**9, None)) == [pm.GlobalWindow()]
        assert not fn.is_merging()

    def test_window_into_global_updates_only_the_steps_own_elements(self):
        """The runtime's WindowInto(GlobalWindows) (one window for all, no call per element)
        moves elements in place only when they are the step's own (`owned`); otherwise it
        leaves its input as it was and outputs new elements, as for any other WindowFn."""
        from pomset.runtime.elementwise import assign_windows
        from pomset.windowing import NO_FIRING, WindowedValue
        into = pm.WindowInto(pm.GlobalWindows())
        for owned in (False, True):
            bundle = [WindowedValue.raw(v, 10 * v, iw(0, 60), NO_FIRING, 1 - 2 * (v % 2))
                      for v in range(4)]
            out = assign_windows(into, bundle, owned, "into")
            assert [(wv.value, wv.ts, wv.window, wv.diff) for wv in out] == [
                (v, 10 * v, pm.GlobalWindow(), 1 - 2 * (v % 2)) for v in range(4)]
            assert out is not bundle
            assert all((wv.window == pm.GlobalWindow()) == owned for wv in bundle)

    def test_pipeline_default_is_global(self):
        panes = run_collect(lambda p: p | pm.Create([TV(("a", 1), 5), TV(("a", 2), 500), ("b", 3)])
                            | pm.GroupByKey())
        assert grouped(panes) == {("a", pm.GlobalWindow()): [1, 2], ("b", pm.GlobalWindow()): [3]}
        for wv in panes:
            assert wv.pane.timing is pm.PaneTiming.ON_TIME
            assert wv.pane.is_first and wv.pane.is_last
            assert wv.timestamp == pm.GlobalWindow().max_timestamp()


class TestFixedWindows:
    @pytest.mark.parametrize("t, start", [(0, 0), (59.999999, 0), (60, 60), (119, 60), (-1, -60),
                                          (-60, -60), (-60.5, -120)])
    def test_assign(self, t, start):
        assert list(pm.FixedWindows(60).assign_windows(t, None)) == [iw(start, start + 60)]

    def test_offset(self):
        fn = pm.FixedWindows(60, offset=10)
        assert list(fn.assign_windows(5, None)) == [iw(-50, 10)]
        assert list(fn.assign_windows(10, None)) == [iw(10, 70)]
        assert list(fn.assign_windows(69.5, None)) == [iw(10, 70)]
        # an offset of size + 10 is the same alignment
        assert pm.FixedWindows(60, offset=70) == fn

    def test_fractional_size_and_timestamp_input(self):
        fn = pm.FixedWindows(0.5)
        assert list(fn.assign_windows(pm.Timestamp(1.7), None)) == [iw(1.5, 2.0)]
        day = pm.FixedWindows(dt.timedelta(days=1).total_seconds())
        noon = dt.datetime(2020, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
        (w,) = day.assign_windows(pm.Timestamp.of(noon), None)
        assert w.start.to_datetime() == dt.datetime(2020, 3, 1, tzinfo=dt.timezone.utc)
        assert w.end.to_datetime() == dt.datetime(2020, 3, 2, tzinfo=dt.timezone.utc)

    def test_invalid_size(self):
        for bad in (0, -5):
            with pytest.raises(ValueError):
                pm.FixedWindows(bad)

    def test_pipeline(self):
        data = [TV(("k", 1), 0), TV(("k", 2), 59), TV(("k", 3), 60), TV(("j", 4), 61),
                TV(("k", 5), 119.999), TV(("k", 6), 120)]
        panes = run_collect(lambda p: p | pm.Create(data) | pm.WindowInto(pm.FixedWindows(60))
                            | pm.GroupByKey())
        assert grouped(panes) == {
            ("k", iw(0, 60)): [1, 2], ("k", iw(60, 120)): [3, 5], ("j", iw(60, 120)): [4],
            ("k", iw(120, 180)): [6]}
        for wv in panes:
            assert wv.timestamp == wv.window.max_timestamp()   # OUTPUT_AT_EOW by default

    def test_pipeline_with_offset_and_datetimes(self):
        base = dt.datetime(2021, 6, 1, 0, 0, tzinfo=dt.timezone.utc)
        at = lambda minutes: base + dt.timedelta(minutes=minutes)
        data = [TV(("k", 1), at(0)), TV(("k", 2), at(14)), TV(("k", 3), at(15)), TV(("k", 4), at(44))]
        panes = run_collect(lambda p: p | pm.Create(data)
                            | pm.WindowInto(pm.FixedWindows(1800, offset=900)) | pm.GroupByKey())
        b = int(pm.Timestamp.of(base))
        assert grouped(panes) == {("k", iw(b - 900, b + 900)): [1, 2],
                                  ("k", iw(b + 900, b + 2700)): [3, 4]}


class TestSlidingWindows:
    def test_assign_every_window_containing_the_timestamp(self):
        fn = pm.SlidingWindows(60, 20)
        ws = sorted(fn.assign_windows(45, None))
        assert ws == [iw(0, 60), iw(20, 80), iw(40, 100)]
        assert sorted(fn.assign_windows(40, None)) == [iw(0, 60), iw(20, 80), iw(40, 100)]
        assert sorted(fn.assign_windows(39.999, None)) == [iw(-20, 40), iw(0, 60), iw(20, 80)]
        for t in (0, 1, 19.5, 60, 61, -7):
            ws = list(fn.assign_windows(t, None))
            assert len(ws) == 3
            assert all(w.contains(pm.Timestamp.of(t).micros) for w in ws)

    def test_period_not_dividing_size(self):
        fn = pm.SlidingWindows(50, 20)
        assert sorted(fn.assign_windows(45, None)) == [iw(0, 50), iw(20, 70), iw(40, 90)]
        assert sorted(fn.assign_windows(55, None)) == [iw(20, 70), iw(40, 90)]

    def test_period_larger_than_size_leaves_gaps(self):
        fn = pm.SlidingWindows(10, 30)
        assert list(fn.assign_windows(5, None)) == [iw(0, 10)]
        assert list(fn.assign_windows(15, None)) == []

    def test_offset(self):
        fn = pm.SlidingWindows(20, 10, offset=5)
        assert sorted(fn.assign_windows(12, None)) == [iw(-5, 15), iw(5, 25)]
        assert sorted(fn.assign_windows(15, None)) == [iw(5, 25), iw(15, 35)]

    def test_invalid(self):
        with pytest.raises(ValueError):
            pm.SlidingWindows(0, 10)
        with pytest.raises(ValueError):
            pm.SlidingWindows(10, 0)

    def test_pipeline(self):
        data = [TV(("k", 1), 5), TV(("k", 10), 25)]
        panes = run_collect(lambda p: p | pm.Create(data)
                            | pm.WindowInto(pm.SlidingWindows(20, 10)) | pm.CombinePerKey(sum))
        got = {(wv.value[0], wv.window): wv.value[1] for wv in panes}
        assert got == {("k", iw(-10, 10)): 1, ("k", iw(0, 20)): 1,
                       ("k", iw(10, 30)): 10, ("k", iw(20, 40)): 10}
        assert len(panes) == 4


class TestSessions:
    def test_assign_opens_a_gap_long_window(self):
        assert list(pm.Sessions(30).assign_windows(100, None)) == [iw(100, 130)]
        assert pm.Sessions(30).is_merging()
        with pytest.raises(ValueError):
            pm.Sessions(0)

    def test_merge_overlapping_windows(self):
        fn = pm.Sessions(10)
        ws = [iw(20, 30), iw(0, 10), iw(5, 15), iw(14, 24), iw(40, 50), iw(60, 70), iw(65, 75)]
        result = fn.merge_windows(ws)
        as_sets = sorted((sorted(group), merged) for group, merged in result)
        assert as_sets == [
            ([iw(0, 10), iw(5, 15), iw(14, 24), iw(20, 30)], iw(0, 30)),
            ([iw(60, 70), iw(65, 75)], iw(60, 75))]

    def test_adjacent_windows_do_not_merge(self):
        assert pm.Sessions(10).merge_windows([iw(0, 10), iw(10, 20)]) == []

    def test_contained_window_merges_into_the_larger(self):
        result = pm.Sessions(10).merge_windows([iw(0, 100), iw(20, 30)])
        assert [(sorted(g), m) for g, m in result] == [([iw(0, 100), iw(20, 30)], iw(0, 100))]

    def test_pipeline_sessions_per_key(self):
        data = [TV(("a", 1), 0), TV(("a", 2), 5), TV(("a", 3), 14.5), TV(("a", 4), 30),
                TV(("b", 5), 3), TV(("b", 6), 13)]
        panes = run_collect(lambda p: p | pm.Create(data) | pm.WindowInto(pm.Sessions(10))
                            | pm.GroupByKey())
        assert grouped(panes) == {("a", iw(0, 24.5)): [1, 2, 3], ("a", iw(30, 40)): [4],
                                  ("b", iw(3, 13)): [5], ("b", iw(13, 23)): [6]}

    def test_pipeline_sessions_out_of_order_bridge(self):
        # 0 and 20 are separate sessions until 10 arrives and bridges them
        stream = (pm.TestStream()
                  .add_elements([TV(("k", 1), 0)])
                  .add_elements([TV(("k", 2), 20)])
                  .add_elements([TV(("k", 4), 10)])
                  .advance_watermark_to_infinity())
        panes = run_collect(lambda p: p | stream | pm.WindowInto(pm.Sessions(11))
                            | pm.CombinePerKey(sum))
        assert [(wv.value, wv.window) for wv in panes] == [(("k", 7), iw(0, 31))]
        assert panes[0].timestamp == iw(0, 31).max_timestamp()


# --- custom WindowFns ------------------------------------------------------------------------------

class EvenOddWindows(pm.WindowFn):
    """Custom non-merging: 10-second windows, but elements with an odd value also go into the
    enclosing 100-second window (data-dependent assignment)."""

    def assign_windows(self, timestamp, element):
        s = int(timestamp) // 10 * 10
        out = [pm.IntervalWindow(s, s + 10)]
        if element is not None and element[1] % 2:
            h = int(timestamp) // 100 * 100
            out.append(pm.IntervalWindow(h, h + 100))
        return out


class ValueGapSessions(pm.WindowFn):
    """Custom merging: each element (k, (v, gap)) opens [t, t + gap); windows that overlap
    merge (written here from scratch, not with pomset's helper)."""

    def assign_windows(self, timestamp, element):
        gap = element[1][1] if element is not None else 1
        return [pm.IntervalWindow(timestamp, timestamp + gap)]

    def merge_windows(self, windows):
        ws = sorted(windows, key=lambda w: (w.start, w.end))
        out, group = [], []
        end = None
        for w in ws:
            if group and w.start < end:
                group.append(w)
                end = max(end, w.end)
            else:
                if len(group) > 1:
                    out.append((group, pm.IntervalWindow(group[0].start, end)))
                group, end = [w], w.end
        if len(group) > 1:
            out.append((group, pm.IntervalWindow(group[0].start, end)))
        return out


class TestCustomWindowFns:
    def test_custom_non_merging(self):
        fn = EvenOddWindows()
        assert not fn.is_merging()
        data = [TV(("k", 1), 5), TV(("k", 2), 7), TV(("k", 3), 15), TV(("k", 4), 150)]
        panes = run_collect(lambda p: p | pm.Create(data) | pm.WindowInto(fn) | pm.GroupByKey())
        assert grouped(panes) == {("k", iw(0, 10)): [1, 2], ("k", iw(10, 20)): [3],
                                  ("k", iw(0, 100)): [1, 3], ("k", iw(150, 160)): [4]}

    def test_custom_merging(self):
        fn = ValueGapSessions()
        assert fn.is_merging()
        data = [TV(("k", (1, 5)), 0), TV(("k", (2, 30)), 3), TV(("k", (4, 1)), 40),
                TV(("k", (8, 2)), 40.5), TV(("j", (16, 100)), 0)]
        panes = run_collect(lambda p: p | pm.Create(data) | pm.WindowInto(fn)
                            | pm.Map(lambda kv: (kv[0], kv[1][0])) | pm.CombinePerKey(sum))
        got = sorted(((wv.value, wv.window) for wv in panes), key=repr)
        assert got == sorted([(("k", 3), iw(0, 33)), (("k", 12), iw(40, 42.5)),
                              (("j", 16), iw(0, 100))], key=repr)

    def test_custom_merging_in_stream_order(self):
        fn = ValueGapSessions()
        stream = (pm.TestStream()
                  .add_elements([TV(("k", (1, 5)), 0)])
                  .add_elements([TV(("k", (2, 5)), 12)])
                  .advance_watermark_to(2)
                  .add_elements([TV(("k", (4, 10)), 4)])   # bridges [0,5) and [12,17)
                  .advance_watermark_to_infinity())
        panes = run_collect(lambda p: p | stream | pm.WindowInto(fn)
                            | pm.Map(lambda kv: (kv[0], kv[1][0])) | pm.CombinePerKey(sum))
        assert [(wv.value, wv.window) for wv in panes] == [(("k", 7), iw(0, 17))]

    def test_subclass_of_builtin_overriding_assign_windows_is_used(self):
        class Halves(pm.FixedWindows):
            """FixedWindows(10) whose windows are put in the first half of the size instead."""

            def assign_windows(self, timestamp, element):
                s = int(timestamp) // 20 * 20
                return [pm.IntervalWindow(s, s + 20)]

        fn = Halves(10)
        assert list(fn.assign_windows(25, None)) == [iw(20, 40)]
        data = [TV(("k", 1), 5), TV(("k", 2), 15)]
        panes = run_collect(lambda p: p | pm.Create(data) | pm.WindowInto(fn) | pm.GroupByKey())
        assert grouped(panes) == {("k", iw(0, 20)): [1, 2]}

    def test_windows_of_a_grouping_output_keep_their_windows(self):
        # after a merging grouping, re-grouping keeps the session windows
        data = [TV(("a", 1), 0), TV(("a", 2), 4), TV(("b", 3), 0), TV(("b", 4), 4)]
        panes = run_collect(lambda p: p | pm.Create(data) | pm.WindowInto(pm.Sessions(5))
                            | pm.CombinePerKey(sum) | pm.Map(lambda kv: ("all", kv[1]))
                            | pm.CombinePerKey(sum))
        assert [(wv.value, wv.window) for wv in panes] == [(("all", 10), iw(0, 9))]


def test_window_param_sees_assigned_windows():
    seen = []
    run_collect(lambda p: p | pm.Create([TV("x", 25)]) | pm.WindowInto(pm.SlidingWindows(20, 10))
                | pm.Map(lambda v, w=pm.DoFn.WindowParam, t=pm.DoFn.TimestampParam:
                         seen.append((v, w, t))))
    assert sorted(seen, key=lambda s: s[1]) == [("x", iw(10, 30), pm.Timestamp(25)),
                                                ("x", iw(20, 40), pm.Timestamp(25))]


def test_rewindowing_into_global_windows():
    data = [TV(("k", 1), 5), TV(("k", 2), 500)]
    panes = run_collect(lambda p: p | pm.Create(data) | pm.WindowInto(pm.FixedWindows(10))
                        | pm.WindowInto(pm.GlobalWindows()) | pm.GroupByKey())
    assert grouped(panes) == {("k", pm.GlobalWindow()): [1, 2]}
