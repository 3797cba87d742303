"""Assertions on a pipeline's PCollections, checked when it runs (Beam's `assert_that` and
its matchers), on every runner, and matchers Beam has no use for: the panes a grouping fired
and what its retractions net to.

`assert_that(pcoll, matcher)` marks `pcoll` to be kept and registers the check with its
pipeline; once the run has finished, the matcher gets the PCollection's values (every element
as it was emitted, in the order the run produced them) or, for the pane matchers, its
elements with their windows, panes and diffs. A matcher that fails raises
`BeamAssertException` from `Pipeline.run`, naming the assertion."""
from __future__ import annotations

import math
import operator
from collections import Counter
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

from ..windowing import PaneTiming
from .reified import TestWindowedValue, as_test_windowed_value


class BeamAssertException(AssertionError):
    """An `assert_that` on a pipeline's output failed; the message says what differed."""


class Matcher:
    """A check of a PCollection's contents: `check(actual)` raises BeamAssertException.
    `panes` says whether it reads elements with their windows, panes and diffs (else
    values)."""

    panes = False

    def __init__(self, check: Callable[[List[Any]], None], describe: str) -> None:
        self.check = check
        self.describe = describe

    def __call__(self, actual: List[Any]) -> None:
        self.check(actual)

    def __repr__(self) -> str:
        return self.describe


class PaneMatcher(Matcher):
    """A matcher of the elements themselves (values with windows, panes and diffs)."""

    panes = True


