"""What a user of the Spark runner sees on a terminal, run as its own process (a fresh
interpreter starts its own session) by tests/test_spark_watch.py: two batch runs sharing the
session, failing user functions (a batch Map, a streaming CombineFn: its grouping runs in
transformWithState) and then a run with --spark_log_level=INFO. Reports on stdout; stderr is what the test checks."""
from __future__ import annotations

import os
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402
from pomset.runners.spark.session import spark_session  # noqa: E402

STREAMING = ["--streaming", "--streaming_until=latest"]
MARK = "=== verbose from here ==="


def boom(x: int) -> int:
    raise ValueError(f"bad value {x}")


class BadSum(pm.CombineFn):
    def create_accumulator(self) -> int:
        return 0

    def add_input(self, acc: int, x: int) -> int:
        if x == 2:
            raise ValueError("bad combine input 2")
        return acc + x

    def merge_accumulators(self, accs: list) -> int:
        return sum(accs)

    def extract_output(self, acc: int) -> int:
        return acc


def timed_run(*flags: str) -> float:
    """A three-element batch run; its wall time."""
    started = time.monotonic()
    with pm.Pipeline(options=pm.PipelineOptions(["--runner=spark", *flags])) as p:
        out = p | pm.Create([1, 2, 3]) | pm.Map(lambda x: x * 2)
    assert sorted(wv.value for wv in p.result.collect(out)) == [2, 4, 6]
    return time.monotonic() - started


def fail(build, *flags: str) -> None:
    """Run a failing pipeline and print what the user would see (its traceback) on stderr."""
    p = pm.Pipeline(options=pm.PipelineOptions(["--runner=spark", "--quiet", *flags]))
    build(p)
    try:
        p.run()
    except pm.UserCodeError:
        traceback.print_exc()
        return
    raise AssertionError("the run did not fail")


def main() -> None:
    first = timed_run()
    session = spark_session(pm.PipelineOptions(["--runner=spark"]))
    second = timed_run()
    print(f"runs {first:.2f} {second:.2f}")
    print("same session", spark_session(pm.PipelineOptions(["--runner=spark"])) is session)
    fail(lambda p: p | pm.Create([1, 2, 3]) | pm.Map(boom))
    fail(lambda p: p | pm.Create([("a", 1), ("a", 2)]) | pm.CombinePerKey(BadSum()),
         *STREAMING)
    time.sleep(1)   # the JVM's output comes through a thread: let it drain before the mark
    print(MARK, file=sys.stderr, flush=True)
    timed_run("--quiet", "--spark_log_level=INFO")
    time.sleep(1)


if __name__ == "__main__":
    main()
