"""Batched DoFns (`process_batch`): the batch types, once per bundle, each output's timestamp,
window, pane and diff (1:1 maps keep their row's; other outputs are regrouped by homogeneous
metadata), context parameters, side inputs, failures and dead letters, validation. The cases
that depend on where the function runs also run on Spark batch, and one on Spark streaming."""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterator, List

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pomset as pm
from conftest import runner_flags
from pomset.windowing import GLOBAL_WINDOW, NO_FIRING, WindowedValue


def run(runner: str, build, *flags: str):
    """Run `build(p) -> {name: PCollection}` on `runner`: (result, {name: Counter of
    (value, ts, window, pane, diff)}), rows as sorted item tuples."""
    p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + ["--quiet", *flags]))
    pcolls = build(p)
    result = p.run()
    return result, {name: Counter(_norm(wv) for wv in result.collect(pc_))
                    for name, pc_ in pcolls.items()}


def _norm(wv: WindowedValue) -> tuple:
    v = wv.value
    value = tuple(sorted(v.items())) if isinstance(v, dict) else v
    return (value, wv.ts, wv.window, wv.pane, wv.diff)


@pytest.fixture
def by_value(spark_session):
    """Spark's workers cannot import this test module: ship its DoFns by value."""
    import sys
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.fixture(params=["local", "spark"])
def local_or_spark(request) -> str:
    if request.param == "spark":
        request.getfixturevalue("by_value")
    return request.param


class Double(pm.DoFn):
    def process_batch(self, batch: np.ndarray) -> Iterator[np.ndarray]:
        yield batch * 2


class Tenfold(pm.DoFn):
    """A 1:1 map of rows, in pandas."""

    def process_batch(self, batch: pd.DataFrame) -> pd.DataFrame:
        return batch.assign(v=batch["v"] * 10)


class Squares(pm.DoFn):
    """A Table in, RecordBatches out."""

    def process_batch(self, batch: pa.Table) -> Iterator[pa.RecordBatch]:
        for b in batch.to_batches():
            yield b.append_column("sq", pc.multiply(b.column("v"), b.column("v")))


