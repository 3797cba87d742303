"""Numbers since the epoch are read in the unit a source declares (`timestamp_unit=`: s, ms,
us, ns), on every path (records, Parquet columns, Spark, Kafka fields, WithTimestamps); a
source whose numbers look like another unit than the declared one says so once; and
WithTimestamps takes what `timestamp_field=` takes, ISO-8601 strings included."""
from __future__ import annotations

import json
import warnings

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pomset as pm
from conftest import runner_flags
from pomset.sdk.event_time import event_time_micros, likely_unit

BASE_S = 1_699_999_980          # 2023-11-14T22:13:00Z, a whole minute
EVENTS = [("a", 1, BASE_S + 5), ("b", 2, BASE_S + 30), ("a", 3, BASE_S + 65)]
WANT = {("a", BASE_S, 1), ("b", BASE_S, 2), ("a", BASE_S + 60, 3)}
PER = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def window_sums(source, runner="local"):
    p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + ["--quiet"]))
    sums = (p | source | pm.Map(lambda r: (r["k"], r["v"])) | pm.WindowInto(pm.FixedWindows(60))
            | pm.CombinePerKey(sum)
            | pm.Map(lambda kv, w=pm.DoFn.WindowParam: (kv[0], int(w.start), kv[1])))
    return {wv.value for wv in p.run().collect(sums)}


def _json(tmp_path, unit):
    path = tmp_path / f"events-{unit}.jsonl"
    path.write_text("".join(json.dumps({"k": k, "v": v, "ts": t * PER[unit]}) + "\n"
                            for k, v, t in EVENTS))
    return path


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_json_and_csv_numbers_in_each_unit(tmp_path, unit):
    path = _json(tmp_path, unit)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pm.TimeUnitWarning)   # the right unit: no warning
        assert window_sums(pm.ReadFromJson(str(path), timestamp_field="ts",
                                           timestamp_unit=unit)) == WANT
    csv = tmp_path / f"events-{unit}.csv"
    csv.write_text("k,v,ts\n" + "".join(f"{k},{v},{t * PER[unit]}\n" for k, v, t in EVENTS))
    assert window_sums(pm.ReadFromCsv(str(csv), timestamp_field="ts",
                                      timestamp_unit=unit)) == WANT


def test_milliseconds_read_as_seconds_say_so_once(tmp_path):
    path = _json(tmp_path, "ms")
    with pytest.warns(pm.TimeUnitWarning) as caught:
        window_sums(pm.ReadFromJson(str(path), timestamp_field="ts"))
    [warning] = [w for w in caught if issubclass(w.category, pm.TimeUnitWarning)]
    assert str(warning.message) == (
        "ReadFromJson: timestamp field 'ts' holds 1699999985000, which read as seconds is the "
        "year 55,841; if it counts milliseconds, pass timestamp_unit='ms'")


@pytest.mark.parametrize("runner", ["local-sequential", "spark"])
@pytest.mark.parametrize("unit, kind", [("ms", pa.int64()), ("us", pa.int64()),
                                        ("ns", pa.int64()), ("ms", pa.float64())])
def test_parquet_number_columns_in_each_unit(tmp_path, runner, unit, kind, request):
    if runner == "spark":
        request.getfixturevalue("spark_session")
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"k": [k for k, _, _ in EVENTS], "v": [v for _, v, _ in EVENTS],
                             "ts": pa.array([t * PER[unit] for _, _, t in EVENTS], kind)}),
                   path)
    assert window_sums(pm.ReadFromParquet(str(path), timestamp_field="ts",
                                          timestamp_unit=unit), runner) == WANT


def test_parquet_columns_that_look_like_milliseconds_say_so(tmp_path):
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"k": ["a"], "v": [1], "ts": [BASE_S * 1000]}), path)
    with pytest.warns(pm.TimeUnitWarning, match="timestamp_unit='ms'"):
        window_sums(pm.ReadFromParquet(str(path), timestamp_field="ts"))


def test_kafka_payload_fields_in_a_unit():
    source = pm.ReadFromKafka("localhost:9092", "t", timestamp="ts", timestamp_unit="ms")
    assert source._event_time(None, {"ts": 1_700_000_000_123}, 0) == 1_700_000_000_123_000
    seconds = pm.ReadFromKafka("localhost:9092", "t", timestamp="ts")
    with pytest.warns(pm.TimeUnitWarning, match="timestamp_unit='ms'"):
        seconds._event_time(None, {"ts": 1_700_000_000_123}, 0)


def test_with_timestamps_takes_iso_strings_and_units():
    p = pm.Pipeline(argv=["--quiet"])
    rows = p | pm.Create([{"at": "2023-11-14T22:13:05Z"}, {"at": "2023-11-14 22:13:30"}])
    iso = rows | "iso" >> pm.WithTimestamps(lambda r: r["at"]) \
        | "t1" >> pm.Map(lambda r, ts=pm.DoFn.TimestampParam: ts.micros)
    ms = (p | "ms" >> pm.Create([BASE_S * 1000 + 250])
          | pm.WithTimestamps(lambda x: x, timestamp_unit="ms")
          | "t2" >> pm.Map(lambda r, ts=pm.DoFn.TimestampParam: ts.micros))
    result = p.run()
    assert [wv.value for wv in result.collect(iso)] == [(BASE_S + 5) * 10**6,
                                                        (BASE_S + 30) * 10**6]
    assert [wv.value for wv in result.collect(ms)] == [BASE_S * 10**6 + 250_000]


def test_units_are_checked_and_conversions_are_exact(tmp_path):
    for make in (lambda: pm.ReadFromJson(str(_json(tmp_path, "s")), timestamp_unit="min"),
                 lambda: pm.WithTimestamps(lambda x: x, timestamp_unit="hours"),
                 lambda: pm.ReadFromKafka("h:1", "t", timestamp_unit="d")):
        with pytest.raises(ValueError, match="timestamp_unit is one of s, ms, us, ns"):
            make()
    assert event_time_micros(1_700_000_000_123_456_789, "ns") == 1_700_000_000_123_456
    assert event_time_micros("1700000000123", "ms") == 1_700_000_000_123_000
    assert event_time_micros(1.5, "ms") == 1_500
    assert [likely_unit(BASE_S * PER[u]) for u in ("s", "ms", "us", "ns")] == \
        ["s", "ms", "us", "ns"]
    assert likely_unit(30) is None
