"""Input whose types do not fit and values a sink cannot hold (issue 57, items 4 and 5), on the
local runner and Spark batch: Parquet files of one source unify to one schema by Arrow's
promotion or fail before reading, naming the files and the column (or send the file that does
not fit to dead letters); event times beyond year 9999 are written exactly; NaN and the
infinities are written to JSON (files and Kafka) as strings, so that every record is strict
JSON."""
from __future__ import annotations

import json
import math
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pomset as pm
from kafka_util import new_topic, read_topic
from pomset import col
from pomset.sdk.errors import UserCodeError
from pomset.sdk.io.parquetio import SchemaMismatchError

RUNNERS = ["local", "spark"]


@pytest.fixture(params=RUNNERS)
def runner(request) -> str:
    if request.param == "spark":
        request.getfixturevalue("spark_session")
    return request.param


def pipeline(runner):
    return pm.Pipeline(options=pm.PipelineOptions([f"--runner={runner}", "--quiet"]))


def shard(prefix, suffix=""):
    return f"{prefix}-00000-of-00001{suffix}"


def _v_files(folder, *columns):
    """One Parquet file per column of values, named a.parquet, b.parquet, ..."""
    paths = []
    for name, values in zip("abcdefgh", columns):
        path = folder / f"{name}.parquet"
        pq.write_table(pa.table({"k": list(range(len(values))), "v": values}), path)
        paths.append(str(path))
    return paths


# --- item 4: Parquet files that do not share a schema ------------------------------------------

def test_parquet_files_unify_by_safe_promotion(tmp_path, runner):
    _v_files(tmp_path, pa.array([250, 3], pa.int64()), pa.array([1.5], pa.float64()),
             pa.array([7], pa.int32()))
    p = pipeline(runner)
    rows = p | pm.ReadFromParquet(str(tmp_path / "*.parquet"))
    assert rows.schema is not None
    assert rows.schema.field("v").type == pa.float64()
    assert rows.schema.field("k").type == pa.int64()
    doubled = (rows | pm.WithColumns(w=col("v") * 2)).keep()
    result = p.run()
    got = sorted((r["v"], r["w"]) for r in (wv.value for wv in result.collect(doubled)))
    assert got == [(1.5, 3.0), (3.0, 6.0), (7.0, 14.0), (250.0, 500.0)]
    assert all(isinstance(v, float) and isinstance(w, float) for v, w in got)


def test_parquet_files_whose_types_do_not_unify_fail_before_reading(tmp_path, runner):
    a, b, c = _v_files(tmp_path, pa.array([250], pa.int64()), pa.array([1.5], pa.float64()),
                       pa.array(["250"], pa.string()))
    p = pipeline(runner)
    with pytest.raises(SchemaMismatchError) as e:
        p | pm.ReadFromParquet(str(tmp_path / "*.parquet"), label="events")
    message = str(e.value)
    assert message.startswith("events: column 'v' ")
    assert f"string in {c}" in message
    assert f"int64 in {a}" in message and f"double in {b}" in message
    assert "schema_mismatch='dead_letter'" in message


def test_parquet_selected_columns_unify_alone(tmp_path, runner):
    _v_files(tmp_path, pa.array([1], pa.int64()), pa.array(["one"], pa.string()))
    p = pipeline(runner)
    keys = (p | pm.ReadFromParquet(str(tmp_path / "*.parquet"), columns=["k"])).keep()
    assert keys.schema == pa.schema([("k", pa.int64())])
    result = p.run()
    assert sorted(wv.value["k"] for wv in result.collect(keys)) == [0, 0]


def test_parquet_file_that_does_not_unify_goes_to_dead_letters_if_asked(tmp_path, runner):
    a, b, c = _v_files(tmp_path, pa.array([250, 3], pa.int64()), pa.array([1.5], pa.float64()),
                       pa.array(["250"], pa.string()))
    p = pipeline(runner)
    good, bad = p | pm.ReadFromParquet(
        str(tmp_path / "*.parquet"), label="events",
        schema_mismatch="dead_letter").with_exception_handling()
    assert good.schema.field("v").type == pa.float64()
    doubled = (good | pm.WithColumns(w=col("v") * 2)).keep()
    bad = bad.keep()
    result = p.run()
    assert sorted(wv.value["w"] for wv in result.collect(doubled)) == [3.0, 6.0, 500.0]
    letters = [wv.value for wv in result.collect(bad)]
    assert [(d.element, d.transform) for d in letters] == [(c, "events")]
    assert letters[0].error == (f"{c}: column 'v' is string here, which does not unify with "
                                f"double, its type in the files before it")
    assert result.metrics()["events"]["dead_lettered"] == 1


def test_parquet_dead_letter_mismatch_without_a_dead_letter_output_fails_naming_the_file(
        tmp_path):
    a, c = _v_files(tmp_path, pa.array([1], pa.int64()), pa.array(["x"], pa.string()))
    p = pipeline("local")
    p | pm.ReadFromParquet(str(tmp_path / "*.parquet"), schema_mismatch="dead_letter")
    with pytest.raises(UserCodeError, match=f"{c}: column 'v' is string here"):
        p.run()


def test_parquet_value_that_does_not_fit_the_promoted_type_is_a_dead_letter(tmp_path, runner):
    big = 2**53 + 1   # a double holds 2**53 and 2**53 + 2, not it
    a, b = _v_files(tmp_path, pa.array([5, big, 6], pa.int64()), pa.array([0.5], pa.float64()))
    p = pipeline(runner)
    good, bad = p | pm.ReadFromParquet(str(tmp_path / "*.parquet"),
                                       label="events").with_exception_handling()
    good, bad = good.keep(), bad.keep()
    result = p.run()
    assert sorted(wv.value["v"] for wv in result.collect(good)) == [0.5, 5.0, 6.0]
    letters = [wv.value for wv in result.collect(bad)]
    assert [d.element for d in letters] == [{"k": 1, "v": big}]
    assert letters[0].error == (f"{a}:2: column 'v' value {big} (int64) does not fit double, "
                                f"the type the files unify to")


