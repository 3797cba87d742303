"""Schema'd pipelines on the local runner: the columnar path (Arrow bundles, native windows and
aggregation) gives exactly what the element path gives, element by element (value, time,
window, pane), for every trigger shape; rows that do not fit go to dead letters."""
from __future__ import annotations

import contextlib
import datetime as dt

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, strategies as st

import pomset as pm
from pomset import col
from pomset.runtime.columnar import Columns

HOUR = 3600
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def _write(path, n=3000, keys=7, nulls=False, bad_times=()):
    values = [None if nulls and i % 11 == 0 else (i * 37) % 101 for i in range(n)]
    times = [None if i in bad_times else T0 + dt.timedelta(seconds=(i * 7919) % (6 * HOUR))
             for i in range(n)]
    table = pa.table({"key": [f"k{i % keys}" for i in range(n)],
                      "value": pa.array(values, pa.int64()),
                      "price": pa.array([v / 4 if v is not None else None for v in values]),
                      "ts": pa.array(times, pa.timestamp("us", tz="UTC"))})
    pq.write_table(table, path, row_group_size=1000)
    return str(path)


def _canon(elements):
    return sorted((repr(sorted(dict(w.value).items())) if isinstance(w.value, dict)
                   else repr(w.value), w.ts, repr(w.window), w.pane) for w in elements)


def _both(build, path):
    """Run `build(source)` over the Parquet file read as columns, and over the same rows
    as elements (through a Python Map, which the columnar path cannot take), locally. The
    columnar run must never evaluate an expression one row at a time."""
    out = {}
    for form in ("columns", "elements"):
        with pm.Pipeline() as p:
            result = build(_rows(p, path, form)).keep()
            if form == "columns":
                with _no_row_at_a_time():
                    p.run()
        out[form] = _canon(p.result.collect(result))
    return out["columns"], out["elements"]


def _rows(p, path, form):
    """The Parquet file's rows: as the source gives them ("columns"), or through a Python
    Map, which the columnar path cannot take ("elements")."""
    rows = p | pm.ReadFromParquet(path, timestamp_field="ts")
    return rows | pm.Map(lambda r: pm.Row(r)) if form == "elements" else rows


@contextlib.contextmanager
def _no_row_at_a_time():
    def refuse(self, row):
        raise AssertionError(f"{self!r} evaluated on one row: the columnar path was not taken")
    classes = [pm.Expr] + pm.Expr.__subclasses__()
    saved = [(c, c.__dict__["eval"]) for c in classes if "eval" in c.__dict__]
    for c, _ in saved:
        c.eval = refuse
    try:
        yield
    finally:
        for c, fn in saved:
            c.eval = fn


@pytest.fixture
def parquet(tmp_path):
    return _write(tmp_path / "rows.parquet")


def test_parquet_rows_are_rows_with_the_files_schema(parquet):
    with pm.Pipeline() as p:
        rows = p | pm.ReadFromParquet(parquet, timestamp_field="ts")
        assert rows.schema.names == ["key", "value", "price", "ts"]
        keys = rows | pm.Map(lambda r: r.key)
    got = p.result.collect(keys)
    assert len(got) == 3000 and {w.value for w in got} == {f"k{i}" for i in range(7)}


def test_hourly_sums_per_key_match_the_element_path(parquet):
    def build(rows):
        return (rows | pm.WindowInto(pm.FixedWindows(HOUR))
                | pm.GroupBy("key").aggregate_field("value", pm.Sum, "total"))
    columns, elements = _both(build, parquet)
    assert columns == elements and len(columns) == 7 * 6


