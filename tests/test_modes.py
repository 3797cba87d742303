"""How refinements relate: discarding, accumulating, and accumulating-and-retracting panes,
retractions flowing through downstream transforms, and session-merge retractions (the
paper's Figure 14)."""
from __future__ import annotations

from collections import Counter

import pytest

import pomset as pm

from combinefns import NoRetract

TV = pm.TimestampedValue
EARLY, ON_TIME, LATE = pm.PaneTiming.EARLY, pm.PaneTiming.ON_TIME, pm.PaneTiming.LATE
DISCARDING = pm.AccumulationMode.DISCARDING
ACCUMULATING = pm.AccumulationMode.ACCUMULATING
RETRACTING = pm.AccumulationMode.RETRACTING


def iw(s, e):
    return pm.IntervalWindow(s, e)


def stream(*steps):
    s = pm.TestStream()
    for kind, arg in steps:
        if kind == "e":
            s = s.add_elements(arg)
        elif kind == "wm":
            s = s.advance_watermark_to_infinity() if arg == "inf" else s.advance_watermark_to(arg)
        else:
            s = s.advance_processing_time(arg)
    return s


def e(*pairs, key="k"):
    return ("e", [TV((key, v), t) for v, t in pairs])


def wm(t):
    return ("wm", t)


def pt(d):
    return ("pt", d)


def net(panes, value=lambda v: v):
    """Apply diffs: the multiset of (value, window) that remains, zero counts dropped."""
    c = Counter()
    for wv in panes:
        c[(_freeze(value(wv.value)), wv.window)] += wv.diff
    return {k: n for k, n in c.items() if n}


def _freeze(v):
    if isinstance(v, list):
        return tuple(sorted(v, key=repr))
    if isinstance(v, tuple):
        return tuple(_freeze(x) for x in v)
    return v


def vd(panes):
    """(value, diff) per output."""
    return [(wv.value[1], wv.diff) for wv in panes]


# A window [0, 10) that gets 1, 2, 3 early, 4 on time and 5 late, firing per element.
SRC = stream(e((1, 1)), e((2, 2)), e((3, 3)), wm(5), e((4, 4)), wm(10), e((5, 5)), wm("inf"))
PER_ELEMENT = pm.AfterWatermark(early=pm.AfterCount(1), late=pm.AfterCount(1))


def run_mode(mode, agg=None, trigger=PER_ELEMENT, src=SRC):
    p = pm.Pipeline(runner="local")
    out = (p | src | pm.WindowInto(pm.FixedWindows(10), trigger=trigger, accumulation_mode=mode,
                                   allowed_lateness=100)
           | (agg if agg is not None else pm.CombinePerKey(sum)))
    return p.run().collect(out)


