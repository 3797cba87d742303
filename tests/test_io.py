"""File IO (pomset.sdk.io): round trips, event time from a field, window/pane/diff columns,
malformed records (dead letters or a failed run) and patterns that match nothing."""
from __future__ import annotations

import datetime as dt
import json
import os
import re

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

import pomset as pm
from pomset.sdk.errors import PipelineConstructionError, UserCodeError
from pomset.sdk.io.base import json_loads
from pomset.windowing import GLOBAL_WINDOW, MIN_MICROS

UTC = dt.timezone.utc


def shard(prefix, suffix=""):
    return f"{prefix}-00000-of-00001{suffix}"


def run_write(values, sink):
    p = pm.Pipeline(runner="local")
    p | pm.Create(values) | sink
    return p.run()


def read_all(source):
    p = pm.Pipeline(runner="local")
    out = p | source
    result = p.run()
    return result.collect(out), result


def csv_rows(path):
    return pacsv.read_csv(path).to_pylist()


# --- round trips --------------------------------------------------------------------------------

def test_text_round_trip(tmp_path):
    lines = ["alpha", "beta, with a comma", "", "ünïcode ✓", "  padded  "]
    run_write(lines, pm.WriteToText(str(tmp_path / "out" / "lines"), file_name_suffix=".txt"))
    path = shard(tmp_path / "out" / "lines", ".txt")
    with open(path, encoding="utf-8") as f:
        assert f.read() == "".join(line + "\n" for line in lines)
    assert sorted(os.listdir(tmp_path / "out")) == ["lines-00000-of-00001.txt"]  # no temp files left

    got, result = read_all(pm.ReadFromText(str(tmp_path / "out" / "*.txt")))
    assert [wv.value for wv in got] == lines
    assert all(wv.ts == MIN_MICROS and wv.window == GLOBAL_WINDOW and wv.diff == 1 for wv in got)
    assert result.metrics()["ReadFromText"]["read"] == len(lines)


def test_text_reads_files_in_name_order_and_strips_line_endings(tmp_path):
    (tmp_path / "b.txt").write_bytes(b"z-no-newline")
    (tmp_path / "a.txt").write_bytes(b"x\r\ny\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.txt").write_bytes(b"deep\n")
    got, _ = read_all(pm.ReadFromText(tmp_path / "*.txt"))  # a path object works too
    assert [wv.value for wv in got] == ["x", "y", "z-no-newline"]
    got, _ = read_all(pm.ReadFromText(str(tmp_path / "**" / "*.txt")))
    assert [wv.value for wv in got] == ["x", "y", "z-no-newline", "deep"]


def test_text_non_windowed_writes_str_of_each_element(tmp_path):
    run_write([("k", 1), 2.5, {"a": 1}], pm.WriteToText(str(tmp_path / "t")))
    assert open(shard(tmp_path / "t")).read().splitlines() == ["('k', 1)", "2.5", "{'a': 1}"]


def test_parquet_round_trip(tmp_path):
    records = [
        {"name": "ann", "n": 1, "score": 0.5, "when": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
         "tags": ["a", "b"]},
        {"name": "bob", "n": 2, "score": None, "when": dt.datetime(2024, 1, 2, 3, 4, 6, tzinfo=UTC),
         "tags": []},
        {"name": "cy", "n": 3, "score": 2.0, "when": None, "tags": ["c"], "extra": True},
    ]
    run_write(records, pm.WriteToParquet(str(tmp_path / "nested" / "dir" / "people"),
                                         file_name_suffix=".parquet"))
    table = pq.read_table(shard(tmp_path / "nested" / "dir" / "people", ".parquet"))
    assert table.column_names == ["name", "n", "score", "when", "tags", "extra"]
    assert table.schema.field("n").type == pa.int64()
    assert pa.types.is_timestamp(table.schema.field("when").type)
    # no window columns for globally windowed, non-retracting input
    assert "diff" not in table.column_names

    got, _ = read_all(pm.ReadFromParquet(str(tmp_path / "nested" / "**" / "*.parquet")))
    values = [wv.value for wv in got]
    expected = [dict(r, extra=r.get("extra")) for r in records]
    assert [{k: v for k, v in r.items() if k != "when"} for r in values] == \
        [{k: v for k, v in r.items() if k != "when"} for r in expected]
    assert [r["when"] for r in values] == [r["when"] for r in records]
    assert all(wv.ts == MIN_MICROS for wv in got)

    got, _ = read_all(pm.ReadFromParquet(str(tmp_path / "nested" / "**" / "*.parquet"),
                                         columns=["name", "n"]))
    assert [wv.value for wv in got] == [{"name": "ann", "n": 1}, {"name": "bob", "n": 2},
                                        {"name": "cy", "n": 3}]