def test_every_builtin_aggregation_with_nulls(tmp_path):
    path = _write(tmp_path / "nulls.parquet", nulls=True)

    def build(rows):
        return (rows | pm.WindowInto(pm.SlidingWindows(2 * HOUR, HOUR))
                | pm.GroupBy("key", parity=col("value").cast("int64").is_null())
                .aggregate_field("value", pm.Sum, "total")
                .aggregate_field("price", pm.Mean, "mean")
                .aggregate_field("value", pm.Min, "low")
                .aggregate_field("price", pm.Max, "high")
                .aggregate_field("value", pm.Min(default=-1), "low_or_none")
                .aggregate_field("value", pm.Count, "n"))
    columns, elements = _both(build, path)
    assert columns == elements
    assert any("'n', 0" in c[0] for c in columns)   # groups of only nulls: counted as 0


@pytest.mark.parametrize("combiner", list(pm.TimestampCombiner))
def test_timestamp_combiners(parquet, combiner):
    def build(rows):
        return (rows | pm.WindowInto(pm.FixedWindows(HOUR), timestamp_combiner=combiner)
                | pm.GroupBy("key").aggregate_field("value", pm.Sum, "total"))
    columns, elements = _both(build, parquet)
    assert columns == elements


def test_early_and_late_firings_go_through_the_kernel_as_partials(parquet):
    trigger = pm.AfterWatermark(early=pm.AfterProcessingTime(60), late=pm.AfterCount(1))

    def build(rows):
        return (rows | pm.WindowInto(pm.FixedWindows(HOUR), trigger=trigger,
                                     accumulation_mode=pm.AccumulationMode.ACCUMULATING,
                                     allowed_lateness=HOUR)
                | pm.GroupBy("key").aggregate_field("value", pm.Sum, "total"))
    columns, elements = _both(build, parquet)
    assert columns == elements


def test_a_counting_trigger_is_run_on_elements(parquet):
    def build(rows):
        return (rows | pm.WindowInto(pm.GlobalWindows(),
                                     trigger=pm.Repeatedly(pm.AfterCount(500)),
                                     accumulation_mode=pm.AccumulationMode.DISCARDING)
                | pm.GroupBy("key").aggregate_field("value", pm.Count, "n"))
    columns, elements = _both(build, parquet)
    assert columns == elements


def test_select_filter_and_with_columns(parquet):
    def build(rows):
        return (rows | pm.Filter((col("value") > 20) & ~col("key").startswith("k3"))
                | pm.WithColumns(double=col("value") * 2, name=col("key").upper())
                | pm.Select("name", "double", cents=col("price") * 100))
    columns, elements = _both(build, parquet)
    assert columns == elements and len(columns) > 1000


def test_output_schema_follows_the_expressions(parquet):
    with pm.Pipeline() as p:
        rows = p | pm.ReadFromParquet(parquet, timestamp_field="ts")
        out = rows | pm.Select("key", ratio=col("value") / 2)
        sums = rows | pm.GroupBy("key").aggregate_field("value", pm.Sum, "total") \
            .aggregate_field("value", pm.Mean, "mean")
    assert out.schema == pa.schema([("key", pa.string()), ("ratio", pa.float64())])
    assert sums.schema == pa.schema([("key", pa.string()), ("total", pa.int64()),
                                     ("mean", pa.float64())])


def test_a_missing_field_is_a_construction_error(parquet):
    p = pm.Pipeline()
    rows = p | pm.ReadFromParquet(parquet, timestamp_field="ts")
    with pytest.raises(pm.PipelineConstructionError, match="nope"):
        rows | pm.Select(x=col("nope") + 1)
    with pytest.raises(pm.PipelineConstructionError, match="nope"):
        rows | pm.GroupBy("nope").aggregate_field("value", pm.Sum, "total")


