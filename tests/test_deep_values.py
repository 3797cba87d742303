"""Values that break Python's own machinery: JSON nested deeper than Python's recursion limit,
read from a file or Kafka, written by a sink, or shuffled by Spark, and accumulators that
cannot be pickled. Each is a malformed record or an error naming where it was (file and line,
topic and offset, step label) and what failed, never a raw RecursionError or PicklingError."""
from __future__ import annotations

import json
import os
import threading

import pytest

import pomset as pm
from pomset.sdk.errors import UserCodeError

from kafka_util import new_topic, produce

DEPTH = 10_000
DEEP_TEXT = "[" * DEPTH + "]" * DEPTH


def deep(n: int) -> list:
    """A list nested n levels deep (built without recursion)."""
    value: list = []
    for _ in range(n):
        value = [value]
    return value


def _deep_lines(tmp_path) -> str:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"id": 1}\n' + DEEP_TEXT + '\n{"id": 2}\n'
                    '{"id": 3, "v": ' + DEEP_TEXT + '}\n{"id": 4}\n')
    return str(path)


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_a_deep_json_line_is_a_dead_letter_naming_its_file_and_line(tmp_path, runner, request):
    if runner == "spark":
        request.getfixturevalue("spark_session")
    path = _deep_lines(tmp_path)
    p = pm.Pipeline(argv=[f"--runner={runner}", "--quiet"])
    good, bad = p | pm.ReadFromJson(path).with_exception_handling()
    result = p.run()
    assert sorted(wv.value["id"] for wv in result.collect(good)) == [1, 2, 4]
    letters = sorted((wv.value for wv in result.collect(bad)), key=lambda d: d.error)
    assert [d.error.split(": ", 1)[0] for d in letters] == [f"{path}:2", f"{path}:4"]
    assert all("invalid JSON: nested too deeply" in d.error for d in letters)
    assert letters[0].element == DEEP_TEXT
    assert result.metrics()["ReadFromJson"]["dead_lettered"] == 2


def test_a_deep_json_line_without_dead_letters_fails_the_run_naming_its_file_and_line(tmp_path):
    path = _deep_lines(tmp_path)
    p = pm.Pipeline(runner="local")
    p | pm.ReadFromJson(path)
    with pytest.raises(UserCodeError, match=rf"{path}:2: invalid JSON: nested too deeply"):
        p.run()


def test_a_deep_kafka_record_is_a_dead_letter_naming_its_offset(kafka_broker):
    topic = new_topic(kafka_broker, "deep", 1)
    produce(kafka_broker, topic, [{"value": {"n": 1}}, {"value": DEEP_TEXT.encode()},
                                  {"value": {"n": 2}}])
    with pm.Pipeline(argv=["--quiet"]) as p:
        good, bad = p | "deep" >> pm.ReadFromKafka(kafka_broker, topic,
                                                   until="latest").with_exception_handling()
    assert sorted(wv.value["n"] for wv in p.result.collect(good)) == [1, 2]
    [letter] = [wv.value for wv in p.result.collect(bad)]
    assert letter.error.startswith(f"topic {topic!r} partition 0 offset 1: record is not valid "
                                   f"JSON: nested too deeply")
    assert p.result.metrics()["deep"]["dead_lettered"] == 1


def test_writing_a_deep_value_as_json_names_the_sink(tmp_path):
    p = pm.Pipeline(runner="local")
    (p | pm.Create([3, DEPTH]) | "Nest" >> pm.Map(deep)
       | "Out" >> pm.WriteToJson(str(tmp_path / "out")))
    with pytest.raises(ValueError, match=r"Out: cannot write \[\[\[.*\]\]\] as JSON: it is "
                                         r"nested too deeply"):
        p.run()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("streaming", [False, True])
def test_a_deep_value_through_a_spark_shuffle_names_the_step_that_made_it(spark_session,
                                                                          streaming):
    def nest(n):   # local, so that Spark's workers get it by value
        value: list = []
        for _ in range(n):
            value = [value]
        return "k", value
    p = pm.Pipeline(argv=["--runner=spark", "--quiet"] + (
        ["--streaming", "--streaming_until=latest"] if streaming else []))
    (p | pm.Create([3, DEPTH]) | "Nest" >> pm.Map(nest)
       | "Group" >> pm.GroupByKey() | pm.Map(lambda kv: len(kv[1])))
    with pytest.raises(UserCodeError) as info:
        p.run()
    assert str(info.value).startswith(
        "step 'Nest': its output ('k', [[[[[[...]]]]]]) cannot be pickled: it is nested too "
        "deeply (past Python's recursion limit)")


@pytest.mark.parametrize("mode", ["batch", "streaming", "streaming-state"])
def test_an_accumulator_that_cannot_be_pickled_on_spark_names_the_combine(spark_session, mode):
    """Batch and streaming runs pickle partial accumulators folded before the shuffle; a
    streaming run whose windows stay open between micro-batches also pickles them as its
    state."""
    class LockedCount(pm.CombineFn):   # local, so that Spark's workers get it by value
        """A count whose accumulator holds a lock, which cannot be pickled."""

        def create_accumulator(self):
            return [0, threading.Lock()]

        def add_input(self, acc, v):
            acc[0] += 1
            return acc

        def merge_accumulators(self, accs):
            accs = list(accs)
            return [sum(a[0] for a in accs), accs[0][1]]

        def extract_output(self, acc):
            return acc[0]

    p = pm.Pipeline(argv=["--runner=spark", "--quiet"] + (
        ["--streaming", "--streaming_until=latest"] if mode != "batch" else []))
    if mode == "streaming-state":
        pairs = p | (pm.TestStream().add_elements([("a", 1), ("b", 2)]).advance_watermark_to(5)
                     .add_elements([("a", 3)]).advance_watermark_to_infinity())
        pairs = pairs | pm.WindowInto(pm.GlobalWindows(), trigger=pm.AfterWatermark(
            early=pm.AfterCount(1)), accumulation_mode=pm.AccumulationMode.ACCUMULATING)
    else:
        pairs = p | pm.Create([("a", 1), ("b", 2), ("a", 3)])
    pairs | "Count" >> pm.CombinePerKey(LockedCount())
    with pytest.raises(UserCodeError) as info:
        p.run()
    msg = str(info.value)
    assert msg.startswith("step 'Count': ")
    assert ("its state of key" if mode == "streaming-state" else
            "a partial accumulator (key, accumulator)") in msg
    assert "cannot be pickled: TypeError: cannot pickle '_thread.lock' object" in msg
