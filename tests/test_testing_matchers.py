"""Beam's testing matchers on pomset (issue 60): `equal_to_per_window` with the windows
pomset's own end of time gives (the DIFFERENCES of tests/beam_suite.py), `equal_to_approx`,
`equal_to(equals_fn=)`, `TestWindowedValue` and `row_namedtuple_equals_fn`."""
from __future__ import annotations

import pytest

import pomset as pm
from pomset.testing.util import (BeamAssertException, TestWindowedValue, assert_that, equal_to,
                                 equal_to_approx, equal_to_per_window,
                                 row_namedtuple_equals_fn)
from pomset.window import FixedWindows, GlobalWindow, IntervalWindow
from pomset.windowing.time import MIN_TIMESTAMP


def _per_window(values, expected):
    with pm.Pipeline() as p:
        assert_that(p | pm.Create(values) | pm.WindowInto(FixedWindows(20))
                    | pm.Map(lambda x: ("k", x)) | pm.GroupByKey()
                    | pm.MapTuple(lambda k, vs: (k, sorted(vs))),
                    equal_to_per_window(expected), reify_windows=True)


#: the FixedWindows(20) window of pomset's MIN_TIMESTAMP (-2**62 µs; Beam's is -2**63 µs, so
#: Beam's tests, which compute the window from Beam's constant, expect another window)
START = (MIN_TIMESTAMP.micros // 1_000_000) // 20 * 20
MIN_WINDOW = IntervalWindow(START, START + 20)


def test_equal_to_per_window_on_pomset():
    """What Beam's test_equal_to_per_window_* check, with the window of pomset's
    MIN_TIMESTAMP: a pass, and each way of failing, with Beam's wording."""
    _per_window([1], {MIN_WINDOW: [("k", [1])]})
    with pytest.raises(BeamAssertException, match="not found in any expected"):
        _per_window([1], {IntervalWindow(50, 100): [("k", [1])]})
    with pytest.raises(BeamAssertException, match="unmatched elements"):
        _per_window([1], {MIN_WINDOW: [("k", [1]), ("k", [2])]})
    with pytest.raises(BeamAssertException, match="not found in window"):
        _per_window([1, 2], {MIN_WINDOW: [("k", [1])]})


def test_equal_to_approx_within_and_outside_tolerance():
    with pm.Pipeline() as p:
        assert_that(p | pm.Create([("a", 1.0), 2.0]),
                    equal_to_approx([2.0000000001, ("a", 1.0)]))
    with pytest.raises(BeamAssertException, match="missing elements \\[1.1\\]"):
        with pm.Pipeline() as p:
            assert_that(p | pm.Create([1.0]), equal_to_approx([1.1]))


def test_equal_to_with_equals_fn_and_reified_values():
    with pm.Pipeline() as p:
        numbers = p | pm.Create(["1", "2"])
        assert_that(numbers, equal_to([2, 1], equals_fn=lambda e, a: e == int(a)))
        assert_that(numbers, equal_to([TestWindowedValue(v, MIN_TIMESTAMP, [GlobalWindow()])
                                       for v in ("2", "1")]), reify_windows=True,
                    label="reified")


def test_assert_that_after_the_run_is_an_error():
    with pm.Pipeline() as p:
        out = p | pm.Create([1])
    with pytest.raises(RuntimeError, match="already run"):
        assert_that(out, equal_to([1]))


def test_rows_equal_named_tuples_with_the_same_fields():
    from typing import NamedTuple

    class Point(NamedTuple):
        x: int
        y: int
    assert row_namedtuple_equals_fn(pm.Row(x=1, y=2), Point(1, 2))
    assert not row_namedtuple_equals_fn(pm.Row(x=1, y=3), Point(1, 2))
    assert not row_namedtuple_equals_fn(pm.Row(y=2, x=1), Point(1, 2))


def test_element_and_side_input_params_as_beam_marks_them():
    """`element=DoFn.ElementParam` is the element; parameters marked `DoFn.SideInputParam`
    take ParDo's side inputs in order, wherever the context parameters are."""
    class Record(pm.DoFn):
        def process(self, elm=pm.DoFn.ElementParam, ts=pm.DoFn.TimestampParam,
                    side=pm.DoFn.SideInputParam):
            yield elm, int(ts), sorted(side)

    with pm.Pipeline() as p:
        side = p | "side" >> pm.Create([2, 1])
        got = (p | pm.Create([pm.TimestampedValue("e", 10)])
               | pm.ParDo(Record(), pm.pvalue.AsList(side)))
        assert_that(got, equal_to([("e", 10, [1, 2])]))
