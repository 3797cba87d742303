"""Windows kept as they are (issue 60): Beam's `util._IdentityWindowFn`, the window coders,
`contains_in_any_order` and `TestWindowedValue`'s pane, and pomset's own answer where its
Reshuffle and windows differ from Beam's on purpose (tests/beam_suite.py DIFFERENCES)."""
from __future__ import annotations

import pytest

import pomset as beam
from pomset.coders.coders import GlobalWindowCoder, IntervalWindowCoder
from pomset.options.pipeline_options import PipelineOptions
from pomset.testing.util import (TestWindowedValue, assert_that, contains_in_any_order,
                                 equal_to)
from pomset.transforms.util import _IdentityWindowFn
from pomset.window import GlobalWindow, IntervalWindow, Sessions, TimestampedValue
from pomset.windowing import PaneInfo, PaneTiming, Timestamp, WindowFn


def test_the_identity_windowfn_keeps_each_elements_window():
    with beam.Pipeline() as p:
        out = (p | beam.Create([1, 2, 5]) | beam.Map(lambda x: TimestampedValue(x, x))
               | "Fixed" >> beam.WindowInto(beam.window.FixedWindows(3))
               | "Keep" >> beam.WindowInto(_IdentityWindowFn(IntervalWindowCoder())))
        assert_that(out, equal_to([TestWindowedValue(1, 1, [IntervalWindow(0, 3)]),
                                   TestWindowedValue(2, 2, [IntervalWindow(0, 3)]),
                                   TestWindowedValue(5, 5, [IntervalWindow(3, 6)])]),
                    reify_windows=True)


def test_a_dofns_timestamped_output_stays_in_its_window():
    # DIFFERENCES IdentityWindowTest.test_no_window_context_fails: every pomset element is in
    # a window, so the identity WindowFn always has one to keep (Beam's context has none)
    with beam.Pipeline() as p:
        out = (p | beam.Create([1]) | "Stamp" >> beam.Map(lambda x: TimestampedValue(x, 5))
               | beam.WindowInto(_IdentityWindowFn(GlobalWindowCoder()))
               | "Again" >> beam.Map(lambda x: TimestampedValue(x, 6)))
        assert_that(out, equal_to([TestWindowedValue(1, 6, [GlobalWindow()])]),
                    reify_windows=True)


def test_the_identity_windowfn_needs_a_window_in_its_context():
    fn = _IdentityWindowFn(GlobalWindowCoder())
    assert fn.assign(WindowFn.AssignContext(1, "x", IntervalWindow(0, 2))) == [
        IntervalWindow(0, 2)]
    with pytest.raises(ValueError, match="window should not be None"):
        fn.assign(WindowFn.AssignContext(1, "x"))
    assert fn.get_window_coder() == GlobalWindowCoder()


def test_the_window_coders_round_trip():
    coder = IntervalWindowCoder()
    window = IntervalWindow(1.5, 4)
    assert coder.decode(coder.encode(window)) == window
    assert GlobalWindowCoder().decode(GlobalWindowCoder().encode(GlobalWindow())) == \
        GlobalWindow()


def test_contains_in_any_order_matches_a_grouping_in_any_order():
    with beam.Pipeline() as p:
        out = p | beam.Create([("a", 2), ("a", 1), ("b", 3)]) | beam.GroupByKey()
        assert_that(out, equal_to([("a", contains_in_any_order([1, 2])), ("b", [3])]))
    assert contains_in_any_order([1, 2, 2]) != [2, 1]


def test_reshuffle_keeps_microseconds_and_the_only_pane_is_last():
    # DIFFERENCES ReshuffleTest.test_reshuffle_windows_unchanged (and _window_fn_preserved):
    # Beam's runner encodes times in ms (3.999) and marks a grouping's one ON_TIME pane not
    # last; pomset keeps µs (the window's end less 1 µs) and that pane is the last
    only = PaneInfo(True, True, PaneTiming.ON_TIME, 0, 0)
    end = Timestamp.from_micros(4_000_000 - 1)
    with beam.Pipeline() as p:
        grouped = (p | beam.Create([(1, 1), (1, 2)])
                   | beam.Map(lambda kv: TimestampedValue(kv, kv[1]))
                   | beam.WindowInto(Sessions(2)) | beam.GroupByKey())
        expected = [TestWindowedValue((1, contains_in_any_order([1, 2])), end,
                                      [IntervalWindow(1, 4)], pane_info=only)]
        assert_that(grouped, equal_to(expected), label="grouped", reify_windows=True)
        assert_that(grouped | beam.Reshuffle(), equal_to(expected), label="reshuffled",
                    reify_windows=True)


class _Unpicklable:
    def __init__(self, value: int) -> None:
        self.value = value

    def __getstate__(self) -> None:
        raise NotImplementedError()


def test_reshuffle_at_an_old_compatibility_version_still_takes_unpicklable_elements():
    # DIFFERENCES ReshuffleTest.test_reshuffle_unpicklable_in_*_window: Beam before 2.64
    # pickled what it reshuffled (a RuntimeError here); pomset has one Reshuffle at every
    # update_compatibility_version
    options = PipelineOptions(update_compatibility_version="2.63.0")
    with beam.Pipeline(options=options) as p:
        out = (p | beam.Create([_Unpicklable(i) for i in range(3)]) | beam.Reshuffle()
               | beam.Map(lambda u: u.value * 10))
        assert_that(out, equal_to([0, 10, 20]))