class TestThreeModes:
    def test_discarding_panes_hold_what_arrived_since_the_last(self):
        panes = run_mode(DISCARDING)
        # 4 arrives at watermark 5 (early, fires alone); the on-time pane is then empty
        assert vd(panes) == [(1, 1), (2, 1), (3, 1), (4, 1), (0, 1), (5, 1)]
        assert [wv.pane.timing for wv in panes] == [EARLY] * 4 + [ON_TIME, LATE]
        assert sum(v for v, _ in vd(panes)) == 15

    def test_accumulating_panes_hold_everything_so_far(self):
        panes = run_mode(ACCUMULATING)
        assert vd(panes) == [(1, 1), (3, 1), (6, 1), (10, 1), (10, 1), (15, 1)]
        assert panes[-1].value == ("k", 15)

    def test_retracting_panes_retract_the_previous_pane_first(self):
        panes = run_mode(RETRACTING)
        assert vd(panes) == [(1, 1),
                             (1, -1), (3, 1),
                             (3, -1), (6, 1),
                             (6, -1), (10, 1),
                             (10, -1), (10, 1),
                             (10, -1), (15, 1)]
        # a retraction is part of the pane it precedes and repeats what it retracts
        for old, retraction, new in zip(panes[0::2], panes[1::2], panes[2::2]):
            assert retraction.pane == new.pane
            assert (retraction.value, retraction.window, retraction.timestamp) == \
                (old.value, old.window, old.timestamp)
        assert net(panes) == {(("k", 15), iw(0, 10)): 1}

    def test_pane_info_is_the_same_in_every_mode(self):
        infos = [[wv.pane for wv in run_mode(m) if wv.diff == 1]
                 for m in (DISCARDING, ACCUMULATING, RETRACTING)]
        assert infos[0] == infos[1] == infos[2]
        assert [(pi.timing, pi.index, pi.nonspeculative_index) for pi in infos[0]] == [
            (EARLY, 0, -1), (EARLY, 1, -1), (EARLY, 2, -1), (EARLY, 3, -1), (ON_TIME, 4, 0),
            (LATE, 5, 1)]

    def test_group_by_key_in_each_mode(self):
        d = run_mode(DISCARDING, agg=pm.GroupByKey())
        a = run_mode(ACCUMULATING, agg=pm.GroupByKey())
        r = run_mode(RETRACTING, agg=pm.GroupByKey())
        assert [wv.value[1] for wv in d] == [[1], [2], [3], [4], [], [5]]
        assert [sorted(wv.value[1]) for wv in a] == [[1], [1, 2], [1, 2, 3], [1, 2, 3, 4],
                                                     [1, 2, 3, 4], [1, 2, 3, 4, 5]]
        assert net(r) == {(("k", (1, 2, 3, 4, 5)), iw(0, 10)): 1}
        assert [wv.diff for wv in r] == [1] + [-1, 1] * 5

    def test_accumulating_outputs_are_not_rewritten_by_later_panes(self):
        # a CombineFn whose extract_output returns its (mutable) accumulator
        panes = run_mode(ACCUMULATING, agg=pm.CombinePerKey(pm.ToList()))
        assert [sorted(wv.value[1]) for wv in panes] == [[1], [1, 2], [1, 2, 3], [1, 2, 3, 4],
                                                         [1, 2, 3, 4], [1, 2, 3, 4, 5]]

    def test_retracting_combiners(self):
        for fn, final in [(pm.Count(), 5), (pm.Mean(), 3.0), (pm.Min(), 1), (pm.Max(), 5),
                          (pm.ToList(), (1, 2, 3, 4, 5)), (pm.Top(2), (4, 5)),   # (lists are compared sorted)
                          
                          (lambda vs: sum(vs) * 10, 150)]:
            panes = run_mode(RETRACTING, agg=pm.CombinePerKey(fn))
            assert net(panes) == {(("k", final), iw(0, 10)): 1}, fn

    def test_fluent_mode_methods(self):
        def build(p, how):
            return how((p | SRC).window_into(pm.FixedWindows(10)).triggering(PER_ELEMENT)
                       .with_allowed_lateness(100)).combine_per_key(sum)
        results = {}
        for name, how in [("d", lambda pc: pc.discarding()), ("a", lambda pc: pc.accumulating()),
                          ("r", lambda pc: pc.retracting())]:
            p = pm.Pipeline(runner="local")
            out = build(p, how)
            results[name] = vd(p.run().collect(out))
        assert results["d"] == vd(run_mode(DISCARDING))
        assert results["a"] == vd(run_mode(ACCUMULATING))
        assert results["r"] == vd(run_mode(RETRACTING))


# --- retractions flowing downstream --------------------------------------------------------------

def retracting_sums(p, src):
    """Per-key sums in [0, 10), a pane per element, retracting."""
    return (p | src | pm.WindowInto(pm.FixedWindows(10), trigger=PER_ELEMENT,
                                    accumulation_mode=RETRACTING, allowed_lateness=100)
            | pm.CombinePerKey(sum))


SRC2 = stream(e((1, 1), key="a"), e((2, 2), key="b"), e((3, 3), key="a"), wm(10),
              e((5, 4), key="a"), wm("inf"))
