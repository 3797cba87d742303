"""pomset.testing, as a Beam user writes tests: TestPipeline, assert_that with equal_to,
is_empty and the rest, checked when the pipeline runs, on every runner; and the matchers
Beam lacks, for panes (`panes_equal`) and retractions (`nets_to`)."""
from __future__ import annotations

import subprocess
import sys
import unittest

import pytest

import pomset as pm
from conftest import runner_flags
from pomset.testing import (BeamAssertException, TestPipeline, assert_that, equal_to, is_empty,
                            is_not_empty, matches_all, nets_to, panes_equal)
from pomset.testing.test_utils import create_file, read_files_from_pattern
from pomset.testing.util import assert_that as util_assert_that

PT = pm.PaneTiming


def test_assertions_are_checked_on_every_runner(runner):
    with TestPipeline(argv=runner_flags(runner)) as p:
        words = p | pm.Create(["a", "b", "a", "c", "a"])
        counts = words | pm.Map(lambda w: (w, 1)) | pm.CombinePerKey(sum)
        assert_that(counts, equal_to([("a", 3), ("c", 1), ("b", 1)]))
        assert_that(words | pm.Filter(lambda w: w == "z"), is_empty(), label="no z")
        assert_that(words, is_not_empty(), label="some words")
        assert_that(counts, matches_all(lambda kv: kv[1] > 0), label="positive")


def test_a_failing_assertion_fails_the_run_naming_it_and_what_differed():
    p = TestPipeline()
    out = p | pm.Create([1, 2, 3]) | pm.Map(lambda x: x * 2)
    assert_that(out, equal_to([2, 4, 7]), label="doubled")
    with pytest.raises(BeamAssertException) as e:
        p.run()
    assert str(e.value) == ("doubled: Failed assert: equal_to: [2, 4, 7] == [2, 4, 6], "
                            "unexpected elements [6], missing elements [7]")
    p = TestPipeline()
    util_assert_that(p | pm.Create(["x"]), is_empty())
    with pytest.raises(BeamAssertException, match=r"assert_that\(Create.*is_empty: \['x'\]"):
        p.run()


def test_a_callable_with_plain_asserts_is_a_matcher():
    def three_evens(values):
        assert len(values) == 3, f"{len(values)} values"
        assert all(v % 2 == 0 for v in values)

    with TestPipeline() as p:
        assert_that(p | pm.Create([1, 2, 3]) | pm.Map(lambda x: x * 2), three_evens)
    p = TestPipeline()
    assert_that(p | pm.Create([2]), three_evens, label="evens")
    with pytest.raises(BeamAssertException, match="evens: 1 values"):
        p.run()
    with pytest.raises(TypeError, match="takes a matcher"):
        assert_that(p | "again" >> pm.Create([1]), [1])


def _scores(p):
    """Figure 13's shape: early panes per arrival, the on-time pane, then a late one."""
    stream = (pm.TestStream()
              .add_elements([pm.TimestampedValue(("k", 5), 10)])
              .advance_processing_time(1)
              .add_elements([pm.TimestampedValue(("k", 2), 20)])
              .advance_watermark_to(60)
              .add_elements([pm.TimestampedValue(("k", 3), 30)])
              .advance_watermark_to_infinity())
    return (p | stream
            | pm.WindowInto(pm.FixedWindows(60),
                            trigger=pm.AfterWatermark(early=pm.AfterCount(1),
                                                      late=pm.AfterCount(1)),
                            accumulation_mode=pm.AccumulationMode.RETRACTING,
                            allowed_lateness=600)
            | pm.CombinePerKey(sum) | pm.Values())


