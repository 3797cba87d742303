"""Spark batch's columnar plan (`pomset/runners/spark/columns.py`): a schema'd pipeline runs as
Spark's own columns and gives what the element path (the local runner) gives: rows, windows,
panes, timestamps, dead letters, written files."""
from __future__ import annotations

import glob
import math
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pomset as pm
from pomset.runners.spark.batch import BatchPlan, read_more_than_once
from pomset.sdk.expressions import col

PYTHON_IN_PLAN = ("PythonUDF", "ArrowEvalPython", "BatchEvalPython", "MapInArrow",
                  "PythonMapInArrow", "FlatMapGroupsInArrow", "FlatMapGroupsInPandas",
                  "MapInPandas")

HOUR = 3600


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    """Two Parquet files of events over a few hours: int keys, float values with nulls,
    timestamps (UTC), a string field."""
    folder = tmp_path_factory.mktemp("events")
    rng = np.random.default_rng(7)
    for i in range(2):
        n = 400
        ts = (1_700_000_000 + rng.integers(0, 5 * HOUR, n)) * 1_000_000
        value = rng.integers(-50, 100, n).astype(np.float64) / 2
        value_nulls = rng.random(n) < 0.1
        pq.write_table(pa.table({
            "key": pa.array(rng.integers(0, 6, n)),
            "value": pa.array(value, mask=value_nulls),
            "name": pa.array([f"n{j % 7}" for j in range(n)]),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
        }), folder / f"part-{i}.parquet", row_group_size=100)
    return str(folder)


def _normalized(wvs):
    return Counter((_value(wv.value), wv.ts, wv.window, wv.pane, wv.diff) for wv in wvs)


def _value(v):
    items = v.items() if isinstance(v, dict) else enumerate(v if isinstance(v, tuple) else [v])
    return tuple((k, "nan" if isinstance(x, float) and math.isnan(x) else
                  _value(x) if isinstance(x, (dict, tuple)) else x) for k, x in items)


def _both(build, spark_session):
    """{runner: (result, normalized elements of each output)} for local and spark."""
    out = {}
    for runner in ("local", "spark"):
        p = pm.Pipeline(options=pm.PipelineOptions([f"--runner={runner}", "--quiet",
                                                    "--collect=leaves"]))
        pcolls = build(p)
        result = p.run()
        out[runner] = (result, {name: _normalized(result.collect(pc))
                                for name, pc in pcolls.items()}, pcolls)
    return out


def _plan(build, spark_session):
    """The Spark batch plan of a pipeline, built but not run."""
    p = pm.Pipeline(options=pm.PipelineOptions(["--runner=spark", "--quiet"]))
    build(p)
    plan = BatchPlan(spark_session, p)
    plan.build(read_more_than_once(p, p.recorded()))
    return p, plan


def _read(prefix):
    files = sorted(glob.glob(f"{prefix}-*-of-*.parquet"))
    assert files, prefix
    return pa.concat_tables([pq.read_table(f) for f in files])


def _sorted(table):
    return table.sort_by([(n, "ascending") for n in table.column_names])


def test_headline_pipeline_writes_what_the_element_path_writes_in_one_plan(
        events, spark_session, tmp_path):
    def build(p, prefix):
        (p | pm.ReadFromParquet(events, timestamp_field="ts")
           | pm.WindowInto(pm.FixedWindows(HOUR))
           | pm.GroupBy("key").aggregate_field("value", pm.Sum, "total")
           .aggregate_field("value", pm.Count, "n").aggregate_field("value", pm.Mean, "mean")
           .aggregate_field("value", pm.Min, "low").aggregate_field("value", pm.Max, "high")
           | pm.WriteToParquet(prefix, file_name_suffix=".parquet"))
    tables = {}
    for runner in ("local", "spark"):
        p = pm.Pipeline(options=pm.PipelineOptions([f"--runner={runner}", "--quiet"]))
        build(p, str(tmp_path / runner))
        result = p.run()
        tables[runner] = _read(tmp_path / runner)
        assert result.metrics()["ReadFromParquet"]["read"] == 800
    assert tables["spark"].schema == tables["local"].schema
    assert _sorted(tables["spark"]).equals(_sorted(tables["local"]))
    assert set(tables["spark"].column("pane_timing").to_pylist()) == {"ON_TIME"}

    # the plan of what the sink writes has no Python in it
    _, plan = _plan(lambda p: build(p, str(tmp_path / "plan")), spark_session)
    sink = next(n for n in plan.pipeline.nodes if isinstance(n.transform, pm.WriteToParquet))
    df = plan.parquet_output(sink)
    assert df is not None and plan.sink_dfs[sink.label] is df
    executed = df._jdf.queryExecution().executedPlan().toString()
    assert "HashAggregate" in executed
    assert not [name for name in PYTHON_IN_PLAN if name in executed], executed