def test_json_round_trip(tmp_path):
    records = [{"id": 1, "user": {"name": "ann", "roles": ["admin"]}, "ok": True},
               {"id": 2, "user": None, "ok": False, "note": "ünï"}]
    run_write(records, pm.WriteToJson(str(tmp_path / "recs"), file_name_suffix=".jsonl"))
    path = shard(tmp_path / "recs", ".jsonl")
    assert [json.loads(line) for line in open(path, encoding="utf-8")] == records
    got, _ = read_all(pm.ReadFromJson(str(tmp_path / "recs*.jsonl")))
    assert [wv.value for wv in got] == records


def test_json_sink_columns_for_pairs_scalars_and_datetimes(tmp_path):
    when = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    run_write([("k", 3), 7, "s", {"at": when, "tags": {"b", "a"}}], pm.WriteToJson(str(tmp_path / "j")))
    rows = [json.loads(line) for line in open(shard(tmp_path / "j", ".jsonl"))]
    assert rows == [{"key": "k", "value": 3}, {"value": 7}, {"value": "s"},
                    {"at": "2024-05-06T07:08:09+00:00", "tags": ["a", "b"]}]


def test_csv_round_trip(tmp_path):
    records = [{"city": "Oslo", "temp": -3.5, "count": 10, "note": "cold, windy"},
               {"city": "Rome", "temp": 18.0, "count": 4, "note": 'said "hi"'}]
    run_write(records, pm.WriteToCsv(str(tmp_path / "weather"), file_name_suffix=".csv"))
    path = shard(tmp_path / "weather", ".csv")
    assert open(path).readline().strip() == '"city","temp","count","note"'
    got, _ = read_all(pm.ReadFromCsv(str(tmp_path / "*.csv")))
    assert [wv.value for wv in got] == records
    assert isinstance(got[0].value["count"], int)


def test_csv_sink_writes_nested_values_as_json_and_mixed_columns_as_strings(tmp_path):
    run_write([{"a": 1, "b": [1, 2], "c": {"x": 1}}, {"a": "two", "b": [], "c": None}],
              pm.WriteToCsv(str(tmp_path / "mixed")))
    rows = csv_rows(shard(tmp_path / "mixed", ".csv"))
    # (CSV cannot tell a null string from an empty one: both read back as "")
    assert rows == [{"a": "1", "b": "[1, 2]", "c": '{"x": 1}'}, {"a": "two", "b": "[]", "c": ""}]


def test_fluent_write_methods_and_empty_input(tmp_path):
    p = pm.Pipeline(runner="local")
    pc = p | pm.Create([{"v": 1}, {"v": 2}])
    assert pc.write_to_text(str(tmp_path / "t")) is None
    pc.write_to_json(str(tmp_path / "j"))
    pc.write_to_csv(str(tmp_path / "c"))
    pc.write_to_parquet(str(tmp_path / "p"), compression="zstd")
    empty = p | "Empty" >> pm.Create([])
    empty | pm.WriteToParquet(str(tmp_path / "e"))
    empty | pm.WriteToText(str(tmp_path / "et"))
    p.run()
    assert open(shard(tmp_path / "t")).read() == "{'v': 1}\n{'v': 2}\n"
    assert open(shard(tmp_path / "j", ".jsonl")).read() == '{"v": 1}\n{"v": 2}\n'
    assert csv_rows(shard(tmp_path / "c", ".csv")) == [{"v": 1}, {"v": 2}]
    assert pq.read_table(shard(tmp_path / "p", ".parquet")).to_pylist() == [{"v": 1}, {"v": 2}]
    metadata = pq.read_metadata(shard(tmp_path / "p", ".parquet"))
    assert metadata.row_group(0).column(0).compression == "ZSTD"
    assert pq.read_table(shard(tmp_path / "e", ".parquet")).num_rows == 0
    assert open(shard(tmp_path / "et")).read() == ""


