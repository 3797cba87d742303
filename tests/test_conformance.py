"""The conformance suite: the same pipelines on every runner mode (local, spark batch, spark
streaming) give the same panes — compared as multisets of (value, timestamp, window, pane,
diff), with grouped value lists compared as multisets — and, where a plain-Python answer is
easy, that answer. Bounded pipelines run in streaming mode as streams that end; TestStream
transcripts (the paper's streaming figures) replay one micro-batch per step on Spark."""
from __future__ import annotations

import json
import os
import random
from collections import Counter, defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pomset as pm
import test_properties as props
from conftest import LOCAL_RUNNERS, runner_flags
from pomset.windowing import PaneTiming


def run(runner: str, build, collect: str = "leaves"):
    """Build a pipeline with `build(p) -> {name: PCollection}`, run it on `runner`; returns
    (result, {name: normalized multiset of its elements})."""
    p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + [
        "--quiet", f"--collect={collect}"]))
    pcolls = build(p)
    result = p.run()
    return result, {name: Counter(_row(wv) for wv in result.collect(pc)) for name, pc in pcolls.items()}


def _norm(v):
    if isinstance(v, list):
        return ("list", tuple(sorted((_norm(x) for x in v), key=repr)))
    if isinstance(v, tuple):
        return tuple(_norm(x) for x in v)
    if isinstance(v, dict):
        return ("dict", tuple(sorted(((k, _norm(x)) for k, x in v.items()), key=repr)))
    return v


def _row(wv):
    return (_norm(wv.value), wv.ts, wv.window, wv.pane, wv.diff)


def values(rows: Counter) -> Counter:
    return Counter({row[0]: n for row, n in rows.items()})


EVENTS = [("a", 1, 5), ("b", 2, 65), ("a", 3, 30), ("a", 4, 70), ("b", 5, 61), ("c", 6, 125),
          ("a", 7, 119), ("b", 8, 10)]


def _keyed(p, events=EVENTS):
    return p | pm.Create(events) | pm.Map(lambda e: pm.TimestampedValue((e[0], e[1]), e[2]))


