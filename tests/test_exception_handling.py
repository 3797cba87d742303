"""Beam's `with_exception_handling` on pomset: dead letters as Beam's (element, (type, repr,
traceback)) pairs, which errors they catch, partial outputs, the failure callback, calls
bounded in time (on a thread, in a subprocess), a subprocess surviving a crash, the failure
threshold, an ErrorHandler, stateful DoFns, and resource hints recorded (on Spark: Beam's
DeadLettersTest, tests/beam_suite.py ON_SPARK)."""
from __future__ import annotations

import os
import time

import pytest

import pomset as pm
from pomset.testing.util import assert_that, equal_to
from pomset.transforms.error_handling import ErrorHandler
from pomset.transforms.resources import ResourceHint


def new(runner: str = "local") -> pm.Pipeline:
    return pm.Pipeline(runner=runner)


def _fail_negative(x):
    if x < 0:
        raise ValueError(x)
    return x


def _crash_negative(x):
    if x < 0:
        os._exit(3)
    return x


def _slow_s(word):
    if word.startswith("s"):
        time.sleep(0.6)
    return word


def test_dead_letter_is_beams_pair():
    p = new()
    good, bad = p | pm.Create([1, -2]) | "Check" >> pm.Map(_fail_negative).with_exception_handling()
    result = p.run()
    assert [wv.value for wv in result.collect(good)] == [1]
    (letter,) = [wv.value for wv in result.collect(bad)]
    element, (exc_type, exc_repr, lines) = letter
    assert (element, exc_type, exc_repr) == (-2, ValueError, "ValueError(-2)")
    assert letter[0] == -2 and len(letter) == 2
    assert "_fail_negative" in "".join(lines)
    assert (letter.transform, letter.error) == ("Check", "ValueError: -2")


def test_only_exc_class_is_caught():
    p = new()
    _ = p | pm.Create([1, -2]) | pm.Map(_fail_negative).with_exception_handling(
        exc_class=(TypeError, KeyError))
    with pytest.raises(pm.UserCodeError, match="ValueError: -2"):
        p.run()


def test_partial_keeps_what_a_failing_element_output():
    def until_negative(xs):
        for x in xs:
            if x < 0:
                raise ValueError(x)
            yield x

    p = new()
    data = p | pm.Create([(1, -1, 2), (3, 4)])
    partial = data | "Partial" >> pm.FlatMap(until_negative).with_exception_handling(partial=True)
    whole = data | "Whole" >> pm.FlatMap(until_negative).with_exception_handling()
    assert_that(partial.good, equal_to([1, 3, 4]), label="CheckPartial")
    assert_that(whole.good, equal_to([3, 4]), label="CheckWhole")
    p.run()


def test_failure_callback_sees_each_failure_and_its_own_failure_is_not_the_runs():
    seen = []

    def callback(exc, element):
        seen.append((type(exc), element))
        raise RuntimeError("the callback fails too")

    p = new()
    _ = p | pm.Create([1, -2, -3]) | pm.Map(_fail_negative).with_exception_handling(
        on_failure_callback=callback)
    p.run()
    assert sorted(seen, key=lambda s: s[1]) == [(ValueError, -3), (ValueError, -2)]


def test_timeout_on_a_thread_fails_the_slow_elements():
    p = new()
    good, bad = p | pm.Create(["a", "slow", "b"]) | pm.Map(_slow_s).with_exception_handling(
        timeout=0.2)
    result = p.run()
    assert sorted(wv.value for wv in result.collect(good)) == ["a", "b"]
    assert [wv.value[0] for wv in result.collect(bad)] == ["slow"]
    assert [wv.value[1][1] for wv in result.collect(bad)] == ["TimeoutError()"]


def test_timed_calls_count_their_user_metrics():
    class Count(pm.DoFn):
        def __init__(self):
            self.seen = pm.Metrics.counter("test", "seen")

        def process(self, x):
            self.seen.inc()
            yield x

    p = new()
    _ = p | pm.Create([1, 2, 3]) | pm.ParDo(Count()).with_exception_handling(timeout=5)
    result = p.run()
    (counter,) = result.metrics().query(pm.MetricsFilter().with_name("seen"))["counters"]
    assert counter.result == 3


