"""Beam's `equal_to_per_window`: an assertion on a PCollection's contents window by window."""
from __future__ import annotations

from typing import Any, Dict, Iterable, List

from .asserts import BeamAssertException, PaneMatcher, hashable


def equal_to_per_window(expected_window_to_elements: Dict[Any, Iterable[Any]]) -> PaneMatcher:
    """Each window's values are those `expected_window_to_elements` gives for it, in any
    order: a window it does not name, an element that is not expected in its window, or an
    expected element that never came fails the assertion."""
    expected = {w: list(vs) for w, vs in expected_window_to_elements.items()}

    def check(elements: List[Any]) -> None:
        actual: Dict[Any, List[Any]] = {}
        for wv in elements:
            for window in wv.windows:
                actual.setdefault(window, []).append(wv.value)
        for window, values in actual.items():
            if window not in expected:
                raise BeamAssertException(
                    f"Failed assert: equal_to_per_window: window {window!r} not found in any "
                    f"expected windows {list(expected)!r}")
            remaining = [hashable(v) for v in expected[window]]
            for value in values:
                if hashable(value) not in remaining:
                    raise BeamAssertException(
                        f"Failed assert: equal_to_per_window: {value!r} not found in window "
                        f"{window!r}: {expected[window]!r}")
                remaining.remove(hashable(value))
        for window, values in expected.items():
            unmatched = [v for v in values if hashable(v) not in
                         [hashable(a) for a in actual.get(window, [])]]
            if unmatched:
                raise BeamAssertException(
                    f"Failed assert: equal_to_per_window: unmatched elements {unmatched!r} "
                    f"in window {window!r}: got {actual.get(window, [])!r}")
    return PaneMatcher(check, f"equal_to_per_window({expected!r})")
