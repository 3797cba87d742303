"""Schema'd pipelines on every runner mode (local, spark, spark-streaming): the relational API
(`Select`, `Filter` with expressions, `WithColumns`, `GroupBy.aggregate_field`) gives the
plain-Python answer, with early and late panes, sessions, retractions through a second
grouping, and dead letters for records that do not fit the schema."""
from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pomset as pm
from conftest import runner_flags
from pomset import col
from pomset.windowing import PaneTiming

T0 = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
EVENTS = [("a", 1, 5), ("b", 2, 65), ("a", 3, 30), ("a", None, 70), ("b", 5, 61),
          ("c", 6, 125), ("a", 7, 119), ("b", 8, 10), ("c", 40, 130)]


def _run(runner, build):
    p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + ["--quiet"]))
    outs = build(p)
    result = p.run()
    return result, {name: result.collect(pc) for name, pc in outs.items()}


@pytest.fixture(scope="module")
def events_parquet(tmp_path_factory):
    path = tmp_path_factory.mktemp("schema") / "events.parquet"
    pq.write_table(pa.table({
        "key": [k for k, _, _ in EVENTS],
        "v": pa.array([v for _, v, _ in EVENTS], pa.int64()),
        "ts": pa.array([T0 + dt.timedelta(seconds=t) for _, _, t in EVENTS],
                       pa.timestamp("us", tz="UTC"))}), path)
    return str(path)


def test_windowed_aggregations_match_plain_python(runner, events_parquet):
    def build(p):
        rows = p | pm.ReadFromParquet(events_parquet, timestamp_field="ts")
        return {"o": rows | pm.WindowInto(pm.FixedWindows(60))
                | pm.GroupBy("key").aggregate_field("v", pm.Sum, "total")
                .aggregate_field("v", pm.Mean, "mean").aggregate_field("v", pm.Count, "n")}
    _, out = _run(runner, build)
    expected = defaultdict(list)
    for k, v, t in EVENTS:
        expected[(k, t // 60 * 60)].append(v)
    got = {(w.value.key, int(w.window.start) - int(T0.timestamp())):
           (w.value.total, w.value.mean, w.value.n) for w in out["o"]}
    want = {}
    for key, vs in expected.items():
        present = [v for v in vs if v is not None]
        want[key] = (sum(present), sum(present) / len(present), len(present))
    assert got == want
    assert all(w.pane.timing is PaneTiming.ON_TIME and w.ts == w.window.max_ts
               for w in out["o"])


def test_select_filter_and_derived_fields(runner, events_parquet):
    def build(p):
        rows = p | pm.ReadFromParquet(events_parquet, timestamp_field="ts")
        return {"o": rows | pm.Filter(col("v").is_not_null() & (col("v") > 2))
                | pm.WithColumns(half=col("v") / 2, big=col("v") >= 7)
                | pm.Select("key", "half", "big", name=col("key").upper())}
    _, out = _run(runner, build)
    assert sorted((w.value.name, w.value.half, w.value.big) for w in out["o"]) == sorted(
        (k.upper(), v / 2, v >= 7) for k, v, _ in EVENTS if v is not None and v > 2)


def _stream():
    s = pm.TestStream()
    for k, v, t in [("a", 1, 1), ("a", 2, 4), ("b", 5, 2)]:
        s = s.add_elements([pm.TimestampedValue(pm.Row(key=k, v=v), t)])
    s = s.advance_watermark_to(100)
    for k, v, t in [("a", 10, 8), ("b", 20, 30)]:   # late: merges into a fired session
        s = s.add_elements([pm.TimestampedValue(pm.Row(key=k, v=v), t)])
    return s.advance_watermark_to_infinity()


def test_sessions_with_late_panes_retract_through_a_second_grouping(runner):
    def build(p):
        sums = (p | _stream()
                | pm.WindowInto(pm.Sessions(10), trigger=pm.AfterWatermark(
                    late=pm.AfterCount(1)), allowed_lateness=200,
                    accumulation_mode=pm.AccumulationMode.RETRACTING)
                | pm.GroupBy("key").aggregate_field("v", pm.Sum, "total")).keep()
        parity = (sums | pm.Map(lambda r: (r.total % 2, r.total))
                  | pm.WindowInto(pm.GlobalWindows())
                  | "Again" >> pm.CombinePerKey(pm.Count()))
        return {"sums": sums, "parity": parity}
    _, out = _run(runner, build)
    net = Counter()
    for w in out["sums"]:
        net[(w.value.key, w.window)] += w.diff * w.value.total
    assert {k: v for k, v in net.items() if v} == {
        ("a", pm.IntervalWindow(1, 18)): 13, ("b", pm.IntervalWindow(2, 12)): 5,
        ("b", pm.IntervalWindow(30, 40)): 20}
    assert any(w.diff == -1 for w in out["sums"])   # the on-time pane of a's session retracted
    assert any(w.pane.timing is PaneTiming.LATE for w in out["sums"])
    final = Counter()
    for w in out["parity"]:
        final[w.value[0]] += w.diff * w.value[1]
    # net, two odd totals (13 and 5: a's on-time 3 was retracted) and one even (20)
    assert {k: v for k, v in final.items() if v} == {1: 2, 0: 1}


def test_records_that_do_not_fit_the_schema_are_dead_letters(runner, tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"key": "a", "v": 1, "t": 5}\n{"key": "b", "v": "two", "t": 6}\n'
                    '{"key": "c", "v": 3}\n{"key": "a", "v": 4, "t": 7}\n')

    def build(p):
        good, bad = p | pm.ReadFromJson(str(path), timestamp_field="t", schema={
            "key": str, "v": int, "t": int}).with_exception_handling()
        return {"sums": good | pm.GroupBy("key").aggregate_field("v", pm.Sum, "total"),
                "bad": bad}
    result, out = _run(runner, build)
    assert sorted((w.value.key, w.value.total) for w in out["sums"]) == [("a", 5)]
    errors = sorted(w.value.error for w in out["bad"])
    assert len(errors) == 2
    assert "rows.jsonl:2: does not fit the schema: field 'v' = 'two' is not a int64" in errors[0]
    assert "rows.jsonl:3: missing timestamp field 't'" in errors[1]