def test_parquet_schema_mismatch_argument_is_checked(tmp_path):
    _v_files(tmp_path, pa.array([1], pa.int64()))
    with pytest.raises(ValueError, match="schema_mismatch must be 'fail' or 'dead_letter'"):
        pm.ReadFromParquet(str(tmp_path / "*.parquet"), schema_mismatch="skip")


# --- item 5: values a sink cannot hold ---------------------------------------------------------

#: event times (µs) in year 10,000 and beyond, one with a fraction of a second
FAR = [253_402_300_800_000_000, 300_000_000_000_123_456]


def _far_times(p, folder, source):
    if source == "parquet":   # a Parquet read: the columnar paths (Spark's own plan)
        pq.write_table(pa.table({"v": [1, 2], "ts": pa.array(FAR, pa.int64())}),
                       folder / "in.parquet")
        rows = p | pm.ReadFromParquet(str(folder / "in.parquet"), timestamp_field="ts",
                                      timestamp_unit="us", columns=["v"])
    else:                     # elements
        rows = p | pm.Create([pm.TimestampedValue({"v": v}, pm.Timestamp.from_micros(t))
                              for v, t in zip([1, 2], FAR)])
    rows | pm.WindowInto(pm.FixedWindows(60)) | pm.WriteToParquet(str(folder / "out"),
                                                                  file_name_suffix=".parquet")


@pytest.mark.filterwarnings("ignore::pomset.TimeUnitWarning")   # year 11,477 is meant
@pytest.mark.parametrize("source", ["parquet", "create"])
def test_parquet_sink_writes_event_times_beyond_year_9999_exactly(tmp_path, runner, source,
                                                                  request):
    p = pipeline(runner)
    _far_times(p, tmp_path, source)
    p.run()
    table = pq.read_table(shard(tmp_path / "out", ".parquet"))
    assert table.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    micros = {name: table.column(name).cast(pa.int64()).to_pylist()
              for name in ("window_start", "window_end", "timestamp")}
    order = sorted(range(2), key=lambda i: micros["timestamp"][i])
    assert [micros["timestamp"][i] for i in order] == FAR
    assert [micros["window_start"][i] for i in order] == [t - t % 60_000_000 for t in FAR]
    assert [micros["window_end"][i] for i in order] == [t - t % 60_000_000 + 60_000_000
                                                        for t in FAR]
    if runner == "spark" and source == "parquet":   # written from Spark's own plan
        from pomset.runners.spark.batch import BatchPlan, read_more_than_once
        (tmp_path / "plan").mkdir()
        planned = pipeline("spark")
        _far_times(planned, tmp_path / "plan", source)
        plan = BatchPlan(request.getfixturevalue("spark_session"), planned)
        plan.build(read_more_than_once(planned, planned.recorded()))
        sink = next(n for n in planned.nodes if isinstance(n.transform, pm.WriteToParquet))
        assert plan.parquet_output(sink) is not None


def _strict(line):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")
    return json.loads(line, parse_constant=refuse)


def test_json_and_text_sinks_write_nan_and_infinity_as_strings(tmp_path, runner):
    values = [{"v": math.nan}, {"v": math.inf}, {"v": -math.inf}, {"v": 1.5},
              {"v": [1.0, math.nan], "w": {"x": -math.inf}}]
    p = pipeline(runner)
    rows = p | pm.Create([pm.TimestampedValue(v, 60 * i) for i, v in enumerate(values)])
    rows | pm.WriteToJson(str(tmp_path / "plain"), file_name_suffix=".jsonl")
    windowed = rows | pm.WindowInto(pm.FixedWindows(60))
    windowed | pm.WriteToJson(str(tmp_path / "windowed"), file_name_suffix=".jsonl")
    windowed | pm.WriteToText(str(tmp_path / "text"), file_name_suffix=".txt")
    p.run()
    want = [{"v": "NaN"}, {"v": "Infinity"}, {"v": "-Infinity"}, {"v": 1.5},
            {"v": [1.0, "NaN"], "w": {"x": "-Infinity"}}]
    for name, suffix in [("plain", ".jsonl"), ("windowed", ".jsonl"), ("text", ".txt")]:
        path = shard(tmp_path / name, suffix)
        assert os.path.exists(path)
        with open(path, encoding="utf-8") as f:
            got = [_strict(line) for line in f]
        fields = [{k: r[k] for k in ("v", "w") if k in r} for r in got]
        key = lambda r: json.dumps(r, sort_keys=True)   # noqa: E731
        assert sorted(fields, key=key) == sorted(want, key=key), name


def test_kafka_sink_writes_nan_and_infinity_as_strings(kafka_broker):
    topic = new_topic(kafka_broker, "nan")
    with pm.Pipeline(options=pm.PipelineOptions(["--runner=local", "--quiet"])) as p:
        (p | pm.Create([{"v": math.nan, "w": [math.inf, -math.inf]}])
         | pm.WriteToKafka(kafka_broker, topic, key=lambda r: {"k": math.nan}))
    [record] = read_topic(kafka_broker, topic)
    assert _strict(record.value()) == {"v": "NaN", "w": ["Infinity", "-Infinity"]}
    assert _strict(record.key()) == {"k": "NaN"}
