"""The local runner's ordered-parallel executor (Prasaad et al.): whatever order its workers
finish bundles in, every step after the stateless ones sees what the sequential executor
would show it, in the same order (a grouping partitioned over the workers gives each key's
panes in the same order); failures, DoFn copies and the flags that choose it."""
from __future__ import annotations

import random
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pomset as pm
from pomset.sdk.errors import OptionsError, PipelineConstructionError, UserCodeError
from pomset.sdk.options import SCHEDULES, usable_cores

MODES = [["--worker_mode=threads"], ["--worker_mode=processes"]]


def _jitter(seed: int):
    """A Map that sleeps a seeded, element-dependent while, so that workers finish bundles
    out of order."""
    def slow(e):
        if e[1] % 5 == 0:
            time.sleep(random.Random(seed * 1_000_003 + e[2]).random() / 500)
        return e
    return slow


def _grouped(flags, seed: int):
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", "--bundle_size=7", *flags]))
    rng = random.Random(seed)
    events = [(rng.choice("abcde"), rng.randrange(100), rng.randrange(0, 600)) for _ in range(300)]
    out = (p | pm.Create(events) | "stamp" >> pm.Map(lambda e: pm.TimestampedValue(e, e[2]))
           | "jitter" >> pm.Map(_jitter(seed))
           | "key" >> pm.Map(lambda e: (e[0], e[1]))
           | pm.WindowInto(pm.FixedWindows(60)) | pm.GroupByKey())
    result = p.run()
    # the values' order inside each group is the order the grouping received them in
    return [(wv.value[0], wv.window, list(wv.value[1])) for wv in result.collect(out)], \
        result.metrics()


def by_key(panes: list) -> dict:
    """Each key's panes in the order they came."""
    out: dict = {}
    for pane in panes:
        out.setdefault(pane[0], []).append(pane)
    return out


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), workers=st.integers(2, 4),
       mode=st.sampled_from(MODES + [[]]), schedule=st.sampled_from(SCHEDULES))
def test_out_of_order_completion_gives_the_sequential_output_in_its_order(seed, workers, mode,
                                                                          schedule):
    want, want_metrics = _grouped(["--workers=1"], seed)
    got, got_metrics = _grouped([f"--workers={workers}", *mode, f"--schedule={schedule}",
                                 f"--schedule_seed={seed}"], seed)
    if mode:   # the grouping is partitioned over the workers
        assert by_key(got) == by_key(want)
    else:
        assert got == want
    assert got_metrics == want_metrics


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_element_fails_the_run_naming_the_step_and_element(mode):
    def boom(x):
        if x == 1234:
            raise ValueError("bad element")
        return x

    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", "--workers=2", "--bundle_size=50",
                                                *mode]))
    p | pm.Create(list(range(3000))) | "check" >> pm.Map(boom) | pm.CombineGlobally(pm.Sum())
    with pytest.raises(UserCodeError, match=r"check.*1234|1234.*check") as info:
        p.run()
    assert isinstance(info.value.__cause__, ValueError)   # the user's own, from a process too


@pytest.mark.parametrize("mode", MODES)
def test_dead_letters_from_workers_are_counted(mode):
    def parse(x):
        if x % 100 == 0:
            raise ValueError("multiple of 100")
        return x

    def build(flags):
        p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", "--bundle_size=64", *flags]))
        good, bad = (p | pm.Create(list(range(1000)))
                     | "parse" >> pm.Map(parse).with_exception_handling())
        result = p.run()
        return sorted(wv.value for wv in result.collect(good)), len(result.collect(bad)), \
            result.metrics()["parse"]

    assert build(["--workers=2", *mode]) == build(["--workers=1"])
    assert build(["--workers=2", *mode])[2]["dead_lettered"] == 10


class Counting(pm.DoFn):
    """Keeps state on the DoFn instance, as users' DoFns do: each worker has its own copy."""

    instances: list = []

    def setup(self):
        self.seen = 0
        self.torn_down = False
        Counting.instances.append(self)

    def process(self, x):
        self.seen += 1
        yield x

    def teardown(self):
        self.torn_down = True