def hashable(value: Any) -> Any:
    """`value` in a form that hashes, equal for equal values (for comparing multisets)."""
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, hashable(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(hashable(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(hashable(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return ("repr", repr(value))
    return value


def _compare(actual: Iterable[Any], expected: Iterable[Any], what: str) -> None:
    actual, expected = list(actual), list(expected)
    have = Counter(hashable(v) for v in actual)
    want = Counter(hashable(v) for v in expected)
    if have == want:
        return
    by_key = {hashable(v): v for v in actual + expected}
    unexpected = [by_key[k] for k in (have - want).elements()]
    missing = [by_key[k] for k in (want - have).elements()]
    raise BeamAssertException(
        f"Failed assert: {what}: {expected!r} == {actual!r}, unexpected elements "
        f"{unexpected!r}, missing elements {missing!r}")


def _compare_with(actual: Iterable[Any], expected: Iterable[Any], equals: Callable[[Any, Any], bool],
                  what: str) -> None:
    """As `_compare`, each expected value matching one actual value for which
    `equals(expected, actual)` holds (for values that hash apart yet count as equal)."""
    unexpected, missing = list(actual), []
    for want in expected:
        match = next((i for i, got in enumerate(unexpected) if equals(want, got)), None)
        if match is None:
            missing.append(want)
        else:
            del unexpected[match]
    if unexpected or missing:
        raise BeamAssertException(
            f"Failed assert: {what}: {list(expected)!r} == {list(actual)!r}, unexpected "
            f"elements {unexpected!r}, missing elements {missing!r}")


def equal_to(expected: Iterable[Any],
             equals_fn: Optional[Callable[[Any, Any], bool]] = None) -> Matcher:
    """The values are these, in any order (as multisets), as Beam's `equal_to`: every element
    counts, a retraction too (use `nets_to` for what retractions leave); values that hash
    apart but are `==` match. `equals_fn(expected, actual)`, where given, says which values
    match. With `reify_windows`, `TestWindowedValue`s are compared with each element's value,
    timestamp and windows (and pane, where the expected ones give panes)."""
    expected = list(expected)

    def check(actual: List[Any]) -> None:
        if any(isinstance(v, TestWindowedValue) for v in expected):
            panes = any(isinstance(v, TestWindowedValue) and v.pane_info is not None
                        for v in expected)
            actual = [as_test_windowed_value(v, panes) for v in actual]
        if equals_fn is not None:
            _compare_with(actual, expected, equals_fn, "equal_to")
            return
        wanted = [as_test_windowed_value(v) for v in expected]
        try:
            _compare(actual, wanted, "equal_to")
        except BeamAssertException:
            # values that hash apart may still be equal (contains_in_any_order's): pair by ==
            _compare_with(actual, wanted, operator.eq, "equal_to")
    return Matcher(check, f"equal_to({expected!r})")


def _approx(expected: Any, actual: Any, rel_tol: float, abs_tol: float) -> bool:
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(actual, numbers) and not (
            isinstance(expected, bool) or isinstance(actual, bool)):
        return math.isclose(expected, actual, rel_tol=rel_tol, abs_tol=abs_tol)
    if (isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple))
            and len(expected) == len(actual)):
        return all(_approx(e, a, rel_tol, abs_tol) for e, a in zip(expected, actual))
    return bool(expected == actual)


def equal_to_approx(expected: Iterable[Any], rel_tol: float = 1e-9,
                    abs_tol: float = 0.0) -> Matcher:
    """As `equal_to`, numbers (also inside tuples and lists) matching within `rel_tol` and
    `abs_tol` as `math.isclose` has them: for floating-point results whose last digits vary."""
    expected = list(expected)
    return Matcher(lambda actual: _compare_with(
        actual, expected, lambda e, a: _approx(e, a, rel_tol, abs_tol), "equal_to_approx"),
        f"equal_to_approx({expected!r}, rel_tol={rel_tol}, abs_tol={abs_tol})")


def is_empty() -> Matcher:
    """The PCollection has no elements."""
    def check(actual: List[Any]) -> None:
        if actual:
            raise BeamAssertException(f"Failed assert: is_empty: {actual!r} is not empty")
    return Matcher(check, "is_empty()")


def is_not_empty() -> Matcher:
    """The PCollection has at least one element."""
    def check(actual: List[Any]) -> None:
        if not actual:
            raise BeamAssertException("Failed assert: is_not_empty: pcol is empty")
    return Matcher(check, "is_not_empty()")


def matches_all(predicate: Callable[[Any], bool]) -> Matcher:
    """Every value satisfies `predicate`."""
    def check(actual: List[Any]) -> None:
        failing = [v for v in actual if not predicate(v)]
        if failing:
            raise BeamAssertException(f"Failed assert: matches_all: {failing!r} do not match")
    return Matcher(check, f"matches_all({getattr(predicate, '__name__', predicate)})")


def nets_to(expected: Iterable[Any]) -> PaneMatcher:
    """What the elements net to once every retraction cancels the value it retracts (the
    batch answer of a retracting pipeline) is `expected`, as a multiset. A retraction of a
    value never emitted before it fails the assertion."""
    expected = list(expected)

    def check(elements: List[Any]) -> None:
        running: Counter = Counter()
        values = {}
        for wv in elements:
            key = hashable(wv.value)
            values[key] = wv.value
            running[key] += wv.diff
            if running[key] < 0:
                raise BeamAssertException(f"Failed assert: nets_to: {wv.value!r} is retracted "
                                          f"more often than it was emitted")
        netted = [values[k] for k, n in running.items() for _ in range(n)]
        _compare(netted, expected, "nets_to")
    return PaneMatcher(check, f"nets_to({expected!r})")


def panes_equal(expected: Sequence[Tuple[Any, ...]]) -> PaneMatcher:
    """The panes, in the order they were emitted, are `expected`: each a (value, timing) or a
    (value, timing, diff) tuple, timing a `PaneTiming` or its name ("EARLY", "ON_TIME",
    "LATE"); a pair stands for a pane with diff +1. Panes of different windows may
    interleave on a parallel runner: assert on one window's panes (filter them first) where
    that matters."""
    want = [(v, _timing(t), d[0] if d else 1) for v, t, *d in expected]

    def check(elements: List[Any]) -> None:
        got = [(wv.value, wv.pane.timing, wv.diff) for wv in elements]
        if got != want:
            raise BeamAssertException(
                f"Failed assert: panes_equal: expected {_panes(want)}, got {_panes(got)}")
    return PaneMatcher(check, f"panes_equal({expected!r})")


def _timing(timing: Any) -> PaneTiming:
    return timing if isinstance(timing, PaneTiming) else PaneTiming[str(timing)]


def _panes(panes: List[Tuple[Any, PaneTiming, int]]) -> str:
    return "[" + ", ".join(f"({v!r}, {t.name}{'' if d == 1 else f', {d:+d}'})"
                           for v, t, d in panes) + "]"


def assert_that(pcoll: Any, matcher: Callable[[List[Any]], Any],
                label: Optional[str] = None, reify_windows: bool = False,
                use_global_window: bool = True) -> None:
    """Check `pcoll`'s contents with `matcher` when its pipeline has run: a `Matcher`
    (`equal_to`, `is_empty`, `nets_to`, `panes_equal`...) or any callable taking the list of
    values (with `reify_windows`, the elements themselves: `.value`, `.window`, `.pane`,
    `.diff`). Its failure fails `Pipeline.run` with a BeamAssertException naming `label`.
    `use_global_window` is Beam's, accepted either way: the matcher gets every window's
    elements at once, and a per-window one (`equal_to_per_window`) reads their windows."""
    if not callable(matcher):
        raise TypeError(f"assert_that takes a matcher (equal_to(...), is_empty(), ...) or a "
                        f"callable, got {matcher!r}")
    pipeline = pcoll.pipeline
    if pipeline.result is not None:
        raise RuntimeError("assert_that on a pipeline that has already run: call it inside "
                           "the `with` block, before the pipeline runs")
    name = label or f"assert_that({getattr(pcoll, 'label', None) or 'pcoll'})"
    pcoll.keep()
    pipeline.checks.append((pcoll, matcher, name,
                            reify_windows or getattr(matcher, "panes", False)))


def run_checks(checks: List[Tuple[Any, Any, str, bool]], result: Any) -> None:
    """Apply each registered assertion to what the run produced (`Pipeline.run` calls it)."""
    for pcoll, matcher, name, elements in checks:
        got = result.collect(pcoll)
        try:
            matcher(got if elements else [wv.value for wv in got])
        except BeamAssertException as e:
            raise BeamAssertException(f"{name}: {e}") from None
        except AssertionError as e:   # a plain assert in a user's matcher
            raise BeamAssertException(f"{name}: {e}") from e