# --- event time from a field --------------------------------------------------------------------

EVENTS = [("ann", 5, 10.0), ("bob", 1, 30.5), ("ann", 2, 59.9), ("ann", 7, 60.0),
          ("bob", 4, 125.0), ("bob", 6, 170.0)]
EXPECTED_SUMS = {("ann", 0, 60): 7, ("bob", 0, 60): 1, ("ann", 60, 120): 7, ("bob", 120, 180): 10}


def _write_events(tmp_path, fmt):
    base = 1_700_000_000  # keep real-looking epoch seconds; windows are relative to it below
    if fmt == "json":
        path = tmp_path / "events.jsonl"
        path.write_text("".join(json.dumps({"user": u, "amount": a, "ts": base + t}) + "\n"
                                for u, a, t in EVENTS))
        return pm.ReadFromJson(str(path), timestamp_field="ts"), base
    iso = lambda t: dt.datetime.fromtimestamp(base + t, UTC).isoformat()  # noqa: E731
    if fmt == "json-iso":
        path = tmp_path / "events.jsonl"
        path.write_text("".join(json.dumps({"user": u, "amount": a, "ts": iso(t)}) + "\n"
                                for u, a, t in EVENTS))
        return pm.ReadFromJson(str(path), timestamp_field="ts"), base
    if fmt == "csv":
        path = tmp_path / "events.csv"
        path.write_text("user,amount,ts\n" + "".join(f"{u},{a},{iso(t)}\n" for u, a, t in EVENTS))
        return pm.ReadFromCsv(str(path), timestamp_field="ts"), base
    path = tmp_path / "events.parquet"
    pq.write_table(pa.table({
        "user": [u for u, _, _ in EVENTS], "amount": [a for _, a, _ in EVENTS],
        "ts": pa.array([dt.datetime.fromtimestamp(base + t, UTC) for _, _, t in EVENTS],
                       pa.timestamp("us", tz="UTC"))}), path)
    return pm.ReadFromParquet(str(path), columns=["user", "amount"], timestamp_field="ts"), base


@pytest.mark.parametrize("fmt", ["json", "json-iso", "csv", "parquet"])
def test_timestamp_field_drives_windowing(tmp_path, fmt):
    source, base = _write_events(tmp_path, fmt)
    p = pm.Pipeline(runner="local")
    events = (p | source).keep()
    sums = (events
            | pm.Map(lambda r: (r["user"], r["amount"]))
            | pm.WindowInto(pm.FixedWindows(60, offset=base % 60))
            | pm.CombinePerKey(sum))
    result = p.run()
    got = {(wv.value[0], int(wv.window.start) - base, int(wv.window.end) - base): wv.value[1]
           for wv in result.collect(sums)}
    assert got == EXPECTED_SUMS
    if fmt == "parquet":  # the timestamp column was read for event time, not returned
        assert result.collect(events)[0].value == {"user": "ann", "amount": 5}
    assert sorted(wv.ts for wv in result.collect(events)) == \
        sorted(round((base + t) * 1_000_000) for _, _, t in EVENTS)


def test_event_time_conversions():
    from pomset.sdk.io import event_time_micros
    assert event_time_micros(12) == 12_000_000
    assert event_time_micros(1.5) == 1_500_000
    assert event_time_micros("2.25") == 2_250_000
    assert event_time_micros("1970-01-01T00:01:00Z") == 60_000_000
    assert event_time_micros("1970-01-01T01:00:00+01:00") == 0
    assert event_time_micros(dt.datetime(1970, 1, 1, 0, 0, 3)) == 3_000_000  # naive is UTC
    assert event_time_micros(dt.date(1970, 1, 2)) == 86_400_000_000
    assert event_time_micros(pm.Timestamp(7)) == 7_000_000
    assert event_time_micros(pa.scalar(dt.datetime(1970, 1, 1, 0, 0, 1), pa.timestamp("ms"))) == 1_000_000
    for bad, what in [(None, "null"), (True, "bool"), ("soon", "neither seconds nor"),
                      (float("nan"), "finite"), ([1], "list"), (1e300, "out of the range")]:
        with pytest.raises(ValueError, match=what):
            event_time_micros(bad)


# --- window, pane and diff columns ----------------------------------------------------------------

