"""Beam's own unit-test modules run on pomset unmodified but for the import (issue 60): every
test method of each module in beam_src.SUITE, loaded as tests/beam_compat.py loads it, one
pytest test each, on the local runner, and on Spark those tests/beam_suite.py lists in
ON_SPARK, and on the runner modes ON_RUNNERS names for a test (as conftest.runner_flags). What is expected of each test (deselected as a Beam internal, a deliberate
difference, a gap) is in tests/beam_suite.py; every other test must pass."""
from __future__ import annotations

import unittest
from typing import Any, Dict, Iterator, List

import pytest

import beam_compat
import beam_src
import beam_suite
from conftest import runner_flags
from pomset.testing.test_pipeline import TestPipeline

LOAD = "<load>"
_loaded: Dict[str, Any] = {}


def load(name: str) -> Any:
    """Beam's module `name` (as in beam_src.SUITE), loaded once; the exception if it fails."""
    if name not in _loaded:
        try:
            _loaded[name] = beam_compat.load_suite_module(name)
        except Exception as e:   # the module does not load: its one test is its loading
            _loaded[name] = e
    return _loaded[name]


def _params() -> Iterator[Any]:
    beam_src.fetch()
    for name in beam_src.SUITE:
        module = load(name)
        tests: List[str] = ([LOAD] if isinstance(module, Exception) else
                            [f"{c}.{m}" for c, m in beam_compat.beam_test_methods(module)])
        deselected = beam_suite.DESELECTED.get(name, {})
        on_spark = beam_suite.ON_SPARK.get(name, ())
        on_runners = beam_suite.ON_RUNNERS.get(name, {})
        for test in tests:
            if test in deselected:
                continue
            runners = (("local", "spark") if test in on_spark else ("local",)
                       ) + on_runners.get(test, ())
            for runner in runners:
                reason = (beam_suite.DIFFERENCES.get(name, {}).get(test)
                          or beam_suite.GAPS.get(name, {}).get(test))
                marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                yield pytest.param(name, test, runner, marks=marks,
                                   id=f"{name}.py:{test}-{runner}")


@pytest.mark.parametrize("name,test,runner", list(_params()))
def test_beam_test(request, monkeypatch, name, test, runner):
    module = load(name)
    if test == LOAD:
        raise module
    if runner.startswith("spark"):
        request.getfixturevalue("spark_session")
    monkeypatch.setattr(TestPipeline, "pytest_test_pipeline_options",
                        " ".join(runner_flags(runner)))
    cls, method = test.split(".")
    try:
        beam_compat.run_beam_test(module, cls, method, request.getfixturevalue)
    except (unittest.SkipTest, pytest.skip.Exception) as e:   # it did not run: not a pass
        pytest.fail(f"Beam's test skips itself: {e}")


def test_what_the_status_names_is_in_the_modules():
    """Every test beam_suite.py names is one of its module's tests (a renamed or removed
    one must leave the lists), and no test is both deselected and expected to fail."""
    for name in beam_src.SUITE:
        module = load(name)
        tests = ({LOAD} if isinstance(module, Exception) else
                 {f"{c}.{m}" for c, m in beam_compat.beam_test_methods(module)})
        named = [set(table.get(name, {})) for table in
                 (beam_suite.DESELECTED, beam_suite.DIFFERENCES, beam_suite.GAPS)]
        assert set().union(*named) <= tests, (name, set().union(*named) - tests)
        assert not named[0] & (named[1] | named[2]), name
        assert set(beam_suite.ON_SPARK.get(name, ())) <= tests - named[0], name
        assert set(beam_suite.ON_RUNNERS.get(name, {})) <= tests - named[0], name