def test_select_filter_with_columns_and_aggregates_with_nulls_match_the_element_path(
        events, spark_session):
    def build(p):
        rows = p | pm.ReadFromParquet(events, timestamp_field="ts")
        picked = (rows | pm.Filter((col("value") > 0) | col("value").is_null())
                  | pm.WithColumns(double=col("value") * 2, key=col("key") + 1)
                  | pm.Select("key", "double", upper=col("name").upper(),
                              hour=col("ts").hour())).keep()
        sliding = (rows | pm.WindowInto(pm.SlidingWindows(2 * HOUR, HOUR))
                   | pm.GroupBy("name").aggregate_field("value", pm.Mean, "mean")
                   .aggregate_field("value", pm.Min, "low")
                   .aggregate_field("value", pm.Count, "n"))
        # a group whose values are all null: Sum 0, Mean NaN, Min null, Count 0
        nulls = (rows | pm.WithColumns(none=col("value").is_null())
                 | pm.Filter(col("none"))
                 | pm.GroupBy("none").aggregate_field("value", pm.Sum, "total")
                 .aggregate_field("value", pm.Mean, "mean")
                 .aggregate_field("value", pm.Max, "high")
                 .aggregate_field("value", pm.Count, "n"))
        # a Python step after the columns: they turn into elements there (a Map that only
        # picked fields would stay columns)
        mapped = picked | pm.Map(lambda r: (r["key"], str(r["double"])))
        # a combiner that is not built in: the kernel combines the keyed columns' elements
        python_agg = (rows | pm.GroupBy("key").aggregate_field(
            "value", lambda vs: sorted(vs)[len(vs) // 2] if vs else None, "median"))
        return {"picked": picked, "sliding": sliding, "nulls": nulls, "mapped": mapped,
                "python_agg": python_agg}
    out = _both(build, spark_session)
    assert out["spark"][1] == out["local"][1]
    nulls = list(out["spark"][1]["nulls"])
    assert len(nulls) == 1 and nulls[0][0] == (("none", True), ("total", 0), ("mean", "nan"),
                                                ("high", None), ("n", 0))

    # every step is columns but the Python ones and the grouping by a Python combiner
    p, plan = _plan(build, spark_session)
    elements = [n.label for n in p.nodes for pc in n.outputs.values()
                if type(plan.dfs[id(pc)]).__name__ != "Columnar"]
    assert elements == ["Map(<lambda>)", "GroupBy(key)/CombinePerKey(FieldsCombineFn)",
                        "GroupBy(key)/ToRows"], elements


def test_null_timestamps_are_dead_letters_or_fail_the_run_naming_the_row(spark_session, tmp_path):
    path = str(tmp_path / "times.parquet")
    pq.write_table(pa.table({"k": ["a", "b", "c", "d"], "t": pa.array([10, None, 20, None],
                                                                        pa.int64())}), path)

    def build(p):
        good, bad = (p | pm.ReadFromParquet(path, timestamp_field="t")
                     .with_exception_handling())
        return {"good": good, "bad": bad}
    out = _both(build, spark_session)
    assert out["spark"][1] == out["local"][1]
    spark_result = out["spark"][0]
    counts = spark_result.metrics()["ReadFromParquet"]
    assert counts == out["local"][0].metrics()["ReadFromParquet"]
    assert counts["read"] == 2 and counts["dead_lettered"] == 2 and counts["received"] == 0
    letters = sorted(wv.value.error for wv in spark_result.collect(out["spark"][2]["bad"]))
    assert letters == [f"{path}:2: timestamp field 't' is null",
                       f"{path}:4: timestamp field 't' is null"]

    # time fields of every kind the columnar read takes, with nulls and values out of range
    micros = [0, 1_700_000_000_123_456, -86_400_000_001, None, 4_102_444_800_000_001]
    kinds = {}
    for unit, tz in (("s", "+05:00"), ("ms", None), ("us", "UTC")):
        scale = {"s": 10**6, "ms": 10**3, "us": 1}[unit]
        values = pa.array([None if v is None else v // scale for v in micros], pa.int64())
        kinds[f"{unit}-{tz and tz.replace(':', '')}"] = values.cast(pa.timestamp(unit, tz))
    kinds["seconds"] = pa.array([0, 1_700_000_000, None, 10**15, -5], pa.int64())
    kinds["float"] = pa.array([0.5, 1.25e9, float("nan"), None, 2.5], pa.float64())
    for name, values in kinds.items():
        pq.write_table(pa.table({"t": values, "i": range(len(values))}),
                       str(tmp_path / f"{name}.parquet"))

    def build_kinds(p):
        outs = {}
        for name in kinds:
            good, bad = (p | name >> pm.ReadFromParquet(str(tmp_path / f"{name}.parquet"),
                                                         timestamp_field="t")
                         .with_exception_handling())
            outs[name], outs[name + "-bad"] = good, bad | f"{name}-e" >> pm.Map(
                lambda d: (d.element, d.error))
        return outs
    out = _both(build_kinds, spark_session)
    assert out["spark"][1] == out["local"][1]

    p = pm.Pipeline(options=pm.PipelineOptions(["--runner=spark", "--quiet"]))
    p | pm.ReadFromParquet(path, timestamp_field="t")
    with pytest.raises(pm.UserCodeError, match=r"times.parquet:2: timestamp field 't' is null"):
        p.run()


def test_a_large_file_is_read_in_several_partitions(spark_session, tmp_path):
    """Spark splits one Parquet file by row groups: several tasks read it (here ~10 MB of
    random doubles; Spark's split size is the file's share per core)."""
    n = 1_200_000
    path = str(tmp_path / "big.parquet")
    rng = np.random.default_rng(1)
    pq.write_table(pa.table({"key": pa.array(np.arange(n) % 1000),
                             "value": pa.array(rng.random(n)),
                             "ts": pa.array(np.arange(n, dtype=np.int64) // 100)}),
                   path, row_group_size=100_000)
    _, plan = _plan(lambda p: p | pm.ReadFromParquet(path, timestamp_field="ts")
                    | pm.WriteToParquet(str(tmp_path / "out")), spark_session)
    read = next(n for n in plan.pipeline.nodes if isinstance(n.transform, pm.ReadFromParquet))
    df = plan.dfs[id(read.outputs[None])].df
    assert df.rdd.getNumPartitions() > 1


def test_a_map_that_picks_fields_and_a_builtin_combine_are_spark_columns(
        events, spark_session, tmp_path):
    def build(p):
        rows = p | pm.ReadFromParquet(events, timestamp_field="ts")
        windowed = rows | pm.WindowInto(pm.FixedWindows(HOUR))
        return {"sums": windowed | pm.Map(lambda r: (r["name"], r["key"]))
                | pm.CombinePerKey(sum),
                "counts": windowed | "Ones" >> pm.Map(lambda r: (r.name, 1))
                | "Count" >> pm.CombinePerKey(pm.Count())}
    out = _both(build, spark_session)
    assert out["spark"][1] == out["local"][1]
    p, plan = _plan(build, spark_session)
    assert all(type(plan.dfs[id(pc)]).__name__ == "Columnar"
               for n in p.nodes for pc in n.outputs.values())

    def written(p):
        build(p)["sums"] | pm.WriteToParquet(str(tmp_path / "sums"))
    _, plan = _plan(written, spark_session)
    sink = next(n for n in plan.pipeline.nodes if isinstance(n.transform, pm.WriteToParquet))
    executed = plan.parquet_output(sink)._jdf.queryExecution().executedPlan().toString()
    assert not [name for name in PYTHON_IN_PLAN if name in executed], executed
