"""Beam's WindowFn protocol over pomset's: `assign(WindowFn.AssignContext)` and
`merge(WindowFn.MergeContext)` on every WindowFn, and custom WindowFns written Beam's way
(`NonMergingWindowFn`, a WindowFn with its own `merge`) in pipelines on every runner; a
window that does not hold its element's time is still an error (Beam's window_test's
TestCustomWindows, which assigns [5, t) to time t, differs so: tests/beam_suite.py)."""
from __future__ import annotations

import pytest

import pomset as pm
from conftest import runner_flags

WindowFn = pm.WindowFn


class Thirds(pm.NonMergingWindowFn):
    """Beam-style: [0, 3), [3, 5), then windows of 10 from 5."""

    def assign(self, context):
        t = context.timestamp
        if t < 3:
            return [pm.IntervalWindow(0, 3)]
        if t < 5:
            return [pm.IntervalWindow(3, 5)]
        start = 5 + (int(t) - 5) // 10 * 10
        return [pm.IntervalWindow(start, start + 10)]


class Spans(WindowFn):
    """Beam-style merging: each element opens [t, t + 4); windows that overlap merge into
    their span, through the merge context."""

    def assign(self, context):
        return [pm.IntervalWindow(context.timestamp, context.timestamp + 4)]

    def merge(self, context):
        windows = sorted(context.windows, key=lambda w: w.start)
        run = [windows[0]]
        for w in windows[1:]:
            if w.start < max(r.end for r in run):
                run.append(w)
                continue
            if len(run) > 1:
                context.merge(run, pm.IntervalWindow(run[0].start, max(r.end for r in run)))
            run = [w]
        if len(run) > 1:
            context.merge(run, pm.IntervalWindow(run[0].start, max(r.end for r in run)))


def _grouped(runner, window_fn, times):
    p = pm.Pipeline(argv=runner_flags(runner) + ["--quiet"])
    out = (p | pm.Create([pm.TimestampedValue(("k", t), t) for t in times])
           | pm.WindowInto(window_fn) | pm.GroupByKey())
    return sorted((float(wv.window.start), float(wv.window.end), sorted(wv.value[1]))
                  for wv in p.run().collect(out))


@pytest.fixture
def by_value(spark_session):
    """Spark's workers cannot import this test module: ship its WindowFns by value."""
    import sys
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_a_beam_style_non_merging_window_fn_in_a_pipeline(runner, request):
    if runner == "spark":
        request.getfixturevalue("by_value")
    assert _grouped(runner, Thirds(), [0, 1, 2, 3, 4, 5, 6, 16]) == [
        (0, 3, [0, 1, 2]), (3, 5, [3, 4]), (5, 15, [5, 6]), (15, 25, [16])]


def test_a_beam_style_merging_window_fn_merges_through_its_context():
    assert Spans().is_merging() and not Thirds().is_merging()
    assert _grouped("local", Spans(), [1, 3, 10, 2, 20]) == [
        (1, 7, [1, 2, 3]), (10, 14, [10]), (20, 24, [20])]


def test_built_ins_answer_beams_protocol():
    context = WindowFn.AssignContext(7, element="v")
    assert pm.FixedWindows(5, offset=2).assign(context) == [pm.IntervalWindow(7, 12)]
    assert pm.GlobalWindows().assign(context) == [pm.GlobalWindow()]
    assert isinstance(pm.SlidingWindows(4, 2), pm.NonMergingWindowFn)
    merged = []

    class Record(WindowFn.MergeContext):
        def merge(self, to_be_merged, merge_result):
            merged.append((sorted(to_be_merged), merge_result))

    windows = [pm.IntervalWindow(0, 10), pm.IntervalWindow(5, 15), pm.IntervalWindow(30, 40)]
    pm.Sessions(10).merge(Record(windows))
    assert merged == [(windows[:2], pm.IntervalWindow(0, 15))]
    pm.FixedWindows(10).merge(Record(windows))
    assert len(merged) == 1


def test_pomset_style_window_fns_answer_beams_assign_too():
    class Tens(WindowFn):
        def assign_windows(self, timestamp, element):
            start = int(timestamp) // 10 * 10
            return [pm.IntervalWindow(start, start + 10)]

    assert Tens().assign(WindowFn.AssignContext(13)) == [pm.IntervalWindow(10, 20)]
    assert Thirds().assign_windows(pm.Timestamp(4), None) == [pm.IntervalWindow(3, 5)]


def test_a_window_that_does_not_hold_its_elements_time_is_an_error():
    class UpTo(pm.NonMergingWindowFn):   # Beam's TestCustomWindows: [5, t) for t >= 5
        def assign(self, context):
            return [pm.IntervalWindow(5, context.timestamp)] if context.timestamp > 5 else [
                pm.IntervalWindow(0, 5)]

    with pytest.raises(pm.PipelineConstructionError, match="which that window does not contain"):
        _grouped("local", UpTo(), [6])


def test_a_window_fn_without_assign_says_what_to_implement():
    class Nothing(WindowFn):
        pass

    with pytest.raises(NotImplementedError, match=r"assign_windows\(timestamp, element\) "
                                                  r"\(or Beam's assign\(context\)\)"):
        Nothing().assign(WindowFn.AssignContext(1))
