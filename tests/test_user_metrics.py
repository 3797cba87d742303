"""Beam's user metrics (`Metrics.counter/distribution/gauge` inside DoFns) are reported by
`result.metrics().query()` with the same values on every runner mode, whichever worker ran
the DoFn (threads, processes, Spark tasks and micro-batches), as Beam's `MetricResults`."""
from __future__ import annotations

import pickle

import pytest
from hypothesis import given, strategies as st

import pomset as pm
from pomset.metrics.metric import Metrics, MetricsFilter
from pomset.sdk.user_metrics import MetricsContainer, enter, merge_snapshots
from conftest import runner_flags


def parse_fn() -> type:
    """A DoFn counting parse errors, basket sizes and the last basket (made in a function:
    Spark's workers get it by value)."""
    class Parse(pm.DoFn):
        def __init__(self):
            super().__init__()
            self.errors = Metrics.counter(self.__class__, "parse_errors")
            self.sizes = Metrics.distribution("shop", "basket_size")
            self.last = Metrics.gauge("shop", "last_basket")

        def process(self, line):
            try:
                user, n = line.split(",")
                n = int(n)
            except ValueError:
                self.errors.inc()
                return
            self.sizes.update(n)
            self.last.set(n)
            Metrics.counter("shop", "baskets").inc()
            yield user, n
    return Parse


Parse = parse_fn()


LINES = ["ann,3", "bob,1", "oops", "ann,5", "cat,2", "nope,x", "bob,4"] * 30


def _pipeline(runner):
    p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + ["--bundle_size=16"]))
    totals = (p | pm.Create(LINES) | "Parse" >> pm.ParDo(parse_fn()())
              | "Sum" >> pm.CombinePerKey(sum))
    return p, totals


def test_user_metrics_are_the_same_on_every_runner(runner):
    p, _ = _pipeline(runner)
    metrics = p.run().metrics()
    got = metrics.query()
    counters = {(r.key.step, r.key.metric.namespace, r.key.metric.name): r.committed
                for r in got["counters"]}
    assert counters == {("Parse", f"{__name__}.parse_fn.<locals>.Parse", "parse_errors"): 60,
                        ("Parse", "shop", "baskets"): 150}
    (dist,) = got["distributions"]
    assert dist.key.step == "Parse" and dist.key.metric == ("shop", "basket_size")
    assert (dist.committed.sum, dist.committed.count, dist.committed.min,
            dist.committed.max) == (15 * 30, 150, 1, 5)
    assert dist.committed.mean == 3.0 and dist.attempted == dist.committed
    (gauge,) = got["gauges"]
    assert gauge.committed.value in {3, 1, 5, 2, 4} and gauge.committed.timestamp > 0
    assert metrics["Parse"]["received"] == len(LINES)   # the runner's own counts are there too


def test_query_filters_by_name_namespace_and_step():
    p, _ = _pipeline("local")
    metrics = p.run().metrics()
    assert [r.committed for r in metrics.query(MetricsFilter().with_name("baskets"))[
        "counters"]] == [150]
    assert [r.key.metric.name for r in metrics.query(
        MetricsFilter().with_namespace(f"{__name__}.parse_fn.<locals>.Parse"))["counters"]
    ] == ["parse_errors"]
    assert metrics.query(MetricsFilter().with_step("Sum")) == {
        "counters": [], "distributions": [], "gauges": []}
    assert len(metrics.query(MetricsFilter().with_step("Parse"))["counters"]) == 2


def test_metrics_in_a_composite_transform_are_found_by_its_name_as_in_beam():
    class Clean(pm.PTransform):
        def expand(self, pcoll):
            return pcoll | "Parse" >> pm.ParDo(Parse())

    p = pm.Pipeline(options=pm.PipelineOptions(["--runner=local"]))
    p | pm.Create(["a,1", "b"]) | "Clean" >> Clean()
    metrics = p.run().metrics()
    (errors,) = metrics.query(MetricsFilter().with_step("Clean").with_name("parse_errors"))[
        "counters"]
    assert errors.key.step == "Clean/Parse" and errors.committed == 1


def test_an_update_outside_a_step_changes_nothing_and_bad_arguments_say_what():
    Metrics.counter("x", "y").inc()   # at construction: no step runs it, as in Beam
    with pytest.raises(TypeError, match="namespace must be a non-empty str or a class"):
        Metrics.counter(3, "y")
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        Metrics.counter("x", "")
    with pytest.raises(TypeError, match="Distribution 'd' takes numbers"):
        Metrics.distribution("x", "d").update("3")


def test_metrics_of_a_run_resumed_from_a_checkpoint_count_what_ran_before(tmp_path):
    container = MetricsContainer()
    prev = enter(container)
    try:
        Metrics.counter("a", "n").inc(2)
        Metrics.distribution("a", "d").update(4)
    finally:
        enter(prev)
    again = MetricsContainer()
    again.absorb(pickle.loads(pickle.dumps(container.snapshot())))
    assert again.snapshot() == container.snapshot()


updates = st.lists(st.tuples(st.sampled_from(["c", "d", "g"]), st.integers(-50, 50)),
                   max_size=30)


@given(st.lists(updates, min_size=1, max_size=5))
def test_merging_workers_snapshots_is_the_same_as_one_worker_doing_it_all(parts):
    """However updates are split among workers, merging their snapshots gives what one
    container doing all of them in order gives (a gauge: the latest set)."""
    def run(chunks):
        snaps = []
        for chunk in chunks:
            c = MetricsContainer()
            prev = enter(c)
            try:
                for kind, v in chunk:
                    if kind == "c":
                        Metrics.counter("n", "c").inc(v)
                    elif kind == "d":
                        Metrics.distribution("n", "d").update(v)
                    else:
                        Metrics.gauge("n", "g").set(v)
            finally:
                enter(prev)
            snaps.append(c.snapshot())
        out = {}
        for s in snaps:
            out = merge_snapshots(out, s)
        return out

    whole = run([[u for part in parts for u in part]])
    split = run(parts)
    assert split["counters"] == whole["counters"]
    assert split["distributions"] == whole["distributions"]
    assert ({k: v[0] for k, v in split["gauges"].items()}
            == {k: v[0] for k, v in whole["gauges"].items()})