def _retracting_sums(p):
    stream = (pm.TestStream()
              .add_elements([pm.TimestampedValue(("k", 1), 5), pm.TimestampedValue(("k", 2), 15),
                             pm.TimestampedValue(("j", 10), 70)])
              .advance_processing_time(20)           # early pane for both windows
              .advance_watermark_to(130)             # on-time panes
              .add_elements([pm.TimestampedValue(("k", 4), 30)])  # late, within allowed lateness
              .advance_watermark_to_infinity())
    return (p | stream
            | pm.WindowInto(pm.FixedWindows(60),
                            trigger=pm.AfterWatermark(early=pm.AfterProcessingTime(10),
                                                      late=pm.AfterCount(1)),
                            accumulation_mode=pm.AccumulationMode.RETRACTING,
                            allowed_lateness=600)
            | pm.CombinePerKey(sum))


def test_retracting_output_has_window_pane_and_diff_columns(tmp_path):
    p = pm.Pipeline(runner="local")
    sums = _retracting_sums(p).keep()
    sums | pm.WriteToParquet(str(tmp_path / "sums"), file_name_suffix=".parquet")
    sums | pm.WriteToCsv(str(tmp_path / "sums"), file_name_suffix=".csv")
    sums | pm.WriteToJson(str(tmp_path / "sums"), file_name_suffix=".jsonl")
    sums | pm.WriteToText(str(tmp_path / "sums"), file_name_suffix=".txt")
    result = p.run()
    panes = result.collect(sums)

    table = pq.read_table(shard(tmp_path / "sums", ".parquet"))
    assert table.column_names == ["key", "value", "window_start", "window_end", "timestamp",
                                  "pane_timing", "pane_index", "diff"]
    for name in ("window_start", "window_end", "timestamp"):   # Parquet timestamps
        assert table.schema.field(name).type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("diff").type == pa.int64()
    epoch = dt.datetime(1970, 1, 1, tzinfo=UTC)
    rows = [{k: (v - epoch).total_seconds() if isinstance(v, dt.datetime) else v
             for k, v in r.items()} for r in table.to_pylist()]
    assert len(rows) == len(panes)
    k_rows = [(r["value"], r["pane_timing"], r["pane_index"], r["diff"])
              for r in rows if r["key"] == "k"]
    # the early pane, the on-time pane (retracting the early one), the late pane (retracting it)
    assert k_rows[0] == (3, "EARLY", 0, 1)
    assert k_rows[-2:] == [(3, "LATE", 2, -1), (7, "LATE", 2, 1)]
    assert {(r[1], r[3]) for r in k_rows} >= {("EARLY", 1), ("ON_TIME", 1), ("LATE", -1), ("LATE", 1)}
    for r in rows:
        start = 0.0 if r["key"] == "k" else 60.0
        assert (r["window_start"], r["window_end"]) == (start, start + 60)
        assert r["timestamp"] == pytest.approx(start + 60 - 1e-6)  # end of window, minus 1 µs
    # the retraction invariant holds in the file: sum(diff × value) per window = batch result
    totals = {}
    for r in rows:
        totals[(r["key"], r["window_start"])] = totals.get((r["key"], r["window_start"]), 0) \
            + r["diff"] * r["value"]
    assert totals == {("k", 0.0): 7, ("j", 60.0): 10}
    # the same rows, in the same order, in every format
    as_tuples = [tuple(r.values()) for r in rows]
    jsonl = [json.loads(line) for line in open(shard(tmp_path / "sums", ".jsonl"))]
    assert [tuple(r.values()) for r in jsonl] == as_tuples
    text = [json.loads(line) for line in open(shard(tmp_path / "sums", ".txt"))]
    assert text == jsonl
    csv_table = csv_rows(shard(tmp_path / "sums", ".csv"))
    assert [(r["key"], r["value"], r["pane_timing"], r["pane_index"], r["diff"]) for r in csv_table] \
        == [(r["key"], r["value"], r["pane_timing"], r["pane_index"], r["diff"]) for r in rows]