FINAL2 = {"a": 9, "b": 2}


class TestRetractionsDownstream:
    def test_map_keeps_diffs(self):
        p = pm.Pipeline(runner="local")
        sums = retracting_sums(p, SRC2).keep()
        doubled = sums | pm.Map(lambda kv: (kv[0], kv[1] * 2))
        result = p.run()
        ups, downs = result.collect(sums), result.collect(doubled)
        assert [(wv.value[1] * 2, wv.diff, wv.pane) for wv in ups] == \
            [(wv.value[1], wv.diff, wv.pane) for wv in downs]
        assert net(downs) == {(("a", 18), iw(0, 10)): 1, (("b", 4), iw(0, 10)): 1}

    def test_flat_map_and_filter_keep_diffs(self):
        p = pm.Pipeline(runner="local")
        sums = retracting_sums(p, SRC2)
        twice = sums | pm.FlatMap(lambda kv: [kv[1], kv[1]])
        big = sums | pm.Filter(lambda kv: kv[1] > 2)
        result = p.run()
        assert net(result.collect(twice)) == {(9, iw(0, 10)): 2, (2, iw(0, 10)): 2}
        assert net(result.collect(big)) == {(("a", 9), iw(0, 10)): 1}
        # the filter passes the retraction of 4 as well as 4 itself
        assert [(wv.value, wv.diff) for wv in result.collect(big)][:2] == [(("a", 4), 1),
                                                                          (("a", 4), -1)]

    def test_group_by_key_removes_retracted_values(self):
        p = pm.Pipeline(runner="local")
        sums = retracting_sums(p, SRC2)
        by_parity = sums | pm.Map(lambda kv: (kv[1] % 2, kv[0])) | pm.GroupByKey()
        result = p.run()
        # in the end: a=9 (odd) and b=2 (even); a passed through even (4) on the way
        assert net(result.collect(by_parity)) == {((1, ("a",)), iw(0, 10)): 1,
                                                  ((0, ("b",)), iw(0, 10)): 1}

    def test_combine_per_key_retracts_inputs(self):
        p = pm.Pipeline(runner="local")
        sums = retracting_sums(p, SRC2)
        total = sums | pm.Map(lambda kv: ("all", kv[1])) | pm.CombinePerKey(sum)
        biggest = sums | "ToAll" >> pm.Map(lambda kv: ("all", kv[1])) | pm.CombinePerKey(pm.Max())
        count = sums | "ToAll2" >> pm.Map(lambda kv: ("all", kv[0])) | pm.CombinePerKey(pm.Count())
        result = p.run()
        assert net(result.collect(total)) == {(("all", 11), iw(0, 10)): 1}
        assert net(result.collect(biggest)) == {(("all", 9), iw(0, 10)): 1}
        assert net(result.collect(count)) == {(("all", 2), iw(0, 10)): 1}
        # every downstream pane is consistent: the running net sum never counts a key twice
        running = 0
        for wv in result.collect(total):
            running += wv.diff * wv.value[1]
        assert running == 11

    def test_combine_globally_and_distinct_downstream(self):
        p = pm.Pipeline(runner="local")
        sums = retracting_sums(p, SRC2)
        glob = sums | pm.Values() | pm.CombineGlobally(sum)
        distinct = sums | "V" >> pm.Values() | pm.Distinct()
        result = p.run()
        assert net(result.collect(glob)) == {(11, iw(0, 10)): 1}
        assert net(result.collect(distinct)) == {(9, iw(0, 10)): 1, (2, iw(0, 10)): 1}

    def test_side_input_of_a_retracting_grouping_sees_the_net_values(self):
        p = pm.Pipeline(runner="local")
        sums = (p | pm.Create([TV(("a", 1), 1), TV(("a", 2), 2), TV(("b", 5), 3)])
                | pm.WindowInto(trigger=pm.Repeatedly(pm.AfterCount(1)),
                                accumulation_mode=RETRACTING)
                | pm.CombinePerKey(sum)).keep()
        looked_up = (p | "Keys" >> pm.Create(["a", "b"])
                     | pm.Map(lambda k, d: (k, d[k]), pm.AsDict(sums)))
        result = p.run()
        assert any(wv.diff == -1 for wv in result.collect(sums))
        assert [wv.value for wv in result.collect(looked_up)] == [("a", 3), ("b", 5)]

    def test_discarding_downstream_of_retractions_emits_deltas(self):
        # re-windowed to discarding: each downstream pane holds the change since the last,
        # retractions included, and the panes add up to the answer
        p = pm.Pipeline(runner="local")
        sums = retracting_sums(p, SRC2)
        deltas = (sums | pm.Map(lambda kv: ("all", kv[1]))
                  | pm.WindowInto(accumulation_mode=DISCARDING) | pm.CombinePerKey(sum))
        lists = (sums | "M" >> pm.Map(lambda kv: ("all", kv[1]))
                 | "W" >> pm.WindowInto(accumulation_mode=DISCARDING) | pm.GroupByKey())
        result = p.run()
        d = result.collect(deltas)
        assert all(wv.diff == 1 for wv in d)
        assert sum(wv.value[1] for wv in d) == 11
        assert any(wv.value[1] < 0 for wv in d)
        # a discarding GroupByKey emits retracted values it already emitted as a -1 pane
        got = Counter()
        for wv in result.collect(lists):
            for v in wv.value[1]:
                got[v] += wv.diff
        assert {v: n for v, n in got.items() if n} == {9: 1, 2: 1}
        assert any(wv.diff == -1 for wv in result.collect(lists))