def test_each_thread_worker_has_its_own_dofn_set_up_and_torn_down():
    Counting.instances = []
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", "--workers=3", "--bundle_size=10",
                                                "--worker_mode=threads"]))
    out = p | pm.Create(list(range(2000))) | pm.ParDo(Counting())
    result = p.run()
    assert sorted(wv.value for wv in result.collect(out)) == list(range(2000))
    copies = [d for d in Counting.instances if d.seen]
    assert sum(d.seen for d in Counting.instances) == 2000
    assert 1 <= len(copies) <= 3
    assert len({id(d) for d in Counting.instances}) == len(Counting.instances)
    assert all(d.torn_down for d in Counting.instances)


def test_a_dofn_that_cannot_be_copied_is_named():
    class Locked(pm.DoFn):
        def __init__(self):
            self.lock = threading.Lock()

        def process(self, x):
            yield x

    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", "--workers=2",
                                                "--worker_mode=threads"]))
    p | pm.Create([1, 2]) | "locked" >> pm.ParDo(Locked())
    with pytest.raises(PipelineConstructionError, match=r"locked.*cannot be copied.*--workers=1"):
        p.run()


def _sum_of_squares(flags):
    class Squares(pm.DoFn):
        def process_batch(self, batch: np.ndarray) -> np.ndarray:
            return batch * batch

    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", "--bundle_size=256", *flags]))
    out = (p | pm.Create(np.arange(5000, dtype=np.int64).tolist())
           | pm.ParDo(Squares())
           | pm.CombineGlobally(pm.Sum()))
    return [wv.value for wv in p.run().collect(out)]


@pytest.mark.parametrize("mode", MODES)
def test_batched_dofns_run_on_workers(mode):
    assert _sum_of_squares(["--workers=2", *mode]) == _sum_of_squares(["--workers=1"]) \
        == [sum(i * i for i in range(5000))]


def test_auto_mode_gives_workers_only_what_releases_the_gil():
    """By default, bundles that reach a batched DoFn go to worker threads, which run it on
    their own copies; steps that only meet Python-bound ones run on the real stages, in
    order, as at one worker."""
    seen = {"plain": set(), "batch": set()}

    class Plain(pm.DoFn):
        def process(self, x):
            seen["plain"].add(id(self))
            yield x

    class Squares(pm.DoFn):
        def process_batch(self, batch: np.ndarray) -> np.ndarray:
            seen["batch"].add((id(self), threading.current_thread().name))
            return batch * batch

    plain_fn, squares_fn = Plain(), Squares()
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", "--workers=2", "--bundle_size=64"]))
    numbers = p | pm.Create(list(range(2000)))
    plain = numbers | "plain" >> pm.ParDo(plain_fn)
    squares = numbers | "float" >> pm.Map(float) | pm.ParDo(squares_fn)
    result = p.run()
    assert sorted(wv.value for wv in result.collect(plain)) == list(range(2000))
    assert sum(wv.value for wv in result.collect(squares)) == sum(i * i for i in range(2000))
    assert seen["plain"] == {id(plain_fn)}
    assert {name[:13] for _, name in seen["batch"]} == {"pomset-worker"}
    assert id(squares_fn) not in {i for i, _ in seen["batch"]}


def test_flags_choose_the_executor_as_beam_names_them_too():
    assert pm.PipelineOptions([]).workers == usable_cores()   # the default: one per core
    assert pm.PipelineOptions([]).worker_mode == "auto"
    assert pm.PipelineOptions(["--workers=0"]).workers == usable_cores()
    assert pm.PipelineOptions(["--workers=1"]).workers == 1
    beam = pm.PipelineOptions(["--direct_num_workers=3", "--direct_running_mode=multi_processing"])
    assert (beam.workers, beam.worker_mode) == (3, "processes")
    assert pm.PipelineOptions(["--direct_num_workers=4",
                               "--direct_running_mode=in_memory"]).workers == 1
    assert pm.PipelineOptions(["--direct_running_mode=multi_threading"]).worker_mode == "threads"
    with pytest.raises(OptionsError, match="--workers must be 0"):
        pm.PipelineOptions(["--workers=-2"])
    with pytest.raises(OptionsError, match="worker_mode"):
        pm.PipelineOptions(["--worker_mode=fibers"])