def test_rows_without_a_time_are_dead_letters(tmp_path):
    path = _write(tmp_path / "bad.parquet", bad_times={5, 1500})
    with pm.Pipeline() as p:
        good, bad = p | pm.ReadFromParquet(path, timestamp_field="ts").with_exception_handling()
        sums = (good | pm.WindowInto(pm.FixedWindows(HOUR))
                | pm.GroupBy("key").aggregate_field("value", pm.Count, "n"))
    letters = [w.value for w in p.result.collect(bad)]
    assert sorted(letter.error.split(": ", 1)[0] for letter in letters) == \
        sorted([f"{path}:6", f"{path}:1501"])
    assert all("timestamp field 'ts' is null" in letter.error for letter in letters)
    assert sum(w.value["n"] for w in p.result.collect(sums)) == 2998
    assert p.result.metrics()["ReadFromParquet"]["dead_lettered"] == 2


def test_rows_without_a_time_fail_the_run_without_a_dead_letter_output(tmp_path):
    path = _write(tmp_path / "bad.parquet", bad_times={42})
    with pytest.raises(pm.UserCodeError, match=r"bad.parquet:43: timestamp field 'ts' is null"):
        with pm.Pipeline() as p:
            p | pm.ReadFromParquet(path, timestamp_field="ts")


def test_declared_schema_sends_rows_that_do_not_fit_to_dead_letters(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"key": "a", "value": "3"}\n{"key": "b", "value": "x"}\n'
                    '{"key": "c"}\n{"key": "d", "value": 4.0}\n')
    with pm.Pipeline() as p:
        good, bad = p | pm.ReadFromJson(str(path), schema={"key": str, "value": int}) \
            .with_exception_handling()
        assert good.schema == pa.schema([("key", pa.string()), ("value", pa.int64())])
    assert [w.value for w in p.result.collect(good)] == [pm.Row(key="a", value=3),
                                                         pm.Row(key="d", value=4)]
    errors = sorted(w.value.error for w in p.result.collect(bad))
    assert "rows.jsonl:2: does not fit the schema: field 'value' = 'x' is not a int64" in errors[0]
    assert "rows.jsonl:3: does not fit the schema: has no field 'value'" in errors[1]


