"""The model's invariants, property-based (hypothesis): random timestamped streams split into
TestStream steps with random watermark and processing-time advances, random windowing and
random compositions of the built-in triggers, allowed lateness large enough to keep every
element, ending with the watermark at infinity.

The expected answers come from an independent batch computation written here in plain Python
(window assignment and session merging included), not from pomset's kernel."""
from __future__ import annotations

import os
from collections import Counter, defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pomset as pm

US = 1_000_000
LATENESS = 10**6          # seconds: keeps every element of these streams
KEYS = "abc"

# PM_EXAMPLES=5000 for a longer hunt; 60 keeps the suite quick.
SETTINGS = settings(max_examples=int(os.environ.get("PM_EXAMPLES", 60)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --- the independent batch computation ------------------------------------------------------------

def batch_windows(spec, t_us):
    """The windows [start, end) in µs that an element at t_us belongs to (non-merging)."""
    kind = spec[0]
    if kind == "fixed":
        _, size, offset = spec
        size, offset = size * US, offset * US
        start = t_us - (t_us - offset) % size
        return [(start, start + size)]
    if kind == "sliding":
        _, size, period, offset = spec
        size, period, offset = size * US, period * US, offset * US
        last = t_us - (t_us - offset) % period
        out = []
        s = last
        while s > t_us - size:
            out.append((s, s + size))
            s -= period
        return out
    raise ValueError(kind)


def batch_sessions(times_values, gap_us):
    """[(start, end, sum)] of one key's sessions: sorted by time, a new session starts where
    the next element is at or after the current session's end."""
    out = []
    for t, v in sorted(times_values):
        if out and t < out[-1][1]:
            s, e, total = out[-1]
            out[-1] = (s, max(e, t + gap_us), total + v)
        else:
            out.append((t, t + gap_us, v))
    return out


def batch(events, spec, agg="sum"):
    """{(key, (start_us, end_us)): sum} (or, for a list aggregation, the sorted values)."""
    result = defaultdict(list)
    if spec[0] == "sessions":
        per_key = defaultdict(list)
        for k, v, t in events:
            per_key[k].append((to_us(t), v))
        gap = spec[1] * US
        for k, tvs in per_key.items():
            for s, e, _ in batch_sessions(tvs, gap):
                result[(k, (s, e))] = [v for t, v in tvs if s <= t < e]
    else:
        for k, v, t in events:
            for w in batch_windows(spec, to_us(t)):
                result[(k, w)].append(v)
    if agg == "sum":
        return {kw: sum(vs) for kw, vs in result.items()}
    return {kw: tuple(sorted(vs)) for kw, vs in result.items()}


def freeze(v):
    """A pane's value as compared with the batch answer: lists compare sorted."""
    return tuple(sorted(v)) if isinstance(v, list) else v


AGGREGATIONS = {"sum": lambda: pm.CombinePerKey(sum), "gbk": pm.GroupByKey,
                "tolist": lambda: pm.CombinePerKey(pm.ToList())}
agg_st = st.sampled_from(sorted(AGGREGATIONS))


def to_us(t):
    return int(round(t * US))


def span(window):
    return (window.start.micros, window.end.micros)


# --- strategies -------------------------------------------------------------------------------------

events_st = st.lists(
    st.tuples(st.sampled_from(KEYS), st.integers(1, 20), st.integers(0, 400).map(lambda h: h / 2)),
    min_size=1, max_size=24)

fixed_st = st.tuples(st.just("fixed"), st.sampled_from([5, 10, 30]), st.sampled_from([0, 2]))
sliding_st = st.sampled_from([(10, 5), (30, 10), (10, 3), (6, 4)]).flatmap(
    lambda sp: st.sampled_from([0, 1]).map(lambda off: ("sliding", sp[0], sp[1], off)))
sessions_st = st.sampled_from([2, 5, 15, 40]).map(lambda g: ("sessions", g))
window_st = st.one_of(fixed_st, sliding_st, sessions_st)


def window_fn(spec):
    if spec[0] == "fixed":
        return pm.FixedWindows(spec[1], offset=spec[2])
    if spec[0] == "sliding":
        return pm.SlidingWindows(spec[1], spec[2], offset=spec[3])
    return pm.Sessions(spec[1])


leaf_st = st.one_of(
    st.integers(1, 3).map(pm.AfterCount),
    st.sampled_from([0, 5, 10]).map(pm.AfterProcessingTime),
    st.sampled_from([5, 10]).map(pm.AtPeriod),
)


def _pair(kids, make):
    return st.tuples(kids, kids).map(lambda t: make(*t))


sub_st = st.recursive(leaf_st, lambda kids: st.one_of(
    _pair(kids, pm.AfterAny), _pair(kids, pm.AfterAll), _pair(kids, pm.AfterEach),
    _pair(kids, pm.OrFinally), kids.map(pm.Repeatedly)), max_leaves=4)

# Roots that never finish, so every element reaches a pane.
trigger_st = st.one_of(
    st.just(pm.DefaultTrigger()),
    st.just(pm.Never()),
    sub_st.map(pm.Repeatedly),
    st.tuples(st.none() | sub_st, sub_st).map(lambda t: pm.AfterWatermark(early=t[0], late=t[1])),
    sub_st.map(lambda t: pm.Repeatedly(pm.AfterWatermark(early=t))),
    sub_st.map(lambda t: pm.Repeatedly(pm.AfterAny(pm.AfterWatermark(), t))),
)

# For the sessions properties: also triggers that fire on every element, so that sessions are
# often emitted before they merge (and must then be retracted).
eager_trigger_st = st.one_of(trigger_st, st.sampled_from([
    pm.Repeatedly(pm.AfterCount(1)),
    pm.AfterWatermark(early=pm.AfterCount(1), late=pm.AfterCount(1)),
    pm.AfterWatermark(early=pm.AfterProcessingTime(1), late=pm.AfterCount(1)),
]))

combiner_st = st.sampled_from(list(pm.TimestampCombiner))


@st.composite
def steps_st(draw, events):
    """Split `events` (in this arrival order) into bundles, with watermark advances that never
    go back and processing-time advances in between."""
    steps, wm, i = [], 0.0, 0
    while i < len(events):
        n = draw(st.integers(1, 4))
        steps.append(("e", events[i:i + n]))
        i += n
        act = draw(st.sampled_from(["none", "wm", "pt", "both"]))
        if act in ("wm", "both"):
            wm += draw(st.integers(0, 80)) / 2
            steps.append(("wm", wm))
        if act in ("pt", "both"):
            steps.append(("pt", draw(st.integers(1, 15))))
    return steps


def make_stream(steps):
    s = pm.TestStream()
    for kind, arg in steps:
        if kind == "e":
            s = s.add_elements([pm.TimestampedValue((k, v), t) for k, v, t in arg])
        elif kind == "wm":
            s = s.advance_watermark_to(arg)
        else:
            s = s.advance_processing_time(arg)
    return s.advance_watermark_to_infinity()


def run(steps, spec, trigger, mode, combiner=pm.TimestampCombiner.OUTPUT_AT_EOW, then=None,
        agg="sum"):
    p = pm.Pipeline(runner="local")
    sums = (p | make_stream(steps)
            | pm.WindowInto(window_fn(spec), trigger=trigger, accumulation_mode=mode,
                            allowed_lateness=LATENESS, timestamp_combiner=combiner)
            | AGGREGATIONS[agg]()).keep()
    after = then(sums) if then is not None else None
    result = p.run()
    assert result.counter("dropped") == 0
    for wv in result.collect(sums):
        # a pane is output at a time inside its window (at its end for OUTPUT_AT_EOW)
        assert wv.window.start <= wv.timestamp <= wv.window.max_timestamp(), wv
        if combiner is pm.TimestampCombiner.OUTPUT_AT_EOW:
            assert wv.timestamp == wv.window.max_timestamp(), wv
    return result.collect(sums), (result.collect(after) if after is not None else None)


def net(panes):
    """Apply the diffs: {(key, span, value): count} with zero counts dropped; also checks that
    a retraction always cancels a datum emitted before it."""
    running = Counter()
    for wv in panes:
        k, v = wv.value
        entry = (k, span(wv.window), freeze(v))
        running[entry] += wv.diff
        assert running[entry] >= 0, f"retraction of something never emitted: {wv}"
    return {kv: n for kv, n in running.items() if n}


# --- properties -----------------------------------------------------------------------------------

@SETTINGS
@given(st.data(), events_st, window_st, trigger_st, combiner_st, agg_st)
def test_retracting_panes_net_to_the_batch_result(data, events, spec, trigger, combiner, agg):
    steps = data.draw(steps_st(events))
    panes, _ = run(steps, spec, trigger, pm.AccumulationMode.RETRACTING, combiner, agg=agg)
    expected = batch(events, spec, agg)
    # what remains once the diffs are applied is exactly one pane per answer window, with
    # the batch value; windows merged away net to nothing
    assert net(panes) == {(k, w, value): 1 for (k, w), value in expected.items()}
    if agg == "sum":
        # so the sum of diff * value per key and window is the batch sum (zero for windows
        # merged away)
        sums = defaultdict(int)
        for wv in panes:
            sums[(wv.value[0], span(wv.window))] += wv.diff * wv.value[1]
        assert {kw: s for kw, s in sums.items() if s or kw in expected} == expected


@SETTINGS
@given(st.data(), events_st, window_st, trigger_st, agg_st)
def test_discarding_panes_add_up_to_the_batch_result(data, events, spec, trigger, agg):
    steps = data.draw(steps_st(events))
    panes, _ = run(steps, spec, trigger, pm.AccumulationMode.DISCARDING, agg=agg)
    expected = batch(events, spec, agg)
    assert all(wv.diff == 1 for wv in panes)
    got = defaultdict(list)
    for wv in panes:
        k, v = wv.value
        owner = (k, _attribute(k, span(wv.window), expected, spec))
        got[owner].extend(v if isinstance(v, list) else [v])
    got = {kw: (sum(vs) if agg == "sum" else tuple(sorted(vs))) for kw, vs in got.items()}
    assert {kw: v for kw, v in got.items() if v or kw in expected} == expected


def _attribute(key, window, expected, spec):
    """The answer window a pane's window belongs to: itself, or for sessions the final session
    that contains it (a session only ever grows by merging)."""
    if spec[0] != "sessions":
        return window
    owners = [w for (k, w) in expected if k == key and w[0] <= window[0] and window[1] <= w[1]]
    assert len(owners) == 1, (key, window, owners)
    return owners[0]


@SETTINGS
@given(st.data(), events_st, window_st, trigger_st, agg_st)
def test_accumulating_last_pane_is_the_batch_result(data, events, spec, trigger, agg):
    steps = data.draw(steps_st(events))
    panes, _ = run(steps, spec, trigger, pm.AccumulationMode.ACCUMULATING, agg=agg)
    expected = batch(events, spec, agg)
    assert all(wv.diff == 1 for wv in panes)
    last = {}
    for wv in panes:
        last[(wv.value[0], span(wv.window))] = freeze(wv.value[1])
    assert {kw: v for kw, v in last.items() if kw in expected} == expected
    if spec[0] != "sessions":
        # without merging, every window that emitted is part of the answer
        assert {kw: v for kw, v in last.items() if v or kw in expected} == expected


@SETTINGS
@given(st.data(), events_st, window_st, trigger_st, st.sampled_from(list(pm.AccumulationMode)))
def test_pane_info_sequence_per_window(data, events, spec, trigger, mode):
    """Each window's panes are numbered from 0, also with sessions: pane state is per window
    and not merged (Beam), so a window made by a merge starts afresh, and one that a merge
    leaves as it was goes on."""
    steps = data.draw(steps_st(events))
    panes, _ = run(steps, spec, trigger, mode)
    by_window = defaultdict(list)
    for wv in panes:
        if wv.diff == 1:
            by_window[(wv.value[0], span(wv.window))].append(wv.pane)
    if spec[0] == "sessions":   # sessions merged away emitted panes too
        assert set(batch(events, spec)) <= set(by_window)
    else:
        assert set(by_window) == set(batch(events, spec))
    E, O, L = pm.PaneTiming.EARLY, pm.PaneTiming.ON_TIME, pm.PaneTiming.LATE
    for infos in by_window.values():
        assert [pi.index for pi in infos] == list(range(len(infos)))
        assert [pi.is_first for pi in infos] == [True] + [False] * (len(infos) - 1)
        assert [pi.is_last for pi in infos[:-1]] == [False] * (len(infos) - 1)
        timings = [pi.timing for pi in infos]
        n_early = timings.count(E)
        assert timings[:n_early] == [E] * n_early
        rest = timings[n_early:]
        assert rest.count(O) <= 1 and (O not in rest or rest[0] is O)
        assert all(t in (O, L) for t in rest)
        assert [pi.nonspeculative_index for pi in infos] == [-1] * n_early + list(range(len(rest)))


@SETTINGS
@given(st.data(), events_st, window_st.filter(lambda s: s[0] != "sessions"), trigger_st, agg_st)
def test_the_three_modes_agree_pane_by_pane(data, events, spec, trigger, agg):
    """Same input, same trigger: the modes fire the same panes; an accumulating pane is the
    aggregate of the discarding panes so far; a retracting pane retracts the previous
    accumulating pane and then emits the current one."""
    steps = data.draw(steps_st(events))
    runs = {m: run(steps, spec, trigger, m, agg=agg)[0] for m in pm.AccumulationMode}
    disc = runs[pm.AccumulationMode.DISCARDING]
    acc = runs[pm.AccumulationMode.ACCUMULATING]
    ret = runs[pm.AccumulationMode.RETRACTING]
    firing = lambda panes: [(wv.value[0], span(wv.window), wv.pane) for wv in panes if wv.diff == 1]
    assert firing(disc) == firing(acc) == firing(ret)
    so_far = defaultdict(list)
    for d, a in zip(disc, acc):
        v = d.value[1]
        so_far[(d.value[0], span(d.window))].extend(v if isinstance(v, list) else [v])
        vs = so_far[(d.value[0], span(d.window))]
        assert freeze(a.value[1]) == (sum(vs) if agg == "sum" else tuple(sorted(vs)))
    previous = {}
    expected_ret = []
    for a in acc:
        kw = (a.value[0], span(a.window))
        if kw in previous:
            expected_ret.append((kw, previous[kw], -1, a.pane))
        expected_ret.append((kw, freeze(a.value[1]), 1, a.pane))
        previous[kw] = freeze(a.value[1])
    assert [((r.value[0], span(r.window)), freeze(r.value[1]), r.diff, r.pane) for r in ret] == \
        expected_ret


@SETTINGS
@given(st.data(), events_st, st.sampled_from([2, 5, 15, 40]), eager_trigger_st)
def test_sessions_are_the_same_whatever_the_arrival_order(data, events, gap, trigger):
    spec = ("sessions", gap)
    order = data.draw(st.permutations(events))
    first, _ = run(data.draw(steps_st(events)), spec, trigger, pm.AccumulationMode.RETRACTING)
    second, _ = run(data.draw(steps_st(order)), spec, trigger, pm.AccumulationMode.RETRACTING)
    assert net(first) == net(second)
    assert net(first) == {(k, w, total): 1 for (k, w), total in batch(events, spec).items()}


class _IntoSpan(pm.WindowFn):
    """A merging WindowFn: an element at t opens [t, t + 1), except that a value 0 (an anchor)
    opens SPAN; while SPAN is active, every window inside it merges into it."""

    END = 201   # past every event time of events_st
    SPAN = pm.IntervalWindow(0, END)

    def assign_windows(self, timestamp, element):
        return [self.SPAN if element[1] == 0 else pm.IntervalWindow(timestamp, timestamp + 1)]

    def merge_windows(self, windows):
        inside = [w for w in windows if self.SPAN.start <= w.start and w.end <= self.SPAN.end]
        return [(inside, self.SPAN)] if self.SPAN in windows and len(inside) > 1 else []


# Also roots that finish (a finished window's pane is its last; what comes after is dropped).
any_root_trigger_st = st.one_of(trigger_st, sub_st,
                                sub_st.map(lambda t: pm.AfterWatermark(early=t)))


@SETTINGS
@given(st.data(), events_st, any_root_trigger_st, st.sampled_from(list(pm.AccumulationMode)),
       combiner_st)
def test_merging_into_an_existing_window_is_assignment_to_it(data, events, trigger, mode,
                                                             combiner):
    """Beam: a new window brings no trigger or pane state to a merge, so an element whose
    window merges into an existing window W (the result being W) is treated exactly as if it
    had been assigned to W. Each key's anchor opens SPAN first; every later element's window
    merges into it: the panes are those of FixedWindows(SPAN) (every trigger, mode and
    timestamp combiner), and so are the late and dropped counts."""
    keys = sorted({k for k, _, _ in events})
    steps = [("e", [(k, 0, 0) for k in keys])] + data.draw(steps_st(events))

    def panes(window_fn):
        p = pm.Pipeline(runner="local")
        out = (p | make_stream(steps)
               | pm.WindowInto(window_fn, trigger=trigger, accumulation_mode=mode,
                               allowed_lateness=LATENESS, timestamp_combiner=combiner)
               | pm.CombinePerKey(sum))
        result = p.run()
        per_window = defaultdict(list)
        for wv in result.collect(out):
            per_window[(wv.value[0], wv.window)].append((wv.value[1], wv.ts, wv.pane, wv.diff))
        return per_window, result.counter("late"), result.counter("dropped")

    assert panes(_IntoSpan()) == panes(pm.FixedWindows(_IntoSpan.END))


def _rekey(key):
    return "ab" if key in "ab" else "c"


@SETTINGS
@given(st.data(), events_st, st.sampled_from([2, 5, 15, 40]), eager_trigger_st)
def test_retracting_sessions_then_a_second_grouping(data, events, gap, trigger):
    spec = ("sessions", gap)
    steps = data.draw(steps_st(events))
    _, downstream = run(steps, spec, trigger, pm.AccumulationMode.RETRACTING,
                        then=lambda sums: (sums | pm.Map(lambda kv: (_rekey(kv[0]), kv[1]))
                                           | pm.CombinePerKey(sum)))
    expected = defaultdict(int)
    for (k, w), total in batch(events, spec).items():
        expected[(_rekey(k), w)] += total
    got = defaultdict(int)
    for wv in downstream:
        got[(wv.value[0], span(wv.window))] += wv.diff * wv.value[1]
    assert {kw: s for kw, s in got.items() if s or kw in expected} == dict(expected)


# --- the batch computation itself, on known cases -----------------------------------------------------

def test_batch_helpers():
    assert batch_windows(("fixed", 10, 2), 15 * US) == [(12 * US, 22 * US)]
    assert sorted(batch_windows(("sliding", 10, 5, 0), 12 * US)) == [(5 * US, 15 * US),
                                                                     (10 * US, 20 * US)]
    assert batch_sessions([(0, 1), (15, 2), (8, 4), (30, 8)], 10) == [(0, 25, 7), (30, 40, 8)]
    assert batch_sessions([(0, 1), (10, 2)], 10) == [(0, 10, 1), (10, 20, 2)]
    assert batch([("a", 1, 0), ("a", 2, 0.5), ("b", 4, 3)], ("sessions", 1)) == {
        ("a", (0, 1_500_000)): 3, ("b", (3 * US, 4 * US)): 4}
