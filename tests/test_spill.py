"""A bounded grouping whose state outgrows `--memory_limit` spills to disk on the local runner:
its input goes to hash partitions of the key in files, each partition then runs through the
kernel on its own, and the answer is the one the run gives in memory (GroupByKey,
CombinePerKey, windows with early and late firings, every worker mode), the spilled bytes
counted in the step's metrics and the files gone after the run; one key whose values alone
outgrow the budget fails the run naming the step, the key and the budget."""
from __future__ import annotations

import math
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pomset as pm


def _run(flags, build):
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", *flags]))
    out = build(p).keep()
    result = p.run()
    return result.collect(out), result.metrics()


def _panes(elements):
    """The panes as a sorted list of comparable tuples (lists of values sorted)."""
    def value(v):
        k, x = v
        if isinstance(x, float) and math.isnan(x):
            return (k, "nan")   # the mean of a pane with nothing in it
        return (k, sorted(x) if isinstance(x, list) else x)
    return sorted(((value(wv.value), wv.ts, repr(wv.window), wv.pane.timing.name,
                   wv.pane.index, wv.diff) for wv in elements), key=repr)


def _both(tmp_path, build, limit="1MB", extra=()):
    """The run in memory and the run under `limit`, its spill directory checked empty."""
    want, want_metrics = _run(list(extra), build)
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir(exist_ok=True)
    got, metrics = _run([*extra, f"--memory_limit={limit}", f"--temp_location={spill_dir}"],
                        build)
    assert os.listdir(spill_dir) == []
    return _panes(want), _panes(got), want_metrics, metrics


def test_a_group_by_key_of_a_parquet_file_over_the_limit_spills(tmp_path):
    n = 300_000
    path = tmp_path / "events.parquet"
    pq.write_table(pa.table({"user": [f"u{i % 20_000}" for i in range(n)],
                             "amount": list(range(n))}), path)

    def build(p):
        return (p | pm.ReadFromParquet(str(path))
                | pm.Map(lambda r: (r.user, r.amount))
                | "group" >> pm.GroupByKey()
                | pm.MapTuple(lambda user, amounts: (user, (len(amounts), sum(amounts)))))

    want, got, want_metrics, metrics = _both(tmp_path, build)
    assert len(want) == 20_000
    assert got == want
    assert metrics["group"]["spilled_bytes"] > 0
    assert "spilled_bytes" not in want_metrics["group"]


def test_a_combine_per_key_over_the_limit_spills(tmp_path):
    n = 200_000

    def build(p):
        return (p | pm.Create([(i % 50_000, i) for i in range(n)])
                | "sum" >> pm.CombinePerKey(sum))

    want, got, _, metrics = _both(tmp_path, build)
    assert len(want) == 50_000
    assert got == want
    assert metrics["sum"]["spilled_bytes"] > 0


def test_windows_with_early_and_late_firings_spill_to_the_same_panes(tmp_path):
    n = 100_000

    def build(p):
        events = [pm.TimestampedValue((i % 3_000, i), (i * 7919) % 5_000) for i in range(n)]
        return (p | pm.Create(events)
                | pm.WindowInto(pm.FixedWindows(1_000),
                                trigger=pm.AfterWatermark(early=pm.AfterCount(3),
                                                          late=pm.AfterCount(1)),
                                accumulation_mode=pm.AccumulationMode.ACCUMULATING,
                                allowed_lateness=10_000)
                | "group" >> pm.GroupByKey())

    want, got, want_metrics, metrics = _both(tmp_path, build)
    assert any(p[3] == "EARLY" for p in want)
    assert got == want
    assert metrics["group"]["spilled_bytes"] > 0
    assert metrics["group"]["late"] == want_metrics["group"]["late"]


def test_a_partition_over_the_limit_is_split_again(tmp_path):
    def build(p):
        return (p | pm.Create([(f"user {i % 4_000}", i) for i in range(40_000)])
                | "group" >> pm.GroupByKey())

    want, got, _, metrics = _both(tmp_path, build, "64KB")
    assert got == want
    assert metrics["group"]["spill_splits"] > 0