@pytest.mark.parametrize("flags", [["--workers=1"], ["--workers=3", "--worker_mode=threads"]])
def test_panes_and_what_retractions_net_to(flags):
    with TestPipeline(argv=flags) as p:
        sums = _scores(p)
        assert_that(sums, panes_equal([(5, "EARLY"), (5, PT.EARLY, -1), (7, "EARLY"),
                                       (7, "ON_TIME", -1), (7, "ON_TIME"),
                                       (7, "LATE", -1), (10, "LATE")]))
        assert_that(sums, nets_to([10]), label="nets")
        assert_that(sums, equal_to([5, 5, 7, 7, 7, 7, 10]), label="every pane")
    p = TestPipeline()
    assert_that(_scores(p), nets_to([7]), label="wrong net")
    with pytest.raises(BeamAssertException, match=r"wrong net: .*nets_to: \[7\] == \[10\]"):
        p.run()
    p = TestPipeline()
    assert_that(_scores(p), panes_equal([(5, "EARLY")]), label="too few")
    with pytest.raises(BeamAssertException,
                       match=r"too few: .*expected \[\(5, EARLY\)\], got \[\(5, EARLY\), "
                             r"\(5, EARLY, -1\)"):
        p.run()


def test_nets_to_refuses_a_retraction_of_nothing():
    from pomset.windowing import GLOBAL_WINDOW, NO_FIRING
    retraction = pm.WindowedValue.raw(3, 0, GLOBAL_WINDOW, NO_FIRING, -1)
    with pytest.raises(BeamAssertException, match="3 is retracted more often"):
        nets_to([])([retraction])


def test_test_pipeline_takes_its_flags_from_the_command_line(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["pytest", "--test-pipeline-options=--workers=2 "
                                                "--bundle_size=7"])
    p = TestPipeline()
    assert (p.options.workers, p.options.bundle_size, p.options.quiet) == (2, 7, True)
    monkeypatch.setattr(sys, "argv", ["pytest"])
    assert TestPipeline().options.workers >= 1
    assert pm.testing.TestStream is pm.TestStream


PLUGGED = """
from pomset.testing import TestPipeline, assert_that, equal_to
import pomset as pm

def test_flags_reach_the_pipeline():
    with TestPipeline() as p:
        assert_that(p | pm.Create([1, 2]) | pm.Map(lambda x: x * 10), equal_to([10, 20]))
    assert (p.options.runner, p.options.workers, p.options.bundle_size) == ("local", 1, 3)
"""


def test_pytest_takes_test_pipeline_options_through_pomsets_plugin(tmp_path):
    """pomset installs a pytest plugin (entry point `pytest11`), so a user's own suite takes
    `--test-pipeline-options` as Beam's does, without a conftest of its own."""
    (tmp_path / "test_plugged.py").write_text(PLUGGED)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "--test-pipeline-options=--runner=local --workers=1 --bundle_size=3",
                          str(tmp_path / "test_plugged.py")], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


def test_an_integration_test_takes_what_it_needs_from_its_options(monkeypatch, tmp_path):
    """As Beam's: without test pipeline options an integration test is skipped; with them it
    reads its flags and passes them on to the program under test."""
    monkeypatch.setattr(TestPipeline, "pytest_test_pipeline_options", None)
    with pytest.raises(unittest.SkipTest):
        TestPipeline(is_integration_test=True)
    monkeypatch.setattr(TestPipeline, "pytest_test_pipeline_options",
                        f"--temp_location={tmp_path} --workers=1")
    p = TestPipeline(is_integration_test=True)
    assert (p.get_option("temp_location"), p.get_option("project")) == (str(tmp_path), None)
    assert p.options.workers == 1
    assert p.get_full_options_as_args(input="in.txt", verbose=True, output=None) == [
        f"--temp_location={tmp_path}", "--workers=1", "--input=in.txt", "--verbose"]


def test_test_utils_write_an_input_and_read_what_a_run_wrote(tmp_path):
    first = create_file(str(tmp_path / "in" / "1.txt"), "b a\n")
    create_file(str(tmp_path / "in" / "2.txt"), "c\n")
    assert first == str(tmp_path / "in" / "1.txt")
    assert read_files_from_pattern(str(tmp_path / "in" / "*.txt")) == "b a\nc"
    with TestPipeline() as p:
        (p | pm.ReadFromText(str(tmp_path / "in" / "*.txt")) | pm.FlatMap(str.split)
         | pm.WriteToText(str(tmp_path / "out" / "words")))
    assert sorted(read_files_from_pattern(str(tmp_path / "out" / "words*")).split()) == \
        ["a", "b", "c"]
