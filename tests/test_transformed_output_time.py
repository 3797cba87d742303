"""TimestampCombiner.OUTPUT_AT_EARLIEST_TRANSFORMED: a pane is output at the earliest of the
times its WindowFn's `get_transformed_output_time(window, timestamp)` gives its elements, on
every runner, for a grouping, a combine (which is then not lifted: the kernel moves each
element's time in its window) and merging windows."""
from __future__ import annotations

import pytest

import pomset as pm
from conftest import runner_flags
from pomset.runtime.lifting import liftable

EARLIEST_TRANSFORMED = pm.TimestampCombiner.OUTPUT_AT_EARLIEST_TRANSFORMED


class LaterFixed(pm.FixedWindows):
    """FixedWindows whose elements count 100 s after their own time (Beam's test WindowFn)."""

    def get_transformed_output_time(self, window, input_timestamp):
        return input_timestamp + 100


class BySpan(pm.Sessions):
    """Sessions whose elements count ten times their window's length after their own time."""

    def get_transformed_output_time(self, window, input_timestamp):
        return input_timestamp + 10 * (window.end - window.start)


def _panes(runner, window_fn, aggregate, times, combiner=EARLIEST_TRANSFORMED):
    p = pm.Pipeline(argv=runner_flags(runner) + ["--quiet"])
    out = (p | pm.Create([pm.TimestampedValue(("k", t), t) for t in times])
           | pm.WindowInto(window_fn, timestamp_combiner=combiner)
           | aggregate)
    panes = p.run().collect(out)
    return sorted((int(wv.window.start), int(wv.timestamp), sorted(wv.value[1])
                   if isinstance(wv.value[1], list) else wv.value[1]) for wv in panes)


@pytest.mark.parametrize("runner", ["local", "local-sequential"])
def test_a_grouping_and_a_combine_output_at_the_earliest_transformed_time(runner):
    times = [3, 1, 2, 10, 11, 25]
    assert _panes(runner, LaterFixed(10), pm.GroupByKey(), times) == [
        (0, 101, [1, 2, 3]), (10, 110, [10, 11]), (20, 125, [25])]
    assert _panes(runner, LaterFixed(10), pm.CombinePerKey(sum), times) == [
        (0, 101, 6), (10, 110, 21), (20, 125, 25)]


@pytest.fixture
def by_value(spark_session):
    """Spark's workers cannot import this test module: ship its WindowFns by value."""
    import sys
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_the_earliest_transformed_time_on_spark(by_value):
    assert _panes("spark", LaterFixed(10), pm.CombinePerKey(sum), [3, 1, 12]) == [
        (0, 101, 4), (10, 112, 12)]


def test_without_an_override_it_is_the_earliest_time():
    assert _panes("local", pm.FixedWindows(10), pm.CombinePerKey(sum), [3, 1, 12]) == [
        (0, 1, 4), (10, 12, 12)]


def test_under_merging_windows_an_element_moves_in_the_window_it_was_assigned():
    # 5 comes first, in [5, 15): 5 + 100; then 1, in [1, 11) (before it merges with [5, 15)
    # into [1, 15), in which it would count 1 + 140): 1 + 100, the earliest
    assert _panes("local-sequential", BySpan(10), pm.GroupByKey(), [5, 1]) == [
        (1, 101, [1, 5])]


def test_a_transformed_combine_is_not_lifted():
    strategy = pm.WindowingStrategy(window_fn=LaterFixed(10),
                                    timestamp_combiner=EARLIEST_TRANSFORMED)
    assert not liftable(pm.Sum(), strategy, False, None)
    assert liftable(pm.Sum(), strategy.with_(
        timestamp_combiner=pm.TimestampCombiner.OUTPUT_AT_EARLIEST), False, None)