def test_windowed_output_of_dicts_and_downstream_of_retractions(tmp_path):
    p = pm.Pipeline(runner="local")
    windowed = (p | pm.Create([pm.TimestampedValue({"n": 1}, 5), pm.TimestampedValue({"n": 2}, 65)])
                | pm.WindowInto(pm.FixedWindows(60)))
    windowed | pm.WriteToCsv(str(tmp_path / "w"))
    # a Map downstream of a retracting grouping still carries diffs, so it gets the columns
    sums = _retracting_sums(p) | pm.Map(lambda kv: {"who": kv[0], "total": kv[1]})
    sums | pm.WriteToJson(str(tmp_path / "r"))
    # globally windowed, not retracting: no extra columns
    p | "Plain" >> pm.Create([{"n": 1}]) | pm.WriteToJson(str(tmp_path / "plain"))
    p.run()
    assert csv_rows(shard(tmp_path / "w", ".csv")) == [
        {"n": 1, "window_start": 0, "window_end": 60, "timestamp": 5, "pane_timing": "UNKNOWN",
         "pane_index": 0, "diff": 1},
        {"n": 2, "window_start": 60, "window_end": 120, "timestamp": 65, "pane_timing": "UNKNOWN",
         "pane_index": 0, "diff": 1}]
    rows = [json.loads(line) for line in open(shard(tmp_path / "r", ".jsonl"))]
    early_k = [r for r in rows if r["who"] == "k" and r["pane_timing"] == "EARLY"]
    assert early_k == [{"who": "k", "total": 3, "window_start": 0.0, "window_end": 60.0,
                        "timestamp": 59.999999, "pane_timing": "EARLY", "pane_index": 0, "diff": 1}]
    assert sorted(r["diff"] for r in rows) == [-1, -1, -1, 1, 1, 1, 1, 1]
    assert open(shard(tmp_path / "plain", ".jsonl")).read() == '{"n": 1}\n'


def test_global_window_retracting_output_has_null_window_bounds(tmp_path):
    p = pm.Pipeline(runner="local")
    (p | pm.Create([("a", 1), ("a", 2)])
       | pm.WindowInto(accumulation_mode=pm.AccumulationMode.RETRACTING)
       | pm.CombinePerKey(sum)
       | pm.WriteToParquet(str(tmp_path / "g")))
    p.run()
    rows = pq.read_table(shard(tmp_path / "g", ".parquet")).to_pylist()
    # the end of the global window is no element's own time: it has no bounds and no time
    assert [(r["key"], r["value"], r["window_start"], r["window_end"], r["timestamp"],
             r["pane_timing"], r["diff"]) for r in rows] == [("a", 3, None, None, None,
                                                               "ON_TIME", 1)]


def test_parquet_column_mixing_types_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"WriteToParquet: column 'v' cannot be written as one "
                                         r"Arrow type \(its values are int, str\)"):
        run_write([{"v": 1}, {"v": "one"}], pm.WriteToParquet(str(tmp_path / "m")))
    assert not os.path.exists(shard(tmp_path / "m", ".parquet"))


def test_windowed_field_clashing_with_window_columns_is_an_error(tmp_path):
    p = pm.Pipeline(runner="local")
    (p | pm.Create([pm.TimestampedValue({"diff": 1}, 5)])
       | pm.WindowInto(pm.FixedWindows(60)) | pm.WriteToParquet(str(tmp_path / "x")))
    with pytest.raises(ValueError, match="'diff'.*clash"):
        p.run()


# --- malformed records --------------------------------------------------------------------------

def test_bad_json_records_go_to_dead_letters_and_are_counted(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": 1, "ts": 10}\n'          # 1 good
                    '{"id": 2, "ts": \n'             # 2 invalid JSON
                    '\n'                             # 3 blank: skipped
                    '[1, 2]\n'                       # 4 not an object
                    '{"id": 3}\n'                    # 5 missing timestamp
                    '{"id": 4, "ts": "whenever"}\n'  # 6 unparseable timestamp
                    '{"id": 5, "ts": "1970-01-01T00:00:20Z"}\n')  # 7 good
    p = pm.Pipeline(runner="local")
    good, bad = p | pm.ReadFromJson(str(path), timestamp_field="ts").with_exception_handling(
        dead_letter_tag="bad")
    result = p.run()
    assert [(wv.value["id"], wv.ts) for wv in result.collect(good)] == [(1, 10_000_000), (5, 20_000_000)]
    letters = [wv.value for wv in result.collect(bad)]
    assert all(isinstance(d, pm.DeadLetter) and d.transform == "ReadFromJson" for d in letters)
    assert [d.element for d in letters] == ['{"id": 2, "ts": ', "[1, 2]", {"id": 3},
                                            {"id": 4, "ts": "whenever"}]
    assert [d.error.split(": ", 1)[0] for d in letters] == [f"{path}:{n}" for n in (2, 4, 5, 6)]
    assert "invalid JSON" in letters[0].error
    assert "expected a JSON object" in letters[1].error
    assert "missing timestamp field 'ts'" in letters[2].error
    assert "'whenever' is neither seconds nor an ISO-8601 time" in letters[3].error
    assert result.counter("dead_lettered") == 4
    assert result.metrics()["ReadFromJson"]["dead_lettered"] == 4
    assert result.metrics()["ReadFromJson"]["read"] == 2


