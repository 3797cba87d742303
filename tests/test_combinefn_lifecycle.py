"""CombineFn lifecycle (Beam's `CombineFn.setup` and `teardown`): on each runner mode, every
copy of a CombineFn that a run calls is set up once before its first other call and torn
down once after its last, wherever the CombineFn runs (a grouping, lifted or not, a
CombineValues, a combine with extra arguments, a fanout's steps, a stateful DoFn's combining
state), in worker threads, worker processes and Spark tasks alike. Each copy writes what
happens to it to a file of its own, which the test reads back."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List

import pytest

import pomset as pm
from conftest import runner_flags
from pomset.sdk.combinefn import copy_combine_fn

MODES = ["local-sequential", "local-threads", "local-processes", "spark", "spark-streaming"]
#: on Spark, one pipeline per kind of task that calls a CombineFn: a grouping (and its lifted
#: pre-combine), a ParDo (with and without --runtime_type_check's wrapping), a stateful ParDo
ON_SPARK = {"combine_per_key", "combine_values", "combining_state", "type_checked"}


class Recording(pm.CombineFn):
    """A sum that records its lifecycle: `setup`, its first use, `teardown`, and any call
    out of turn, into a file named for the process and the copy."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.stage = "new"

    def _log(self, event: str) -> None:
        with open(os.path.join(self.directory, f"{os.getpid()}-{id(self)}"), "a") as f:
            f.write(event + "\n")

    def _use(self) -> None:
        if self.stage == "set up":
            self._log("used")
            self.stage = "used"
        elif self.stage != "used":
            self._log(f"called when {self.stage}")

    def setup(self, *args: Any, **kwargs: Any) -> None:
        self._log("setup" if self.stage == "new" else f"setup when {self.stage}")
        self.stage = "set up"

    def teardown(self, *args: Any, **kwargs: Any) -> None:
        self._log("teardown" if self.stage in ("set up", "used") else f"teardown when {self.stage}")
        self.stage = "torn down"

    def create_accumulator(self, *args: Any, **kwargs: Any) -> int:
        self._use()
        return 0

    def add_input(self, acc: int, value: int, *args: Any, **kwargs: Any) -> int:
        self._use()
        return acc + value

    def merge_accumulators(self, accs: Any, *args: Any, **kwargs: Any) -> int:
        self._use()
        return sum(accs)

    def extract_output(self, acc: int, *args: Any, **kwargs: Any) -> int:
        self._use()
        return acc + sum(args)


def _run(mode: str, build: Any, flags: List[str] = ()) -> List[Any]:
    p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(mode) + ["--quiet", *flags]))
    out = build(p)
    result = p.run()
    return sorted(wv.value for wv in result.collect(out))


def _lives(directory: Path) -> Dict[str, List[str]]:
    return {f.name: f.read_text().split() for f in directory.iterdir()}


def _keyed(p: Any) -> Any:
    return p | pm.Create([("a", 1), ("b", 2), ("a", 3), ("b", 4), ("a", 5)])


def _stateful(directory: str) -> Any:
    """A DoFn numbering each key's values in turn, by a combining state."""
    spec = pm.CombiningValueStateSpec("count", Recording(directory))

    class Counting(pm.DoFn):
        def process(self, kv: Any, count: Any = pm.DoFn.StateParam(spec)) -> Any:
            yield kv[0], count.read()
            count.add(1)
    return Counting()


PIPELINES = {
    "combine_per_key": (lambda p, d: _keyed(p) | pm.CombinePerKey(Recording(d)),
                        [("a", 9), ("b", 6)]),
    "combine_values": (lambda p, d: _keyed(p) | pm.GroupByKey() | pm.CombineValues(Recording(d)),
                       [("a", 9), ("b", 6)]),
    "extra_arguments": (lambda p, d: _keyed(p) | pm.Values() | pm.CombineGlobally(Recording(d), 100),
                        [115]),
    "fanout": (lambda p, d: _keyed(p) | pm.Values()
               | pm.CombineGlobally(Recording(d)).with_fanout(2), [15]),
    "tuple": (lambda p, d: _keyed(p) | pm.Values() | pm.CombineGlobally(
        pm.combiners.SingleInputTupleCombineFn(Recording(d), Recording(d))), [(15, 15)]),
    "combining_state": (lambda p, d: _keyed(p) | pm.ParDo(_stateful(d)),
                        [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1)]),
    "type_checked": (lambda p, d: _keyed(p) | pm.Values() | pm.CombineGlobally(Recording(d), 100),
                     [115]),
}
#: flags a pipeline runs with: the type check wraps each DoFn's process in one that checks it
FLAGS = {"type_checked": ["--runtime_type_check"]}


@pytest.fixture
def by_value(spark_session):
    """Spark's workers cannot import this test module: ship its CombineFns by value."""
    import sys
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.mark.parametrize("mode,pipeline", [(m, p) for m in MODES for p in sorted(PIPELINES)
                                           if not m.startswith("spark") or p in ON_SPARK])
def test_each_copy_is_set_up_before_its_use_and_torn_down_after(mode, pipeline, tmp_path,
                                                                 request):
    if mode.startswith("spark"):
        request.getfixturevalue("by_value")
    build, expected = PIPELINES[pipeline]
    assert _run(mode, lambda p: build(p, str(tmp_path)), FLAGS.get(pipeline, [])) == expected
    lives = _lives(tmp_path)
    assert any("used" in events for events in lives.values())
    for copy, events in lives.items():
        assert events[0] == "setup" and events[-1] == "teardown", (copy, events)
        assert set(events[1:-1]) <= {"used"}, (copy, events)


def test_a_copy_of_a_combine_fn_holding_a_module_has_its_own_lifecycle(tmp_path):
    import math
    fn = Recording(str(tmp_path))
    fn.module = math
    copy = copy_combine_fn(fn)
    assert copy is not fn and copy.module is math
    copy.setup()
    assert fn.stage == "new" and copy.stage == "set up"