def _plain_window_sums(events, size):
    sums = defaultdict(int)
    for k, v, t in events:
        sums[(k, t // size * size)] += v
    return sums


# --- windowing and grouping ---------------------------------------------------------------

def test_fixed_window_sums_match_plain_python(runner):
    result, out = run(runner, lambda p: {"sums": _keyed(p) | pm.WindowInto(pm.FixedWindows(60))
                                         | pm.CombinePerKey(sum)})
    got = {(v[0], w.start_us // 1_000_000): v[1] for (v, ts, w, pane, d) in out["sums"]}
    assert got == _plain_window_sums(EVENTS, 60)
    assert all(pane.timing is PaneTiming.ON_TIME and pane.is_first and pane.is_last
               for (_, _, _, pane, _) in out["sums"])


@pytest.fixture(scope="module")
def local_reference():
    """The local runner's answers, computed once per case and compared with each runner's."""
    return {}


CASES = {
    "fixed_sum": lambda p: {"o": _keyed(p) | pm.WindowInto(pm.FixedWindows(60)) | pm.CombinePerKey(sum)},
    "sliding_group": lambda p: {"o": _keyed(p) | pm.WindowInto(pm.SlidingWindows(60, 20))
                                | pm.GroupByKey()},
    "sessions_group_and_count": lambda p: (lambda w: {
        "g": w | "G" >> pm.GroupByKey(),
        "c": w | "C" >> pm.CombinePerKey(pm.Count())})(
            _keyed(p) | pm.WindowInto(pm.Sessions(30))),
    "global_mean_and_list": lambda p: (lambda kv: {
        "mean": kv | "M" >> pm.CombinePerKey(pm.Mean()),
        "list": kv | "L" >> pm.CombinePerKey(pm.ToList()),
        "glob": kv | pm.Values() | "S" >> pm.CombineGlobally(sum)})(_keyed(p)),
    "two_groupings": lambda p: {"o": _keyed(p) | pm.WindowInto(pm.FixedWindows(60))
                                | pm.CombinePerKey(sum)
                                | pm.Map(lambda kv: (kv[1] % 2, kv[1]))
                                | "again" >> pm.CombinePerKey(max)},
    "late_and_early_firings_final_value": lambda p: {
        "o": _keyed(p) | pm.WindowInto(pm.FixedWindows(60),
                                       trigger=pm.AfterWatermark(late=pm.AfterCount(1)),
                                       accumulation_mode=pm.AccumulationMode.ACCUMULATING)
        | pm.CombinePerKey(sum)},
    "timestamps_and_windows_in_dofn": lambda p: {
        "o": _keyed(p) | pm.WindowInto(pm.FixedWindows(60))
        | pm.Map(lambda kv, t=pm.DoFn.TimestampParam, w=pm.DoFn.WindowParam:
                 (kv[0], int(t), int(w.start)))},
    "flatten_flatmap_filter_distinct": lambda p: (lambda a, b: {
        "o": (a, b) | pm.Flatten() | pm.FlatMap(lambda x: [x, x * 10]) | pm.Filter(lambda x: x % 3)
        | pm.Distinct()})(p | "A" >> pm.Create([1, 2, 3, 4]), p | "B" >> pm.Create([3, 4, 5])),
    "grouping_right_after_a_source": lambda p: {
        "o": p | pm.Create([("a", 1), ("b", 2), ("a", 3)]) | pm.CombinePerKey(sum)},
    "one_source_two_branches_grouped_and_shared": lambda p: (lambda xs: {
        "a": xs | "A" >> pm.Map(lambda x: (x % 2, x)) | "GA" >> pm.CombinePerKey(sum),
        "b": xs | "B" >> pm.Map(lambda x: (x % 3, x)) | "GB" >> pm.CombinePerKey(max),
        "f": xs | pm.Filter(lambda x: x > 2) | "F" >> pm.Map(lambda x: x * 10),
        "g": xs | "G" >> pm.Map(lambda x: x + 1)})(p | pm.Create([1, 2, 3, 4, 5])),
    "cogroup_partition_keys": lambda p: (lambda x, y: {
        "co": {"x": x, "y": y} | pm.CoGroupByKey(),
        "keys": x | pm.Keys(),
        "swap": y | pm.KvSwap()})(p | "X" >> pm.Create([("a", 1), ("b", 2), ("a", 3)]),
                                  p | "Y" >> pm.Create([("a", "p"), ("c", "q")])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_matches_the_local_runner(case, runner, local_reference):
    if case not in local_reference:
        local_reference[case] = run("local-sequential", CASES[case])[1]
    expected = local_reference[case]
    got = run(runner, CASES[case])[1]
    if case.startswith("late_and_early"):
        assert values(got) == values(expected)   # panes depend on bundling; values do not
    else:
        assert got == expected


def test_side_inputs(runner):
    def build(p):
        main = p | "main" >> pm.Create([1, 2, 3])
        nums = p | "nums" >> pm.Create([10, 20])
        pairs = p | "pairs" >> pm.Create([(1, "one"), (2, "two"), (3, "three")])
        single = p | "single" >> pm.Create([7])
        return {"l": main | "L" >> pm.Map(lambda x, s: (x, sorted(s)), pm.AsList(nums)),
                "d": main | "D" >> pm.Map(lambda x, d: d[x], pm.AsDict(pairs)),
                "s": main | "S" >> pm.Map(lambda x, s: x * s, pm.AsSingleton(single))}
    _, out = run(runner, build)
    assert values(out["l"]) == Counter({(x, ("list", (10, 20))): 1 for x in (1, 2, 3)})
    assert values(out["d"]) == Counter(["one", "two", "three"])
    assert values(out["s"]) == Counter([7, 14, 21])


def test_windowed_side_input(runner):
    def build(p):
        main = _keyed(p) | "WM" >> pm.WindowInto(pm.FixedWindows(60))
        totals = (p | "T" >> pm.Create([pm.TimestampedValue(100, 10), pm.TimestampedValue(1000, 70)])
                  | "WT" >> pm.WindowInto(pm.FixedWindows(60)))
        return {"o": main | pm.Map(lambda kv, t: (kv[0], kv[1] * t), pm.AsSingleton(totals, default=0))}
    _, out = run(runner, build)
    expected = Counter((k, v * (100 if t < 60 else 1000 if t < 120 else 0)) for k, v, t in EVENTS)
    assert values(out["o"]) == expected


def test_tagged_outputs_and_dead_letters(runner):
    class Split(pm.DoFn):
        def process(self, x):
            if x < 0:
                yield pm.TaggedOutput("negative", x)
            else:
                yield 10 // x

    def build(p):
        outs = p | pm.Create([1, -2, 0, 5, -1, 0]) | pm.ParDo(Split()).with_outputs("negative")
        good, bad = p | "more" >> pm.Create([1, 0, 2]) | pm.Map(lambda x: 6 // x).with_exception_handling()
        return {"main": outs.main, "negative": outs.negative, "good": good, "bad": bad}
    with pytest.raises(pm.UserCodeError, match="ZeroDivisionError"):
        run(runner, build)

    def build_safe(p):
        outs = p | pm.Create([1, -2, 5, -1]) | pm.ParDo(Split()).with_outputs("negative")
        good, bad = p | "more" >> pm.Create([1, 0, 2]) | pm.Map(lambda x: 6 // x).with_exception_handling()
        return {"main": outs.main, "negative": outs.negative, "good": good, "bad": bad}
    result, out = run(runner, build_safe)
    assert values(out["main"]) == Counter([10, 2])
    assert values(out["negative"]) == Counter([-2, -1])
    assert values(out["good"]) == Counter([6, 3])
    [(letter, *_)] = list(out["bad"])
    assert result.counter("dead_lettered") == 1


def test_user_code_error_names_the_transform_and_element(runner):
    def build(p):
        return {"o": p | pm.Create([1, 2, 0]) | "Invert" >> pm.Map(lambda x: 1 / x)}
    with pytest.raises(pm.UserCodeError) as e:
        run(runner, build)
    assert "'Invert'" in str(e.value) and "element 0" in str(e.value)
    assert "ZeroDivisionError" in str(e.value) and "Py4J" not in str(e.value)


def test_files_round_trip(runner, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps({"k": k, "v": v, "t": t}) for k, v, t in EVENTS) + "\nnot json\n")

    def build(p):
        good, bad = p | pm.ReadFromJson(str(src), timestamp_field="t").with_exception_handling()
        sums = (good | pm.Map(lambda r: (r["k"], r["v"])) | pm.WindowInto(pm.FixedWindows(60))
                | pm.CombinePerKey(sum))
        sums | pm.WriteToText(str(tmp_path / f"out-{runner}"), ".txt")
        bad_count = bad | pm.Map(lambda letter: ("bad", 1)) | "Bad" >> pm.CombinePerKey(sum)
        return {"sums": sums, "bad": bad, "bad_count": bad_count}
    result, out = run(runner, build, collect="all")
    files = sorted(tmp_path.glob(f"out-{runner}-*.txt"))
    if runner == "spark-streaming":   # a file per micro-batch with output: here, the one
        assert [f.name for f in files] == [f"out-{runner}-batch-000000.txt"]
    else:
        assert [f.name for f in files] == [f"out-{runner}-00000-of-00001.txt"]
    lines = files[0].read_text().splitlines()
    assert len(lines) == sum(out["sums"].values()) == len(_plain_window_sums(EVENTS, 60))
    assert sum(out["bad"].values()) == 1 == result.counter("dead_lettered")
    assert result.counter("read") == len(EVENTS)
    assert values(out["bad_count"]) == Counter([("bad", 1)])


def test_late_and_dropped_elements_are_counted(runner):
    """Nothing is lost silently: elements behind the watermark are counted as late, and those
    whose window had expired as dropped, on every runner (a TestStream runs as a streaming
    query on Spark); the run ends with a warning naming the step, the count and its share."""
    stream = (pm.TestStream()
              .add_elements([pm.TimestampedValue(("k", 1), 10), pm.TimestampedValue(("j", 1), 10)])
              .advance_watermark_to(200)
              .add_elements([pm.TimestampedValue(("k", 2), 50), pm.TimestampedValue(("j", 4), 5)])
              .advance_watermark_to(1000)
              .add_elements([pm.TimestampedValue(("k", 8), 20)])   # its window expired: dropped
              .advance_watermark_to_infinity())

    def build(p):
        return {"o": p | stream | pm.WindowInto(pm.FixedWindows(100), allowed_lateness=300)
                | "Sum" >> pm.CombinePerKey(sum)}
    with pytest.warns(pm.LateDataWarning, match=r"^'Sum' dropped 1 late elements \(20\.0% of "
                      r"the 5 it received\): their windows had expired.*allowed_lateness="):
        result, out = run(runner, build)
    assert values(out["o"]) == Counter([("k", 1), ("j", 1), ("k", 2), ("j", 4)])
    assert (result.counter("late"), result.counter("dropped")) == (2, 1)


def test_late_elements_go_to_a_late_output_when_asked(runner):
    """With `.with_late_output()` the elements a grouping would drop come out on the side
    output as they came (their time and window): those whose window had expired, and those
    for a window a finished trigger closed; nothing is dropped, and no warning says so."""
    import warnings
    stream = (pm.TestStream()
              .add_elements([pm.TimestampedValue(("k", 1), 10), pm.TimestampedValue(("j", 1), 10)])
              .advance_watermark_to(200)
              .add_elements([pm.TimestampedValue(("k", 2), 50), pm.TimestampedValue(("j", 4), 5)])
              .advance_watermark_to(1000)
              .add_elements([pm.TimestampedValue(("k", 8), 20)])   # its window expired
              .advance_watermark_to_infinity())

    def build(p):
        read = p | stream
        sums, late = (read | pm.WindowInto(pm.FixedWindows(100), allowed_lateness=300)
                      | "Sum" >> pm.CombinePerKey(sum).with_late_output())
        firsts = (read | "Once" >> pm.WindowInto(pm.FixedWindows(100), trigger=pm.AfterCount(1),
                                                   accumulation_mode=pm.AccumulationMode.DISCARDING,
                                                   allowed_lateness=10_000)
                  | "First" >> pm.GroupByKey().with_late_output("closed"))
        return {"sums": sums, "late": late, "firsts": firsts.main, "closed": firsts.closed}
    with warnings.catch_warnings():
        warnings.simplefilter("error", pm.LateDataWarning)
        result, out = run(runner, build)
    assert values(out["sums"]) == Counter([("k", 1), ("j", 1), ("k", 2), ("j", 4)])
    assert [(r[0], r[1], r[2]) for r in out["late"]] == [
        (("k", 8), 20_000_000, pm.IntervalWindow(0, 100))]
    assert values(out["firsts"]) == Counter([("k", ("list", (1,))), ("j", ("list", (1,)))])
    assert values(out["closed"]) == Counter([("k", 2), ("j", 4), ("k", 8)])
    metrics = result.metrics()
    assert metrics["Sum"]["dropped"] == metrics["First"]["dropped"] == 0
    assert (metrics["Sum"]["emitted[late]"], metrics["First"]["emitted[closed]"]) == (1, 3)


def test_elements_for_a_window_its_trigger_closed_go_to_the_late_output_in_batch(runner):
    """A trigger that finishes (AfterCount(1), not repeated) closes its window: the
    elements after the first would be dropped, even in a batch run; with a late output they
    come out there instead, on every runner."""
    def build(p):
        first = (p | pm.Create([pm.TimestampedValue(("k", i), i) for i in range(5)])
                 | pm.WindowInto(pm.FixedWindows(100), trigger=pm.AfterCount(1),
                                 accumulation_mode=pm.AccumulationMode.DISCARDING)
                 | "First" >> pm.GroupByKey().with_late_output())
        return {"first": first.main, "late": first.late}
    result, out = run(runner, build)
    ((key, (_, (fired,))),) = values(out["first"])   # which one fires first: the runner's order
    assert values(out["late"]) + Counter([(key, fired)]) == Counter(("k", i) for i in range(5))
    assert result.metrics()["First"]["dropped"] == 0


def test_a_run_that_drops_nothing_warns_of_nothing():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", pm.LateDataWarning)
        run("local", lambda p: {"o": p | pm.Create([("k", 1)]) | pm.CombinePerKey(sum)})


def test_late_elements_merging_into_a_fired_session_wait_for_the_late_trigger(runner):
    """Issue 12, Beam's `early_late_sessions` transcript (trigger_transcripts.yaml) one element
    per step: a window made by merging keeps its sources' trigger state. Once session [1, 14)
    has fired on time, the late 1, 3 and 4 each merge into it and count towards its late
    AfterCount(3): one LATE pane, after the third, not one per element. Pane indices are per
    window: [1, 12) and [1, 14) are each new windows (index 0); [1, 14) then goes on."""
    stream = pm.TestStream()
    for t in (1, 2, 3, 4):
        stream = stream.add_elements([pm.TimestampedValue(("k", t), t)])
    stream = stream.advance_watermark_to(100)
    for t in (1, 3, 4):
        stream = stream.add_elements([pm.TimestampedValue(("k", t), t)])
    stream = stream.advance_watermark_to_infinity()

    def build(p):
        return {"o": p | stream
                | pm.WindowInto(pm.Sessions(10),
                                trigger=pm.AfterWatermark(early=pm.AfterCount(2),
                                                          late=pm.AfterCount(3)),
                                accumulation_mode=pm.AccumulationMode.ACCUMULATING,
                                allowed_lateness=100,
                                timestamp_combiner=pm.TimestampCombiner.OUTPUT_AT_EOW)
                | pm.CombinePerKey(pm.ToList())}
    result, out = run(runner, build)
    w12, w14 = pm.IntervalWindow(1, 12), pm.IntervalWindow(1, 14)
    early, on_time, late = PaneTiming.EARLY, PaneTiming.ON_TIME, PaneTiming.LATE
    assert out["o"] == Counter([
        (("k", ("list", (1, 2))), w12.max_ts, w12, pm.PaneInfo(True, False, early, 0, -1), 1),
        (("k", ("list", (1, 2, 3, 4))), w14.max_ts, w14, pm.PaneInfo(True, False, early, 0, -1), 1),
        (("k", ("list", (1, 2, 3, 4))), w14.max_ts, w14, pm.PaneInfo(False, False, on_time, 1, 0), 1),
        (("k", ("list", (1, 1, 2, 3, 3, 4, 4))), w14.max_ts, w14,
         pm.PaneInfo(False, False, late, 2, 1), 1)])
    assert (result.counter("late"), result.counter("dropped")) == (3, 0)


# --- differential: random pipelines, every runner the same --------------------------------

WINDOWS = [lambda: pm.GlobalWindows(), lambda: pm.FixedWindows(30), lambda: pm.SlidingWindows(40, 20),
           lambda: pm.Sessions(15)]
COMBINERS = [lambda: pm.Sum(), lambda: pm.Count(), lambda: pm.Max(), lambda: pm.ToList()]


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10_000))
def test_random_batch_pipelines_match_local(seed, runner):
    if runner == "local-sequential":
        return   # the reference itself
    rng = random.Random(seed)
    events = [(rng.choice("abcd"), rng.randrange(1, 50), rng.randrange(0, 200))
              for _ in range(rng.randrange(1, 60))]
    window, combiner, group = rng.choice(WINDOWS), rng.choice(COMBINERS), rng.random() < 0.5
    lateness = rng.choice([0, 10])
    shift = rng.randrange(0, 3)

    def build(p):
        w = (_keyed(p, events) | pm.Map(lambda kv: (kv[0], kv[1] + shift))
             | pm.WindowInto(window(), allowed_lateness=lateness))
        out = w | (pm.GroupByKey() if group else pm.CombinePerKey(combiner()))
        return {"o": out | pm.Map(lambda kv: (kv[0], kv[1]))}
    assert run(runner, build)[1] == run("local-sequential", build)[1]


# --- differential: random streams, spark streaming the same as local -----------------------

@settings(max_examples=int(os.environ.get("PM_SPARK_EXAMPLES", 8)), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data(), events=props.events_st, spec=props.window_st,
       trigger=props.eager_trigger_st, combiner=props.combiner_st,
       mode=st.sampled_from(list(pm.AccumulationMode)), lateness=st.sampled_from([0, 20, 10**6]))
def test_random_streams_on_spark_match_local(spark_session, data, events, spec, trigger, combiner,
                                             mode, lateness):
    """A random transcript (elements, watermark and processing-time steps, each one
    micro-batch), random windows, triggers, accumulation mode, timestamp combiner and allowed
    lateness, over several keys, then a second grouping over the first one's panes: every pane
    of the first grouping is the local runner's, exactly (value, window, timing, index,
    timestamp, diff): both decide a pane's timing and timestamp against its key's output
    watermark, whichever bucket the key shares. The second grouping's panes, which may see the
    first's panes of one micro-batch in another order, are compared netted."""
    steps = data.draw(props.steps_st(events))

    def build(p):
        sums = (p | props.make_stream(steps)
                | pm.WindowInto(props.window_fn(spec), trigger=trigger, accumulation_mode=mode,
                                allowed_lateness=lateness, timestamp_combiner=combiner)
                | pm.CombinePerKey(sum))
        total = (sums | pm.Map(lambda kv: ("all", kv[1]))
                 | "Total" >> pm.WindowInto(pm.GlobalWindows(), accumulation_mode=pm.AccumulationMode.RETRACTING)
                 | "Sum" >> pm.CombinePerKey(sum))
        return {"sums": sums | "Leaf" >> pm.Map(lambda kv: kv), "total": total}
    spark = run("spark-streaming", build)[1]
    local = run("local-sequential", build)[1]
    assert spark["sums"] == local["sums"]
    assert _netted(spark["total"]) == _netted(local["total"])


def _netted(rows: Counter) -> Counter:
    out: Counter = Counter()
    for (value, _, window, _, diff), n in rows.items():
        out[(value, window)] += diff * n
    return +out


# --- processing-time panes of a second grouping --------------------------------------------

def _users_stream(seed: int, users: int = 300, steps: int = 8) -> pm.TestStream:
    """A seeded TestStream of per-user scores: bundles of elements (some behind the
    watermark), watermark advances and processing-time advances, each a step of its own."""
    rng = random.Random(seed)
    stream, wm = pm.TestStream(), 0
    for _ in range(steps):
        stream = stream.add_elements([
            pm.TimestampedValue((f"u{rng.randrange(users)}", rng.randrange(1, 10)),
                                max(0, wm + rng.randrange(-40, 120))) for _ in range(60)])
        if rng.random() < 0.6:
            wm += rng.randrange(10, 60)
            stream = stream.advance_watermark_to(wm)
        if rng.random() < 0.7:
            stream = stream.advance_processing_time(rng.randrange(20, 70))
    return stream.advance_watermark_to_infinity()


def _sessions_then_running_totals(p, stream):
    """Retracting sessions per user, with early panes 30 s of processing time after new input,
    then each user's running total in the global window, fired every minute of processing
    time after new input, in retracting mode."""
    retracting = pm.AccumulationMode.RETRACTING
    sessions = (p | stream
                | pm.WindowInto(pm.Sessions(30),
                                trigger=pm.AfterWatermark(early=pm.AfterProcessingTime(30)),
                                accumulation_mode=retracting, allowed_lateness=60)
                | "Session" >> pm.CombinePerKey(sum))
    totals = (sessions
              | "Global" >> pm.WindowInto(pm.GlobalWindows(),
                                          trigger=pm.Repeatedly(pm.AfterProcessingTime(60)),
                                          accumulation_mode=retracting)
              | "Total" >> pm.CombinePerKey(sum))
    return {"sessions": sessions | "Leaf" >> pm.Map(lambda kv: kv), "totals": totals}


def test_a_second_groupings_processing_time_panes_match_on_every_runner(runner, local_reference):
    """Issue 58: a processing-time trigger on a grouping fed by a retracting one. A pane the
    first grouping fires in a step reaches the second at that step's processing time, which
    starts the second's AfterProcessingTime delay; a later clock move that reaches the delay
    fires its EARLY pane, and one the stream's clock never reaches leaves the input to the
    ON_TIME pane at the end of time: the same panes of both groupings on every runner."""
    stream = _users_stream(seed=3)
    if "users" not in local_reference:
        local_reference["users"] = run("local-sequential",
                                       lambda p: _sessions_then_running_totals(p, stream))[1]
    expected = local_reference["users"]
    got = run(runner, lambda p: _sessions_then_running_totals(p, stream))[1]
    timings = Counter(row[3].timing for row, n in expected["totals"].items() for _ in range(n))
    assert timings[PaneTiming.EARLY] and timings[PaneTiming.ON_TIME]
    per_user: Counter = Counter()
    for ((user, score), _), n in _netted(expected["sessions"]).items():
        per_user[user] += score * n
    assert {user: total for (user, total), _ in _netted(expected["totals"])} == dict(per_user)
    assert got["sessions"] == expected["sessions"]
    assert got["totals"] == expected["totals"]


def _early_session_then_total(p):
    """Session early panes, each fired at a processing-time advance, and the running total
    they reach, its minute-long delay started at the time of the advance: the first at 70 s
    fires at 130 s; the second, at 160 s, is not up by 200 s, so the ON_TIME pane has it."""
    stream = (pm.TestStream()
              .add_elements([pm.TimestampedValue(("u", 5), 10)])
              .advance_processing_time(70)     # the session's EARLY 5 reaches the total
              .advance_processing_time(60)     # 130 s: the total's EARLY 5
              .add_elements([pm.TimestampedValue(("u", 2), 20)])
              .advance_processing_time(30)     # the session's EARLY 7, retracting 5
              .advance_processing_time(40)     # 200 s: the total's delay runs to 220 s
              .advance_watermark_to_infinity())
    return _sessions_then_running_totals(p, stream)


@pytest.mark.parametrize("local", LOCAL_RUNNERS)
def test_a_pane_fired_at_a_clock_advance_reaches_the_next_grouping_at_the_new_time(local):
    """Issue 58: a processing-time advance moves every grouping's clock before any fires, so
    a pane the first grouping fires then starts the second's AfterProcessingTime delay at
    the new time (docs/triggers.md, "Replaying time with a TestStream"); the seeded stream
    above holds Spark to the same panes."""
    got = run(local, _early_session_then_total)[1]
    first, merged = pm.IntervalWindow(10, 40), pm.IntervalWindow(10, 50)
    panes = lambda rows: sorted((row[3].index, row[3].timing.name, row[0], row[2], row[4], n)
                                for row, n in rows.items())
    assert panes(got["sessions"]) == [
        (0, "EARLY", ("u", 5), first, 1, 1), (0, "EARLY", ("u", 7), merged, 1, 1),
        (1, "EARLY", ("u", 5), first, -1, 1),
        (1, "ON_TIME", ("u", 7), merged, -1, 1), (1, "ON_TIME", ("u", 7), merged, 1, 1)]
    assert [row[:3] + row[4:] for row in panes(got["totals"])] == [
        (0, "EARLY", ("u", 5), 1, 1),
        (1, "ON_TIME", ("u", 5), -1, 1), (1, "ON_TIME", ("u", 7), 1, 1)]


# --- the paper's figures ------------------------------------------------------------------

@pytest.mark.parametrize("number", [6, 10, 11])
def test_paper_batch_figures(number, runner):
    """Figures 6 (classic batch), 10 (fixed windows, batch) and 11 (fixed windows over one-minute
    micro-batches, a batch run per round): the same panes as the local runner's."""
    from test_paper_figures import paper
    got = paper.run_figure(number, pm.PipelineOptions(runner_flags(runner) + ["--quiet"]))
    expected = paper.run_figure(number, pm.PipelineOptions(["--quiet"]))
    assert Counter(got) == Counter(expected) and got


@pytest.mark.parametrize("local", LOCAL_RUNNERS)
@pytest.mark.parametrize("number", [7, 8, 9, 12, 13, 14])
def test_paper_streaming_figures_in_every_local_mode(number, local):
    """The streaming figures' transcript on every mode of the local runner, whatever its
    workers and scheduler: exactly the sequential executor's panes, in its order."""
    from test_paper_figures import paper
    got = paper.run_figure(number, pm.PipelineOptions(runner_flags(local) + ["--quiet"]))
    expected = paper.run_figure(number, pm.PipelineOptions(runner_flags("local-sequential")
                                                           + ["--quiet"]))
    assert got == expected and got


@pytest.mark.parametrize("number", [7, 8, 9, 12, 13, 14])
def test_paper_streaming_figures_on_spark(number, spark_session):
    """The streaming figures' transcript replayed on Spark, one micro-batch per step: the
    same panes, at the same processing times, as on the local runner (only their order
    within a micro-batch may differ)."""
    from test_paper_figures import paper
    got = paper.run_figure(number, pm.PipelineOptions(["--runner=spark", "--quiet"]))
    expected = paper.run_figure(number, pm.PipelineOptions(["--quiet"]))
    assert Counter(got) == Counter(expected) and got


def _window_pane_runs(options: pm.PipelineOptions) -> dict:
    """Figure 14's sessions, pane by pane: by window, its panes in the order they came (by
    processing time, then index), each with the diffs it carried."""
    from test_paper_figures import paper
    runs: dict = defaultdict(dict)
    timed = paper._run(paper.FIGURES[14], lambda p: p | paper.transcript(), options)
    for at, wv in sorted(timed, key=lambda t: (t[0], t[1].pane.index)):
        runs[wv.window].setdefault(wv.pane, []).append(wv.diff)
    return runs


def _assert_each_window_follows_its_own_panes(runs: dict) -> None:
    """A window's panes are indexed 0, 1, 2, ... with nothing after its last; a window merged
    away ends with a pane of its own that only retracts, and that pane is its last."""
    for window, panes in runs.items():
        assert [p.index for p in panes] == list(range(len(panes))), window
        assert all(not p.is_last for p in list(panes)[:-1]), window
        last, diffs = list(panes.items())[-1]
        if sum(d for ds in panes.values() for d in ds) == 0:
            assert last.is_last and set(diffs) == {-1}, (window, panes)


@pytest.mark.parametrize("local", LOCAL_RUNNERS)
def test_a_merged_away_window_retracts_in_its_own_last_pane(local):
    runs = _window_pane_runs(pm.PipelineOptions(runner_flags(local) + ["--quiet"]))
    _assert_each_window_follows_its_own_panes(runs)
    assert sum(1 for panes in runs.values() if list(panes)[-1].is_last) == 5   # merged away


def test_a_merged_away_window_retracts_in_its_own_last_pane_on_spark(spark_session):
    got = _window_pane_runs(pm.PipelineOptions(["--runner=spark", "--quiet"]))
    _assert_each_window_follows_its_own_panes(got)
    assert got == _window_pane_runs(pm.PipelineOptions(["--quiet"]))


# --- file streams -------------------------------------------------------------------------

#: event times (s) of the files of a file stream, in the order they appear; their names run
#: the other way, so the stream's order is the files' age, not their names
STREAM_FILES = [[1, 3, 12], [4, 26], [8, 13, 33], [2, 27, 44]]
FILE_STREAM_FLAGS = ["--streaming", "--streaming_until=latest", "--max_out_of_orderness=5",
                     "--max_files_per_batch=1"]


def _file_stream(p, folder):
    for i, times in enumerate(STREAM_FILES):
        path = folder / f"part-{len(STREAM_FILES) - i}.jsonl"
        path.write_text("".join(json.dumps({"k": "k", "t": t}) + "\n" for t in times))
        os.utime(path, ns=(10 ** 9 * (i + 1),) * 2)
    kv = (p | pm.ReadFromJson(str(folder / "*.jsonl"), timestamp_field="t")
          | pm.Map(lambda r: (r["k"], r["t"])))
    sums = (kv | "Late" >> pm.WindowInto(pm.FixedWindows(10),
                                         trigger=pm.AfterWatermark(late=pm.AfterCount(1)),
                                         accumulation_mode=pm.AccumulationMode.ACCUMULATING,
                                         allowed_lateness=12)
            | "Sum" >> pm.CombinePerKey(pm.ToList()))
    kept, late = (kv | "Strict" >> pm.WindowInto(pm.FixedWindows(10))
                  | "Kept" >> pm.CombinePerKey(sum).with_late_output())
    return {"sums": sums, "kept": kept, "late": late}


@pytest.mark.parametrize("mode", LOCAL_RUNNERS + ["spark-streaming"])
def test_file_streams_give_the_same_panes_on_every_mode(mode, request, tmp_path):
    """Files read as a stream (`--streaming`), one a micro-batch, each micro-batch's watermark
    the largest event time read less --max_out_of_orderness: the elements behind it are late
    on every mode alike, giving the same LATE panes, the same late output and the same
    warning for those dropped as the sequential local runner, and the panes plain Python
    says (the watermark is 7, 21 and 28 after files 1-3: 8 comes late to window [0, 10), 13
    to [10, 20), and 2 after [0, 10) expired, 12 s of lateness past its end)."""
    if mode.startswith("spark"):
        request.getfixturevalue("spark_session")

    def streamed(flags, folder):
        flags = flags + [f for f in FILE_STREAM_FLAGS if f not in flags]
        folder.mkdir()
        p = pm.Pipeline(options=pm.PipelineOptions(flags + ["--quiet", "--collect=leaves"]))
        outputs = _file_stream(p, folder)
        with pytest.warns(pm.LateDataWarning, match=r"^'Sum' dropped 1 late elements"):
            result = p.run()
        return result, {name: Counter(_row(wv) for wv in result.collect(pc))
                        for name, pc in outputs.items()}
    result, got = streamed(runner_flags(mode), tmp_path / "in")
    _, expected = streamed(runner_flags("local-sequential"), tmp_path / "reference")
    assert got == expected
    late_panes = sorted((v[1][1], pane.index) for (v, _, _, pane, _) in got["sums"]
                        if pane.timing is PaneTiming.LATE)
    assert late_panes == [((1, 3, 4, 8), 1), ((12, 13), 1)]
    assert sorted((v, ts) for (v, ts, _, _, _) in got["late"]) == [
        (("k", 2), 2_000_000), (("k", 8), 8_000_000), (("k", 13), 13_000_000)]
    assert values(got["kept"]) == Counter([("k", 8), ("k", 12), ("k", 53), ("k", 33), ("k", 44)])
    metrics = result.metrics()
    assert (metrics["Kept"]["emitted[late]"], metrics["Sum"]["dropped"]) == (3, 1)