def test_subprocess_survives_a_crash_and_bounds_a_call():
    here = os.getpid()

    class Lifecycle(pm.DoFn):
        def setup(self):
            self.pid = os.getpid()

        def process(self, x):
            if x == "slow":
                time.sleep(5)
            _crash_negative(len(x) - 3)
            yield (x, os.getpid() != here and self.pid == os.getpid())

    p = new()
    good, bad = p | pm.Create(["abcd", "ab", "slow", "efgh"]) | pm.ParDo(
        Lifecycle()).with_exception_handling(use_subprocess=True, timeout=1)
    result = p.run()
    # each element ran in a subprocess (set up there, not in the worker)
    assert sorted(wv.value for wv in result.collect(good)) == [("abcd", True), ("efgh", True)]
    letters = sorted(((wv.value[0], wv.value[1][0].__name__) for wv in result.collect(bad)))
    assert letters == [("ab", "BrokenProcessPool"), ("slow", "TimeoutError")]


def test_partial_and_subprocess_are_exclusive():
    with pytest.raises(ValueError, match="mutually incompatible"):
        pm.Map(_fail_negative).with_exception_handling(partial=True, use_subprocess=True)


def test_threshold_fails_the_run_when_too_many_fail():
    p = new()
    _ = p | pm.Create([-1, 0, 1, 2]) | pm.Map(_fail_negative).with_exception_handling(
        threshold=0.5)
    p.run()
    p = new()
    _ = p | pm.Create([-1, -2, 1, 2]) | pm.Map(_fail_negative).with_exception_handling(
        threshold=0.25)
    with pytest.raises(pm.UserCodeError, match=r"2 / 4 = 0.5 > 0.25"):
        p.run()


def test_error_handler_takes_the_dead_letters_of_several_transforms():
    p = new()
    data = p | pm.Create([-1, 1, -2])
    with ErrorHandler(pm.Map(lambda letter: letter[0])) as handler:
        first = data | "First" >> pm.Map(_fail_negative).with_error_handler(handler)
        second = data | "Second" >> pm.Map(_fail_negative).with_exception_handling(
            error_handler=handler)
    assert_that(first, equal_to([1]), label="CheckFirst")
    assert_that(second, equal_to([1]), label="CheckSecond")
    assert_that(handler.output(), equal_to([-1, -2, -1, -2]), label="CheckErrors")
    p.run()


def test_stateful_dofn_needs_the_unsafe_userstate_flag():
    class Numbered(pm.DoFn):
        SEEN = pm.ReadModifyWriteStateSpec("seen", pm.coders.VarIntCoder())

        def process(self, kv, seen=pm.DoFn.StateParam(SEEN)):
            if kv[1] < 0:
                raise ValueError(kv)
            n = (seen.read() or 0) + 1
            seen.write(n)
            yield n

    keyed = new() | pm.Create([("k", 1)])
    with pytest.raises(pm.PipelineConstructionError, match="allow_unsafe_userstate_in_process"):
        keyed | pm.ParDo(Numbered()).with_exception_handling()
    with pytest.raises(pm.PipelineConstructionError, match="no timeout and no use_subprocess"):
        keyed | pm.ParDo(Numbered()).with_exception_handling(
            allow_unsafe_userstate_in_process=True, timeout=1)
    p = new()
    good, bad = p | pm.Create([("k", 1), ("k", -1), ("k", 2)]) | pm.ParDo(
        Numbered()).with_exception_handling(allow_unsafe_userstate_in_process=True)
    assert_that(good, equal_to([1, 2]), label="CheckGood")
    assert_that(bad | pm.Keys(), equal_to([("k", -1)]), label="CheckBad")
    p.run()


def test_resource_hints_are_recorded():
    class Tags(ResourceHint):
        urn = "test:tags"

    ResourceHint.register_resource_hint("test_tags", Tags)
    t = pm.Map(_fail_negative).with_resource_hints(min_ram="2KiB", accelerator="gpu")
    t = t.with_exception_handling().with_resource_hints(test_tags="x")
    assert t.get_resource_hints() == {"beam:resources:min_ram_bytes:v1": b"2048",
                                      "beam:resources:accelerator:v1": b"gpu",
                                      "test:tags": b"x"}
    with pytest.raises(ValueError, match="unknown resource hint 'nope'"):
        t.with_resource_hints(nope=1)

