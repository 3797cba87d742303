"""Python's cyclic collector runs rarely wherever pomset processes data (`runtime.collector`):
in Spark's Python workers, in their element-wise tasks and stateful steps, and in the user's
process (the local runner's, the Spark driver's) while a run lasts (and as before afterwards)."""
from __future__ import annotations

import gc

import pytest

import pomset as pm
from pomset.runtime.collector import RARE
from conftest import runner_flags


def thresholds_in_state() -> pm.DoFn:
    """A stateful DoFn that emits the collector's thresholds where it runs (made here so
    that Spark's executors get it by value)."""
    class ThresholdsInState(pm.DoFn):
        SEEN = pm.BagStateSpec("seen")

        def process(self, kv, seen=pm.DoFn.StateParam(SEEN)):
            seen.add(kv[1])
            yield "stateful", gc.get_threshold()
    return ThresholdsInState()


def _thresholds(runner: str) -> dict:
    p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + ["--quiet"]))
    pairs = p | pm.Create([("a", 1), ("b", 2)])
    plain = pairs | "Plain" >> pm.Map(lambda kv: ("element-wise", gc.get_threshold()))
    grouped = (pairs | pm.CombinePerKey(sum)
               | "After" >> pm.Map(lambda kv: ("after a grouping", gc.get_threshold())))
    stateful = pairs | pm.ParDo(thresholds_in_state())
    outs = [plain.keep(), grouped.keep(), stateful.keep()]
    result = p.run()
    return {wv.value[0]: tuple(wv.value[1]) for out in outs for wv in result.collect(out)}


@pytest.mark.parametrize("runner", ["local", "spark", "spark-streaming"])
def test_user_code_runs_with_the_rare_thresholds_and_the_users_are_put_back(runner, request):
    if runner.startswith("spark"):
        request.getfixturevalue("spark_session")
    before = gc.get_threshold()
    seen = _thresholds(runner)
    assert set(seen) == {"element-wise", "after a grouping", "stateful"}
    assert all(t == RARE for t in seen.values()), seen
    assert gc.get_threshold() == before


@pytest.mark.parametrize("runner", ["local", "spark", "spark-streaming"])
def test_the_users_process_collects_rarely_while_a_run_lasts(runner, request, monkeypatch):
    """The process that runs a pipeline (the local runner's, or Spark's driver, which unpacks
    every micro-batch's outputs and holds what the run collects) uses the rare thresholds
    while the run lasts: with the default ones the collector rescans the growing heap of
    collected elements over and over."""
    if runner.startswith("spark"):
        request.getfixturevalue("spark_session")
    from pomset.runtime import collector
    during = []
    real = collector.collect_rarely

    def noted() -> None:
        real()
        during.append(gc.get_threshold())
    monkeypatch.setattr(collector, "collect_rarely", noted)
    before = gc.get_threshold()
    p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + ["--quiet"]))
    out = (p | pm.Create([("a", 1), ("b", 2)]) | pm.CombinePerKey(sum)).keep()
    assert sorted(wv.value for wv in p.run().collect(out)) == [("a", 1), ("b", 2)]
    assert RARE in during
    assert gc.get_threshold() == before