def test_csv_with_a_schema(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("key,value,ok\na,1,true\nb,,false\nc,zz,true\n")
    with pm.Pipeline() as p:
        good, bad = p | pm.ReadFromCsv(str(path), schema={"key": str, "value": "int64",
                                                          "ok": bool}).with_exception_handling()
    assert [w.value for w in p.result.collect(good)] == [
        pm.Row(key="a", value=1, ok=True), pm.Row(key="b", value=None, ok=False)]
    assert len(p.result.collect(bad)) == 1


def test_create_with_a_schema_checks_every_value():
    with pytest.raises(pm.PipelineConstructionError, match="value 1 field 'n' = 'x'"):
        pm.Create([{"n": 1}, {"n": "x"}], schema={"n": int})
    c = pm.Create([pm.Row(n=1), pm.Row(n=2)])
    assert c.schema() == pa.schema([("n", pa.int64())])


def _typed(**fields):
    """A row as pomset makes it for a known schema (fields read through properties)."""
    from pomset.sdk.schema import row_type
    return row_type(list(fields))(fields)


@pytest.mark.parametrize("make", [pm.Row, _typed])
def test_rows_behave_as_beam_rows_and_dicts(make):
    import pickle
    r = make(key="a", value=3, items=1)
    assert r.key == "a" and r["value"] == 3 and r == {"key": "a", "value": 3, "items": 1}
    assert len({r, pm.Row(key="a", value=3, items=1)}) == 1 and isinstance(r, pm.Row)
    assert repr(r) == "Row(key='a', value=3, items=1)" and callable(r.items)   # a dict's method
    with pytest.raises(AttributeError, match="fields are"):
        r.nope
    assert pickle.loads(pickle.dumps(r)) == r and getattr(r, "nope", 0) == 0
    del r["value"]
    with pytest.raises(AttributeError, match=r"no field 'value'; its fields are \['key', 'items'\]"):
        r.value
    with pytest.raises(AttributeError):
        r.key = "b"
    assert pm.Create([make(n=1), make(n=2)]).schema() == pa.schema([("n", pa.int64())])


def test_rows_of_a_schema_and_of_a_group_by_read_fields_as_properties(tmp_path):
    path = _write(tmp_path / "in.parquet", n=10)
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", "--collect=all"]))
    rows = p | pm.ReadFromParquet(str(path))
    sums = rows | pm.GroupBy("key").aggregate_field("value", pm.Sum(), "total")
    result = p.run()
    for r in [wv.value for wv in result.collect(rows)[:3] + result.collect(sums)[:3]]:
        assert all(isinstance(getattr(type(r), f), property) for f in r)


_FIELD = st.sampled_from("abc")
_CHANGES = st.lists(st.one_of(
    st.tuples(st.just("set"), _FIELD, st.integers()), st.tuples(st.just("del"), _FIELD),
    st.tuples(st.just("update"), st.dictionaries(_FIELD, st.integers())),
    st.tuples(st.just("ior"), st.dictionaries(_FIELD, st.integers())),
    st.tuples(st.just("setdefault"), _FIELD, st.integers()), st.tuples(st.just("pop"), _FIELD),
    st.tuples(st.just("popitem")), st.tuples(st.just("clear"))))


@given(st.dictionaries(_FIELD, st.integers()), _CHANGES, st.booleans())
def test_a_rows_kept_hash_follows_its_changes(fields, changes, typed):
    """A row keeps its hash once computed; every way of changing it forgets it, so it always
    hashes as a fresh row with the same items."""
    r = _typed(**fields) if typed else pm.Row(fields)
    for change in changes:
        hash(r)
        op, *args = change
        if op == "set":
            r[args[0]] = args[1]
        elif op == "del":
            if args[0] in r:
                del r[args[0]]
        elif op == "update":
            r.update(args[0])
        elif op == "ior":
            r |= args[0]
        elif op == "setdefault":
            r.setdefault(*args)
        elif op == "pop":
            r.pop(args[0], None)
        elif r:
            getattr(r, op)()
        assert hash(r) == hash(pm.Row(dict(r))) and isinstance(r, pm.Row)


def test_a_large_file_streams_in_bounded_bundles(tmp_path):
    path = _write(tmp_path / "big.parquet", n=50_000)
    from pomset.runtime import columnar
    source = pm.ReadFromParquet(path, timestamp_field="ts")
    bundles = list(columnar.read_columns(source, [path], None, 8192))
    assert all(isinstance(b, Columns) and len(b) <= 8192 for b in bundles)
    assert sum(len(b) for b in bundles) == 50_000


def _pairs_both(path, pick, pick_in_python, combine, trigger=None):
    """`pick` (a function that only picks fields, taken as columns) against
    `pick_in_python` (the same pairs computed in Python), both combined per key."""
    out = []
    for fn in (pick, pick_in_python):
        with pm.Pipeline() as p:
            windowed = (p | pm.ReadFromParquet(path, timestamp_field="ts")
                        | pm.WindowInto(pm.FixedWindows(HOUR), **(
                            {"trigger": trigger,
                             "accumulation_mode": pm.AccumulationMode.DISCARDING}
                            if trigger else {})))
            result = (windowed | pm.Map(fn) | pm.CombinePerKey(combine)).keep()
            if fn is pick:
                with _no_row_at_a_time():
                    p.run()
        out.append(_canon(p.result.collect(result)))
    return out


@pytest.mark.parametrize("combine", [sum, min, max, pm.Mean(), pm.Count()])
def test_a_map_that_picks_fields_then_a_builtin_combine_runs_as_columns(parquet, combine):
    columns, elements = _pairs_both(parquet, lambda r: (r["key"], r["value"]),
                                    lambda r: (r["key"], int(r["value"])), combine)
    assert columns == elements and len(columns) == 42


def test_picked_constants_and_attribute_access(parquet):
    columns, elements = _pairs_both(parquet, lambda r: (r.key, 1),
                                    lambda r: (str(r.key), 1), sum)
    assert columns == elements
    assert sum(int(c[0].split(", ")[1].rstrip(")")) for c in columns) == 3000


def test_picked_pairs_with_early_firings_go_to_the_kernel_as_partials(parquet):
    trigger = pm.AfterWatermark(early=pm.AfterProcessingTime(30))
    columns, elements = _pairs_both(parquet, lambda r: (r["key"], r["value"]),
                                    lambda r: (r["key"], int(r["value"])), sum, trigger)
    assert columns == elements


def test_a_null_value_fails_as_the_python_combine_would(tmp_path):
    path = _write(tmp_path / "nulls.parquet", nulls=True)
    with pytest.raises(pm.UserCodeError, match="NoneType"):
        with pm.Pipeline() as p:
            (p | pm.ReadFromParquet(path, timestamp_field="ts")
             | pm.Map(lambda r: (r["key"], r["value"])) | pm.CombinePerKey(sum))


def test_functions_that_compute_stay_python_functions():
    from pomset.runtime.columnar import picked_fields
    schema = pa.schema([("key", pa.string()), ("value", pa.int64())])
    assert picked_fields(pm.Map(lambda r: (r["key"], r["value"])), schema) is not None
    assert picked_fields(pm.Map(lambda r: r.value), schema) is not None
    for fn in (lambda r: (r["key"], r["value"] * 2), lambda r: r["key"].upper(),
               lambda r: (r["key"], r.get("value")), lambda r: r["value"] if r["value"] else 0,
               lambda r: (r["nope"], 1), lambda r: {"k": r["key"]}, lambda r: 3,
               lambda r: (r["key"], str(r["value"])), lambda r: (r["key"], f"{r['value']}"),
               lambda r: (r["key"], r["value"] if r["value"] is not None else 0),
               lambda r: (r["key"], 1 if r["value"] is None else 2), abs):
        assert picked_fields(pm.Map(fn), schema) is None, fn


@pytest.mark.parametrize("sink", ["parquet", "csv"])
def test_sinks_write_columns_as_they_write_elements(parquet, tmp_path, sink):
    write = {"parquet": pm.WriteToParquet, "csv": pm.WriteToCsv}[sink]
    paths = {}
    for form in ("columns", "elements"):
        with pm.Pipeline() as p:
            rows = _rows(p, parquet, form)
            sums = (rows | pm.WindowInto(pm.FixedWindows(HOUR))
                    | pm.GroupBy("key").aggregate_field("price", pm.Sum, "total"))
            pairs = rows | "Pairs" >> pm.Map(lambda r: (r["key"], r["value"]))
            sums | write(str(tmp_path / f"{form}-sums"))
            pairs | "WritePairs" >> write(str(tmp_path / f"{form}-pairs"))
        paths[form] = p
    for name in ("sums", "pairs"):
        a, b = (write(str(tmp_path / f"{f}-{name}")).path for f in ("columns", "elements"))
        if sink == "parquet":
            ta, tb = pq.read_table(a), pq.read_table(b)
        else:
            import pyarrow.csv as pacsv
            ta, tb = pacsv.read_csv(a), pacsv.read_csv(b)
        key = [(n, "ascending") for n in ta.column_names]
        assert ta.schema == tb.schema
        assert ta.sort_by(key).equals(tb.sort_by(key)), name


class _Doubled(pm.DoFn):
    def process_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        import pyarrow.compute as pc
        return pa.RecordBatch.from_pydict({"key": batch.column("key"),
                                           "double": pc.multiply(batch.column("value"), 2)})


class _Big(pm.DoFn):
    seen = []

    def process_batch(self, frame: pd.DataFrame) -> pd.DataFrame:
        _Big.seen.append(len(frame))
        return frame[frame["value"] > 50]


def test_a_batched_dofn_gets_the_columns_and_its_rows_keep_their_windows(parquet):
    def build(rows):
        return (rows | pm.WindowInto(pm.FixedWindows(HOUR)) | pm.ParDo(_Doubled())
                | pm.GroupBy("key").aggregate_field("double", pm.Sum, "total"))
    columns, elements = _both(build, parquet)
    assert columns == elements and len(columns) == 42


def test_a_filtering_batched_dofn_keeps_each_rows_time(parquet):
    _Big.seen = []

    def build(rows):
        return rows | pm.WindowInto(pm.FixedWindows(HOUR)) | pm.ParDo(_Big())
    columns, elements = _both(build, parquet)
    assert columns == elements and 0 < len(columns) < 3000
    _Big.seen = []
    with pm.Pipeline() as p:
        p | pm.ReadFromParquet(parquet, timestamp_field="ts") | pm.ParDo(_Big())
    # each row group's columns went as one batch, and the DataFrame's index said which row
    # each output came from: no regrouping
    assert _Big.seen == [1000, 1000, 1000]


def test_a_directory_a_glob_and_a_list_of_paths_are_all_sources(tmp_path):
    folder = tmp_path / "spark-output"
    folder.mkdir()
    first = _write(folder / "part-0.parquet", n=100)
    second = _write(folder / "part-1.parquet", n=50)
    (folder / "_SUCCESS").write_text("")
    (folder / ".part-0.parquet.crc").write_text("x")
    counts = []
    for pattern in (str(folder), str(folder / "*.parquet"), [first, second]):
        with pm.Pipeline() as p:
            rows = p | pm.ReadFromParquet(pattern, timestamp_field="ts")
        counts.append(len(p.result.collect(rows)))
    assert counts == [150, 150, 150]


def test_about_as_many_groups_as_rows(tmp_path):
    # every row its own key: bundles are kept as they come and aggregated together
    path = _write(tmp_path / "distinct.parquet", n=3000, keys=3000)

    def build(rows):
        return (rows | pm.WindowInto(pm.SlidingWindows(2 * HOUR, HOUR))
                | pm.GroupBy("key").aggregate_field("value", pm.Sum, "total")
                .aggregate_field("price", pm.Mean, "mean"))
    columns, elements = _both(build, path)
    assert columns == elements and len(columns) == 6000


class _SumOfSquares(pm.CombineFn):
    """A CombineFn with a vectorized add_inputs: the columnar path calls it per group."""
    groups = 0

    def create_accumulator(self):
        return 0

    def add_input(self, acc, value):
        if _SumOfSquares.columnar:
            raise AssertionError("add_input called one element at a time")
        return acc + value * value

    def add_inputs(self, acc, values):
        _SumOfSquares.groups += 1
        return acc + int((values.astype("int64") ** 2).sum())

    def merge_accumulators(self, accs):
        return sum(accs)


@pytest.mark.parametrize("trigger", [None, pm.AfterWatermark(early=pm.AfterProcessingTime(30))])
def test_a_combinefn_with_a_vectorized_add_inputs_is_called_per_group(parquet, trigger):
    out = []
    for columnar in (True, False):
        _SumOfSquares.columnar, _SumOfSquares.groups = columnar, 0
        with pm.Pipeline() as p:
            rows = p | pm.ReadFromParquet(parquet, timestamp_field="ts")
            if not columnar:
                rows = rows | pm.Map(lambda r: pm.Row(r))
            windowed = rows | pm.WindowInto(pm.FixedWindows(HOUR), **(
                {"trigger": trigger, "accumulation_mode": pm.AccumulationMode.DISCARDING}
                if trigger else {}))
            squares = (windowed | pm.Map(lambda r: (r["key"], r["value"]))
                       | pm.CombinePerKey(_SumOfSquares())).keep()
        out.append(_canon(p.result.collect(squares)))
        if columnar:
            assert 0 < _SumOfSquares.groups <= 3 * 42   # per group and bundle, not per row
    assert out[0] == out[1] and len(out[0]) == 42