# --- sessions: merge retractions ---------------------------------------------------------------

def firings(panes):
    """Split a retracting combine's output into firings: (retractions, datum), where each
    firing is zero or more retractions followed by its one datum."""
    out, pending = [], []
    for wv in panes:
        if wv.diff == -1:
            pending.append((wv.value[1], wv.window))
        else:
            out.append((sorted(pending, key=lambda r: (r[1], r[0])), (wv.value[1], wv.window),
                        wv.pane.timing))
            pending = []
    assert not pending, "retractions must precede a datum in the same firing"
    return out


def no_op(firing):
    """A firing that retracts and re-emits the same value in the same window."""
    retractions, datum, _ = firing
    return retractions == [datum]


class TestSessionRetractions:
    def test_merge_retracts_the_merged_sessions(self):
        src = stream(e((1, 0)), e((2, 20)), e((4, 12)), wm("inf"))
        p = pm.Pipeline(runner="local")
        out = (p | src | pm.WindowInto(pm.Sessions(10), trigger=pm.AfterWatermark(
            early=pm.AfterCount(1)), accumulation_mode=RETRACTING) | pm.CombinePerKey(sum))
        panes = p.run().collect(out)
        fs = [f for f in firings(panes) if not no_op(f)]
        assert fs == [([], (1, iw(0, 10)), EARLY),
                      ([], (2, iw(20, 30)), EARLY),
                      ([(2, iw(20, 30))], (6, iw(12, 30)), EARLY)]
        assert net(panes) == {(("k", 1), iw(0, 10)): 1, (("k", 6), iw(12, 30)): 1}

    def test_merge_of_two_emitted_sessions_retracts_both(self):
        src = stream(e((1, 0)), e((2, 15)), wm(30), e((4, 8)), wm("inf"))
        p = pm.Pipeline(runner="local")
        out = (p | src | pm.WindowInto(pm.Sessions(10), accumulation_mode=RETRACTING,
                                       allowed_lateness=100) | pm.CombinePerKey(sum))
        panes = p.run().collect(out)
        fs = firings(panes)
        # the two sessions fire on time (in either order), then the late 8 joins them
        assert sorted(fs[:2], key=lambda f: f[1][1]) == [([], (1, iw(0, 10)), ON_TIME),
                                                          ([], (2, iw(15, 25)), ON_TIME)]
        assert fs[2:] == [([(1, iw(0, 10)), (2, iw(15, 25))], (7, iw(0, 25)), LATE)]
        assert net(panes) == {(("k", 7), iw(0, 25)): 1}

    def test_paper_figure_14_sessions_retracting(self):
        # Sessions of one minute; SequenceOf(RepeatUntil(AtPeriod(1 min), AtWatermark()),
        # Repeat(AtWatermark())), accumulating and retracting, summed per key. Event times are
        # seconds; the TestStream's processing clock starts at 0.
        src = stream(
            pt(10), e((5, 60)), e((7, 150)),             # two singleton sessions ...
            pt(50),                                       # ... emitted at the 60 s boundary
            pt(5), e((3, 240), (4, 260), (3, 280)),      # a third session, 10 ...
            wm(50), pt(60),                               # ... emitted at the 120 s boundary
            e((8, 200)),                                  # 8 joins the 7 and 10 sessions
            wm(345),                                      # watermark passes the joined session
            e((9, 110)),                                  # late 9 joins the 5 and 25 sessions
            pt(60), e((3, 420)), pt(60),                  # an early 3 session ...
            e((8, 470), (1, 500)),                        # ... grows with 8 and 1
            wm(600), wm("inf"))
        trigger = pm.SequenceOf(pm.RepeatUntil(pm.AtPeriod(60), pm.AtWatermark()),
                                pm.Repeat(pm.AtWatermark()))
        p = pm.Pipeline(runner="local")
        out = (p | src | pm.WindowInto(pm.Sessions(60), trigger=trigger,
                                       accumulation_mode=RETRACTING, allowed_lateness=600)
               | pm.CombinePerKey(pm.Sum()))
        panes = p.run().collect(out)
        fs = [f for f in firings(panes) if not no_op(f)]
        assert fs == [
            ([], (5, iw(60, 120)), EARLY),
            ([], (7, iw(150, 210)), EARLY),
            ([], (10, iw(240, 340)), EARLY),
            ([(7, iw(150, 210)), (10, iw(240, 340))], (25, iw(150, 340)), ON_TIME),
            ([(5, iw(60, 120)), (25, iw(150, 340))], (39, iw(60, 340)), LATE),
            ([], (3, iw(420, 480)), EARLY),
            ([(3, iw(420, 480))], (12, iw(420, 560)), ON_TIME),
        ]
        assert net(panes) == {(("k", 39), iw(60, 340)): 1, (("k", 12), iw(420, 560)): 1}

    def test_retractions_of_merged_sessions_flow_to_a_second_grouping(self):
        src = stream(e((1, 0), key="a"), e((2, 15), key="a"), e((10, 3), key="b"),
                     wm(30), e((4, 8), key="a"), wm("inf"))
        p = pm.Pipeline(runner="local")
        sessions = (p | src | pm.WindowInto(pm.Sessions(10), accumulation_mode=RETRACTING,
                                            allowed_lateness=100) | pm.CombinePerKey(sum))
        totals = sessions | pm.Map(lambda kv: ("all", kv[1])) | pm.CombinePerKey(sum)
        result = p.run()
        sums = Counter()
        for wv in result.collect(totals):
            sums[wv.window] += wv.diff * wv.value[1]
        assert {w: v for w, v in sums.items() if v} == {iw(0, 25): 7, iw(3, 13): 10}
        assert sums[iw(0, 10)] == 0 and sums[iw(15, 25)] == 0   # merged away: net zero


def test_retracting_requires_retract_input_downstream_too():
    p = pm.Pipeline(runner="local")
    sums = retracting_sums(p, SRC2)
    with pytest.raises(pm.PipelineConstructionError, match="retract"):
        sums | pm.Map(lambda kv: ("all", kv[1])) | pm.CombinePerKey(NoRetract())