class Big(pm.DoFn):
    """A filter: fewer rows out than in."""

    def process_batch(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        yield batch.filter(pc.greater(batch.column("v"), 2))


def _rows(p):
    """Six rows k/v, v = i at i seconds."""
    return p | "Rows" >> pm.Create([pm.TimestampedValue(pm.Row(k="ab"[i % 2], v=i), i)
                                    for i in range(6)])


S = 1_000_000


def test_each_batch_type_and_its_outputs(local_or_spark):
    """numpy arrays of numbers, pandas DataFrames, Arrow tables and record batches in; their
    rows as Rows or their items as Python scalars out, each at its input's timestamp."""
    pcolls = {}

    def build(p):
        nums = p | "Nums" >> pm.Create([pm.TimestampedValue(i, i) for i in range(6)])
        rows = _rows(p)
        pcolls.update(double=nums | pm.ParDo(Double()), tenfold=rows | pm.ParDo(Tenfold()),
                      squares=rows | pm.ParDo(Squares()))
        return pcolls
    result, out = run(local_or_spark, build)
    values = {name: [wv.value for wv in result.collect(pcoll)] for name, pcoll in pcolls.items()}
    assert {type(v) for v in values["double"]} == {int}
    assert all(isinstance(v, pm.Row) for v in values["tenfold"] + values["squares"])
    assert {type(x) for v in values["tenfold"] for x in v.values()} == {str, int}
    assert out["double"] == Counter((2 * i, i * S, GLOBAL_WINDOW, NO_FIRING, 1) for i in range(6))
    assert out["tenfold"] == Counter(((("k", "ab"[i % 2]), ("v", 10 * i)), i * S, GLOBAL_WINDOW,
                                      NO_FIRING, 1) for i in range(6))
    assert out["squares"] == Counter(((("k", "ab"[i % 2]), ("sq", i * i), ("v", i)), i * S,
                                      GLOBAL_WINDOW, NO_FIRING, 1) for i in range(6))


EVENTS = [("a", 1, 5), ("b", 2, 65), ("a", 3, 30), ("a", 4, 70), ("b", 5, 61), ("c", 6, 125),
          ("a", 7, 119), ("b", 8, 10)]


def _events(p):
    return p | pm.Create([pm.TimestampedValue(pm.Row(k=k, v=v), t) for k, v, t in EVENTS])


def _sums(pcoll):
    return (pcoll | pm.Map(lambda r: (r["k"], r["v"])) | pm.CombinePerKey(sum))


def test_one_to_one_map_keeps_each_elements_timestamp_and_window(local_or_spark):
    """Elements of several windows and timestamps in one batch: a 1:1 batched map gives each
    output its own row's window, so a windowed sum after it equals the per-element Map's."""
    def build(p):
        windowed = _events(p) | pm.WindowInto(pm.FixedWindows(60))
        return {"batched": _sums(windowed | pm.ParDo(Tenfold())),
                "per_element": _sums(windowed | pm.Map(lambda r: pm.Row(k=r.k, v=r.v * 10)))}
    _, out = run(local_or_spark, build)
    assert out["batched"] == out["per_element"]
    expected = defaultdict(int)
    for k, v, t in EVENTS:
        expected[(k, t // 60 * 60)] += 10 * v
    assert {(v[0], w.start_us // S): v[1] for (v, _, w, _, _) in out["batched"]} == expected


def test_filter_over_mixed_timestamps_keeps_each_elements_timestamp(local_or_spark):
    """A filter returns fewer rows than its batch of rows at different times: it is called
    again per homogeneous group, and each output keeps its own timestamp and window."""
    def build(p):
        return {"big": _rows(p) | pm.WindowInto(pm.FixedWindows(2)) | pm.ParDo(Big())}
    _, out = run(local_or_spark, build)
    assert out["big"] == Counter(
        ((("k", "ab"[i % 2]), ("v", i)), i * S, pm.IntervalWindow(i // 2 * 2, i // 2 * 2 + 2),
         NO_FIRING, 1) for i in range(3, 6))


@pytest.mark.parametrize("mode", ["local", "spark-streaming"])
def test_streaming_batched_filter_and_map(mode, request):
    """A TestStream through a batched filter and a batched 1:1 map, a micro-batch per step on
    Spark streaming: each output at its own element's timestamp and window."""
    if mode == "spark-streaming":
        request.getfixturevalue("by_value")
    stream = pm.TestStream()
    for step, watermark in ((EVENTS[:4], 0), (EVENTS[4:], 30)):
        stream = stream.add_elements([pm.TimestampedValue(pm.Row(k=k, v=v), t)
                                      for k, v, t in step])
        stream = stream.advance_watermark_to(watermark)
    stream = stream.advance_watermark_to_infinity()

    def build(p):
        return {"o": p | stream | pm.WindowInto(pm.FixedWindows(60))
                | pm.ParDo(Big()) | pm.ParDo(Tenfold())}
    _, out = run(mode, build)
    assert out["o"] == Counter(
        ((("k", k), ("v", 10 * v)), t * S, pm.IntervalWindow(t // 60 * 60, t // 60 * 60 + 60),
         NO_FIRING, 1) for k, v, t in EVENTS if v > 2)


# --- the local runner: how it is called ---------------------------------------------------

class Recorded(pm.DoFn):
    """Records each batch's size and each bundle's start (class-level: the runner may copy the
    DoFn); its `process` must not be called when `process_batch` is there."""

    sizes: List[int] = []
    bundles: List[str] = []

    def start_bundle(self) -> None:
        Recorded.bundles.append("start")

    def process(self, element):
        raise AssertionError("process_batch is preferred")

    def process_batch(self, batch: np.ndarray) -> np.ndarray:
        Recorded.sizes.append(len(batch))
        return batch + 1

    def finish_bundle(self):
        Recorded.bundles.append("finish")
        yield pm.TimestampedValue(-1, 0)


def test_called_once_per_bundle_not_per_element():
    Recorded.sizes.clear()
    Recorded.bundles.clear()
    _, out = run("local", lambda p: {"o": p | pm.Create(range(35)) | pm.ParDo(Recorded())},
                 "--bundle_size=10")
    assert Recorded.sizes == [10, 10, 10, 5]
    assert Recorded.bundles == ["start", "finish"] * 4
    assert Counter(v for v, *_ in out["o"].elements()) == Counter(
        list(range(1, 36)) + [-1] * 4)


def test_retractions_keep_their_diff():
    """Retractions and data in one batch: a 1:1 map keeps each row's diff; a filter is
    called per diff, its outputs keeping theirs."""
    values = [(1, 1), (2, -1), (5, 1), (6, -1), (7, 1)]

    def build(p):
        nums = p | pm.Create([WindowedValue(v, 3, diff=d) for v, d in values])
        return {"double": nums | pm.ParDo(Double()),
                "odd": nums | pm.ParDo(_OddOnly())}
    _, out = run("local", build)
    assert out["double"] == Counter((2 * v, 3 * S, GLOBAL_WINDOW, NO_FIRING, d) for v, d in values)
    assert out["odd"] == Counter((v, 3 * S, GLOBAL_WINDOW, NO_FIRING, d)
                                 for v, d in values if v % 2)


class _OddOnly(pm.DoFn):
    def process_batch(self, batch: np.ndarray) -> np.ndarray:
        return batch[batch % 2 == 1]


class _AtTimestamp(pm.DoFn):
    """Reads the timestamp: its batches are homogeneous."""

    def process_batch(self, batch: np.ndarray, timestamp=pm.DoFn.TimestampParam) -> np.ndarray:
        return batch * 100 + int(timestamp)


def test_a_context_parameter_gets_homogeneous_batches():
    _, out = run("local", lambda p: {"o": p | pm.Create(
        [pm.TimestampedValue(i, i % 3) for i in range(9)]) | pm.ParDo(_AtTimestamp())})
    assert out["o"] == Counter((i * 100 + i % 3, (i % 3) * S, GLOBAL_WINDOW, NO_FIRING, 1)
                               for i in range(9))


class _ShareOfTotal(pm.DoFn):
    def process_batch(self, batch: np.ndarray, total: int) -> np.ndarray:
        return batch / total


def test_side_inputs_per_window():
    """Each element is divided by its own window's total, a side input read per window."""
    def build(p):
        nums = (p | pm.Create([pm.TimestampedValue(v, t) for v, t in
                               [(1, 1), (3, 2), (2, 11), (6, 12), (12, 13)]])
                | pm.WindowInto(pm.FixedWindows(10)))
        totals = nums | pm.CombineGlobally(sum).without_defaults()
        return {"o": nums | pm.ParDo(_ShareOfTotal(), pm.AsSingleton(totals))}
    _, out = run("local", build)
    assert sorted((v, ts // S) for v, ts, *_ in out["o"]) == [
        (0.1, 11), (0.25, 1), (0.3, 12), (0.6, 13), (0.75, 2)]


class _NullsTyped(pm.DoFn):
    """Needs the schema's type for a column whose values in the batch are all null."""

    def process_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        assert batch.schema.field("v").type == pa.int64()
        return batch.set_column(1, "v", pc.fill_null(batch.column("v"), 0))


def test_the_input_schema_types_all_null_columns():
    def build(p):
        rows = p | pm.Create([pm.Row(k="a", v=None), pm.Row(k="b", v=None)])
        rows.schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
        return {"o": rows | pm.ParDo(_NullsTyped())}
    _, out = run("local", build)
    assert Counter(v for v, *_ in out["o"].elements()) == Counter(
        [(("k", "a"), ("v", 0)), (("k", "b"), ("v", 0))])


class _Fails(pm.DoFn):
    def process_batch(self, batch: np.ndarray) -> np.ndarray:
        if (batch < 0).any():
            raise ValueError("negative input")
        return batch * 2


def test_a_failure_names_the_transform_and_the_batch():
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet"]))
    _ = p | pm.Create([1, -2, 3]) | "Checked" >> pm.ParDo(_Fails())
    with pytest.raises(pm.UserCodeError, match=r"'Checked' failed on a batch of 3 elements: "
                                               r"\[1, -2, 3\]: ValueError: negative input"):
        p.run()


def test_dead_letters_one_per_element_of_a_failing_batch():
    def build(p):
        good, bad = (p | pm.Create([1, 2, 3, 4, -5, 6])
                     | "Checked" >> pm.ParDo(_Fails()).with_exception_handling())
        return {"good": good, "bad": bad}
    result, out = run("local", build, "--bundle_size=3")
    assert Counter(v for v, *_ in out["good"].elements()) == Counter([2, 4, 6])
    assert Counter(v for v, *_ in out["bad"].elements()) == Counter(
        pm.DeadLetter(v, "Checked", "ValueError: negative input", "") for v in (4, -5, 6))
    assert result.counter("dead_lettered") == 3


def test_a_process_batch_without_a_batch_type_is_rejected():
    class NoHint(pm.DoFn):
        def process_batch(self, batch):
            return batch

    class ListsOut(pm.DoFn):
        def process_batch(self, batch: np.ndarray) -> Iterator[list]:
            yield list(batch)

    with pytest.raises(TypeError, match=r"NoHint.process_batch .* 'batch' .*pyarrow.RecordBatch, "
                                        r"pyarrow.Table, pandas.DataFrame, numpy.ndarray"):
        pm.ParDo(NoHint())
    with pytest.raises(TypeError, match=r"ListsOut.process_batch must return or yield batches"):
        pm.ParDo(ListsOut())