@pytest.mark.parametrize("flags", [["--workers=2", "--worker_mode=threads"],
                                   ["--workers=2", "--worker_mode=processes"]],
                         ids=["threads", "processes"])
def test_partitioned_groupings_spill_too(tmp_path, flags):
    def build(p):
        return (p | pm.Create([(i % 10_000, i) for i in range(60_000)])
                | pm.Map(lambda kv: kv)
                | "group" >> pm.GroupByKey())

    want, got, _, metrics = _both(tmp_path, build, "256KB", flags)
    assert got == want
    assert metrics["group"]["spilled_bytes"] > 0


def test_one_key_over_the_limit_fails_naming_the_step_the_key_and_the_budget(tmp_path):
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    p = pm.Pipeline(options=pm.PipelineOptions(
        ["--quiet", "--memory_limit=256KB", f"--temp_location={spill_dir}"]))
    (p | pm.Create([("hot", "x" * 100 + str(i)) for i in range(20_000)])
     | "group hot" >> pm.GroupByKey())
    with pytest.raises(pm.MemoryLimitError) as e:
        p.run()
    message = str(e.value)
    assert "'group hot'" in message and "'hot'" in message and "262144" in message
    assert os.listdir(spill_dir) == []


def test_under_the_limit_nothing_spills(tmp_path):
    def build(p):
        return p | pm.Create([(i % 10, i) for i in range(1_000)]) | "group" >> pm.GroupByKey()

    want, got, _, metrics = _both(tmp_path, build, "1GB")
    assert got == want
    assert "spilled_bytes" not in metrics["group"]


def test_memory_limit_values():
    from pomset.sdk.options import parse_bytes
    assert parse_bytes("512MB") == 512 << 20
    assert parse_bytes("2GB") == 2 << 30
    assert parse_bytes("1.5kb") == 1536
    assert parse_bytes("1000") == 1000
    assert pm.PipelineOptions(["--memory_limit=64MB"]).memory_limit == 64 << 20
    for bad in ("lots", "-5MB", "0", "12XB"):
        with pytest.raises(pm.OptionsError, match="--memory_limit"):
            pm.PipelineOptions([f"--memory_limit={bad}"])


events = st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 300)), min_size=50,
                  max_size=250)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(events, st.integers(15, 40), st.sampled_from(["gbk", "sum", "mean"]),
       st.sampled_from(["global", "fixed"]))
def test_spilled_answers_are_the_in_memory_ones(tmp_path, data, keys, agg, windows):
    def build(p):
        pc = p | pm.Create([pm.TimestampedValue((i % keys, v), t)
                            for i, (v, t) in enumerate(data)])
        if windows == "fixed":
            pc = pc | pm.WindowInto(pm.FixedWindows(60), trigger=pm.AfterWatermark(
                early=pm.AfterCount(3), late=pm.AfterCount(1)),
                accumulation_mode=pm.AccumulationMode.DISCARDING, allowed_lateness=1_000)
        step = {"gbk": pm.GroupByKey(), "sum": pm.CombinePerKey(sum),
                "mean": pm.CombinePerKey(pm.Mean())}[agg]
        return pc | "g" >> step

    want, got, _, metrics = _both(tmp_path, build, "4KB")
    assert got == want
    assert metrics["g"]["spilled_bytes"] > 0


def test_a_temp_location_that_cannot_hold_the_spill_fails_naming_it(tmp_path):
    blocked = tmp_path / "a file"
    blocked.write_text("not a directory")
    p = pm.Pipeline(options=pm.PipelineOptions(
        ["--quiet", "--memory_limit=64KB", f"--temp_location={blocked}"]))
    p | pm.Create([(i, i) for i in range(5_000)]) | "group" >> pm.GroupByKey()
    with pytest.raises(OSError, match=r"'group'.*--temp_location=.*a file"):
        p.run()