def test_bad_csv_rows_go_to_dead_letters_with_their_line_numbers(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("id,note,ts\n"                   # 1 header
                    "1,plain,10\n"                   # 2 good
                    "2,too,many,fields\n"            # 3 wrong field count
                    '3,"two\nlines",nope\n'          # 4-5 bad timestamp (record starts on 4)
                    "\n"                             # 6 blank: skipped
                    "4\n"                            # 7 too few fields
                    "5,ok,20\n"                      # 8 good
                    "6,no time,\n")                  # 9 empty timestamp
    p = pm.Pipeline(runner="local")
    outs = p | "Read" >> pm.ReadFromCsv(str(path), timestamp_field="ts").with_exception_handling(
        main_tag="rows", dead_letter_tag="errors")
    result = p.run()
    assert [(wv.value["id"], wv.ts) for wv in result.collect(outs.rows)] == [(1, 10_000_000), (5, 20_000_000)]
    letters = [wv.value for wv in result.collect(outs.errors)]
    assert [(d.element, d.error.split(": ", 1)[0]) for d in letters] == [
        ("2,too,many,fields", f"{path}:3"),
        ("4", f"{path}:7"),
        ({"id": 3, "note": "two\nlines", "ts": "nope"}, f"{path}:4"),
        ({"id": 6, "note": "no time", "ts": ""}, f"{path}:9"),  # a string column: "" not None
    ]
    assert "expected 3 fields (as in the header), got 4" in letters[0].error
    assert "timestamp field 'ts' is an empty string" in letters[3].error
    assert result.counter("dead_lettered") == 4


@pytest.mark.parametrize("runner", ["--workers=1", "--runner=spark"])
def test_dead_letters_after_the_first_bundle_of_a_file_are_all_kept(tmp_path, runner, request):
    """Malformed records found after a bundle's dead letters were sent, while the same file
    is still being read, are sent too (they were once appended to a list already sent)."""
    if "spark" in runner:
        request.getfixturevalue("spark_session")
    lines = [b"line %d" % i for i in range(2500)]
    for n in (3, 1500, 2400):
        lines[n] = b"\xff bad %d" % n
    (tmp_path / "t.txt").write_bytes(b"\n".join(lines) + b"\n")
    p = pm.Pipeline(argv=["--quiet", "--bundle_size=100", runner])
    good, bad = p | pm.ReadFromText(str(tmp_path / "t.txt")).with_exception_handling()
    result = p.run()
    assert len(result.collect(good)) == 2497
    assert sorted(wv.value.element for wv in result.collect(bad)) == [
        b"\xff bad 1500", b"\xff bad 2400", b"\xff bad 3"]
    assert result.counter("dead_lettered") == 3


def test_bad_text_and_parquet_records_go_to_dead_letters(tmp_path):
    (tmp_path / "t.txt").write_bytes(b"ok\n\xff\xfe broken\nfine\n")
    pq.write_table(pa.table({"v": [1, 2, 3], "ts": [1.0, None, 3.0]}), tmp_path / "p.parquet")
    (tmp_path / "zz.parquet").write_bytes(b"not parquet at all")
    p = pm.Pipeline(runner="local")
    text_good, text_bad = p | pm.ReadFromText(str(tmp_path / "*.txt")).with_exception_handling()
    pq_good, pq_bad = p | pm.ReadFromParquet(str(tmp_path / "*.parquet"), timestamp_field="ts"
                                             ).with_exception_handling()
    result = p.run()
    assert [wv.value for wv in result.collect(text_good)] == ["ok", "fine"]
    [letter] = [wv.value for wv in result.collect(text_bad)]
    assert letter.element == b"\xff\xfe broken"
    assert letter.error.startswith(f"{tmp_path / 't.txt'}:2: not UTF-8")
    assert [(wv.value["v"], wv.ts) for wv in result.collect(pq_good)] == [(1, 1_000_000), (3, 3_000_000)]
    letters = [wv.value for wv in result.collect(pq_bad)]
    assert letters[0].error == f"{tmp_path / 'p.parquet'}:2: timestamp field 'ts' is null"
    assert letters[0].element == {"v": 2, "ts": None}
    assert letters[1].element == str(tmp_path / "zz.parquet")
    assert "not a readable Parquet file" in letters[1].error
    assert result.counter("dead_lettered") == 3


@pytest.mark.parametrize("fmt, content, line", [
    ("jsonl", '{"a": 1}\n{"a": 2}\n{"a": oops}\n', 3),
    ("csv", "a,b\n1,2\n3\n", 3),
])
def test_bad_record_without_dead_letters_fails_the_run(tmp_path, fmt, content, line):
    path = tmp_path / f"data.{fmt}"
    path.write_text(content)
    source = pm.ReadFromJson(str(path)) if fmt == "jsonl" else pm.ReadFromCsv(str(path))
    p = pm.Pipeline(runner="local")
    p | source | pm.WriteToJson(str(tmp_path / "out"))
    with pytest.raises(UserCodeError, match=f"{path}:{line}: "):
        p.run()
    assert not os.path.exists(shard(tmp_path / "out", ".jsonl"))  # nothing half-written


def test_missing_timestamp_without_dead_letters_fails_the_run(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text('{"ts": 1}\n{"id": 2}\n')
    p = pm.Pipeline(runner="local")
    p | pm.ReadFromJson(str(path), timestamp_field="ts")
    with pytest.raises(UserCodeError, match=r"e\.jsonl:2: missing timestamp field 'ts'"):
        p.run()


# --- patterns and configuration -----------------------------------------------------------------

@pytest.mark.parametrize("source", [pm.ReadFromText, pm.ReadFromJson, pm.ReadFromCsv, pm.ReadFromParquet])
def test_pattern_matching_no_files_is_a_clear_error(tmp_path, source):
    (tmp_path / "dir.csv").mkdir()  # a directory is not a file to read
    pattern = str(tmp_path / "*.csv")
    p = pm.Pipeline(runner="local")
    with pytest.raises(FileNotFoundError, match=re.escape(f"no files match the pattern {pattern!r}")):
        p | source(pattern)
    with pytest.raises(PipelineConstructionError, match="nothing-here.txt"):
        p | source(str(tmp_path / "nothing-here.txt"))


def test_parquet_missing_column_is_a_clear_error(tmp_path):
    pq.write_table(pa.table({"a": [1]}), tmp_path / "a.parquet")
    p = pm.Pipeline(runner="local")
    p | pm.ReadFromParquet(str(tmp_path / "a.parquet"), columns=["a", "b"])
    with pytest.raises(ValueError, match=r"no column\(s\) \['b'\]"):
        p.run()


def test_sources_are_not_kv_and_sinks_take_one_input(tmp_path):
    (tmp_path / "x.txt").write_text("a\n")
    p = pm.Pipeline(runner="local")
    lines = p | pm.ReadFromText(str(tmp_path / "x.txt"))
    with pytest.raises(PipelineConstructionError, match="needs \\(key, value\\) pairs"):
        lines | pm.GroupByKey()
    with pytest.raises(PipelineConstructionError, match="takes one PCollection"):
        (lines, lines) | pm.WriteToText(str(tmp_path / "o"))
    assert pm.ReadFromText(str(tmp_path / "x.txt")).dead_letter_tag is None


def test_a_failed_run_leaves_no_output_files(tmp_path):
    def boom(v):
        if v == 3:
            raise ValueError("bad three")
        return v
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet"]))
    (p | pm.Create([1, 2, 3]) | pm.Map(boom) | pm.WriteToText(str(tmp_path / "out"), file_name_suffix=".txt"))
    with pytest.raises(pm.UserCodeError, match="bad three"):
        p.run()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("tz", [None, "UTC", "+05:00"])
def test_parquet_timestamp_columns_give_the_same_event_times_as_their_values(tmp_path, unit, tz):
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq
    from pomset.sdk.io.base import event_time_micros
    values = [0, 1_700_000_000_123_456, -86_400_000_001, None, 4_102_444_800_000_001]
    scale = {"s": 10**6, "ms": 10**3, "us": 1, "ns": 10**-3}[unit]
    raw_values = [None if v is None else int(v // scale) if unit != "ns" else v * 1000 for v in values]
    col = pa.array(raw_values, pa.int64()).cast(pa.timestamp(unit, tz))
    pq.write_table(pa.table({"ts": col, "i": list(range(len(values)))}), str(tmp_path / "t.parquet"))
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet"]))
    good, bad_pc = p | pm.ReadFromParquet(str(tmp_path / "t.parquet"),
                                          timestamp_field="ts").with_exception_handling()
    result = p.run()
    got, bad = result.collect(good), result.collect(bad_pc)
    by_row = {wv.value["i"]: wv.ts for wv in got}
    for i, v in enumerate(col.to_pylist()):
        if v is None:
            assert i not in by_row
        else:
            assert by_row[i] == event_time_micros(v if isinstance(v, dt.datetime) else v)
    assert len(bad) == 1 and "null" in bad[0].value.error


JSON_TEXTS = st.one_of(
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                 lambda inner: st.lists(inner, max_size=3)
                 | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                 max_leaves=8).map(json.dumps),
    st.text(alphabet=' \t\n\r{}[]",:0123456789.eE+-truefalsnNaI\ufeff', max_size=12))


@settings(max_examples=400, deadline=None)
@given(text=JSON_TEXTS, around=st.sampled_from(["", " ", "\n", "x", ",1", "\ufeff"]),
       before=st.booleans())
def test_json_loads_is_json_loads(text, around, before):
    """The records' and lines' JSON parse (the C scanner taken directly when the text is one
    value alone) gives json.loads's value, or its error, for any text."""
    text = around + text if before else text + around

    def parse(loads):
        try:
            return ("value", repr(loads(text)))
        except ValueError as e:
            return ("error", type(e), str(e))
    assert parse(json_loads) == parse(json.loads)


def test_sinks_name_their_files_with_the_formats_suffix_unless_told_otherwise(tmp_path):
    p = pm.Pipeline(runner="local")
    rows = p | pm.Create([{"v": 1}])
    rows | pm.WriteToParquet(str(tmp_path / "p"))
    rows | pm.WriteToJson(str(tmp_path / "j"))
    rows | pm.WriteToCsv(str(tmp_path / "c"))
    rows | pm.WriteToText(str(tmp_path / "t"))            # Beam's: no suffix for text
    rows | pm.WriteToParquet(str(tmp_path / "x"), file_name_suffix=".pq")
    rows | pm.WriteToJson(str(tmp_path / "n"), file_name_suffix="")
    p.run()
    assert sorted(os.listdir(tmp_path)) == [
        "c-00000-of-00001.csv", "j-00000-of-00001.jsonl", "n-00000-of-00001",
        "p-00000-of-00001.parquet", "t-00000-of-00001", "x-00000-of-00001.pq"]
    got, _ = read_all(pm.ReadFromParquet(str(tmp_path / "*.parquet")))
    assert [wv.value for wv in got] == [{"v": 1}]


def test_spark_names_its_files_with_the_formats_suffix(tmp_path, spark_session):
    pq.write_table(pa.table({"k": ["a", "b", "a"], "v": [1, 2, 3]}), tmp_path / "in.parquet")
    p = pm.Pipeline(runner="spark")
    rows = p | pm.ReadFromParquet(str(tmp_path / "in.parquet"))
    rows | pm.GroupBy("k").aggregate_field("v", pm.Sum, "total") | pm.WriteToParquet(
        str(tmp_path / "out" / "sums"))                   # Spark writes it natively
    rows | pm.WriteToJson(str(tmp_path / "out" / "rows"))
    p.run()
    assert sorted(os.listdir(tmp_path / "out")) == ["rows-00000-of-00001.jsonl",
                                                    "sums-00000-of-00001.parquet"]
    table = pq.read_table(str(tmp_path / "out" / "sums-00000-of-00001.parquet"))
    assert sorted(table.to_pylist(), key=str) == [{"k": "a", "total": 4}, {"k": "b", "total": 2}]
