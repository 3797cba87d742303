"""`result.metrics()` gives the same counts per step on every runner mode for the same
pipeline: reads, writes, dead letters, late and dropped elements, and each step's flow (the
elements it received and emitted on each output), whether the step ran as Python or as
Spark's own columns, and whether or not anything reads its output."""
from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq

import pomset as pm
from conftest import runner_flags


def _elements(p, tmp_path):
    def parse(line: str):   # nested: Spark's workers get it by value
        if not line.startswith("{"):
            raise ValueError(f"not JSON: {line!r}")
        return json.loads(line)

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"k": k, "v": i}) + "\n" for i, k in enumerate("abcab"))
                   + "oops\n")
    read = p | "Read" >> pm.ReadFromText(str(src))
    parsed = read | "Parse" >> pm.Map(parse).with_exception_handling()
    sums = (parsed.good
            | "Key" >> pm.Map(lambda r: pm.TimestampedValue((r["k"], r["v"]), r["v"]))
            | "Window" >> pm.WindowInto(pm.FixedWindows(10))
            | "Sum" >> pm.CombinePerKey(sum))
    sums | "Write" >> pm.WriteToText(str(tmp_path / "out"))
    more = p | "More" >> pm.Create([("z", 1)]) | "Again" >> pm.WindowInto(pm.FixedWindows(10))
    (sums, more) | "Both" >> pm.Flatten()   # nothing reads it: it runs all the same


def _columns(p, tmp_path):
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    pq.write_table(pa.table({"key": list("abaabcab"), "value": [1, 2, 3, 4, 5, 6, 7, 8],
                             "ts": [start + dt.timedelta(minutes=11 * i) for i in range(8)]}),
                   str(tmp_path / "events.parquet"))
    rows = p | "Rows" >> pm.ReadFromParquet(str(tmp_path / "events.parquet"), timestamp_field="ts")
    kept = (rows | "Big" >> pm.Filter(pm.col("value") > 2)
            | "Double" >> pm.WithColumns(double=pm.col("value") * 2))
    (kept | "Slide" >> pm.WindowInto(pm.SlidingWindows(3600, 1800))
     | "Totals" >> pm.GroupBy("key").aggregate_field("double", pm.Sum, "total")
     | "Save" >> pm.WriteToParquet(str(tmp_path / "totals")))
    kept | "Names" >> pm.Map(lambda r: r.key) | "Seen" >> pm.Filter(lambda k: k != "c")


def _metrics(pipeline, mode, tmp_path):
    tmp_path.mkdir()
    p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(mode) + ["--quiet"]))
    pipeline(p, tmp_path)
    metrics = p.run().metrics()
    metrics.pop("micro-batches", None)   # a streaming query's own
    progress = metrics.pop("progress", None)   # a streaming run's own
    if mode == "spark-streaming":   # its files read as a stream, to the end: none waiting
        assert set(progress["sources"]) in ({"Read"}, {"Rows"}), progress
        assert all(v == {"kind": "files", "backlog": 0}
                   for v in progress["sources"].values()), progress
        assert progress["caught_up"] is True and progress["last_batch_records"] > 0, progress
    return metrics


def test_metrics_are_the_same_on_every_runner(runner, tmp_path):
    for pipeline in (_elements, _columns):
        local = _metrics(pipeline, "local-sequential", tmp_path / f"{pipeline.__name__}-reference")
        if runner != "local-sequential":
            got = _metrics(pipeline, runner, tmp_path / f"{pipeline.__name__}-{runner}")
            assert got == local, (pipeline.__name__, got, local)
    counts = _metrics(_elements, "local", tmp_path / "again")
    assert counts["Parse"] == {"received": 6, "emitted": 5, "emitted[bad]": 1,
                               "dead_lettered": 1}
    assert counts["Read"]["read"] == 6 and counts["Write"] == {"received": 3, "written": 3}
    assert counts["Sum"]["late"] == 0 and counts["Both"] == {"received": 4, "emitted": 4}
    counts = local   # the schema'd pipeline's, on the local runner
    assert counts["Big"] == {"received": 8, "emitted": 6}
    # six rows, each in two sliding windows; two keys and a lone "c" over the windows
    assert counts["Slide"] == {"received": 6, "emitted": 12}
    assert counts["Seen"] == {"received": 6, "emitted": 5}
