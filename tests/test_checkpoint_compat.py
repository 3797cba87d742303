"""A restart with a changed pipeline: its checkpoint's fingerprint (`runtime/fingerprint.py`)
refuses changes where the state lives, naming the step and what changed, and lets through
what may change (stateless steps' functions, and steps added on Spark or removed)."""
from __future__ import annotations

import json
import os

import pytest

import pomset as pm
from pomset.runtime.fingerprint import check_compatible, fingerprint, resume_run_state
from pomset.sdk.errors import CheckpointError
from pomset.sdk.run_state import FILE

from conftest import runner_flags
from kafka_util import new_topic, produce


def _add_one(kv):
    return (kv[0], kv[1] + 1)


def _add_two(kv):
    return (kv[0], kv[1] + 2)


def _pipeline(window=None, map_fn=_add_one, combiner=sum, extra_step=False,
              second_grouping=False, topic="events"):
    p = pm.Pipeline()
    keyed = (p | "Read" >> pm.ReadFromKafka("localhost:1", topic, timestamp="t")
             | "Key" >> pm.Map(map_fn))
    if extra_step:
        keyed = keyed | "Filter" >> pm.Filter(lambda kv: kv[1] > 0)
    window = window or {}
    sums = (keyed | "Window" >> pm.WindowInto(window.pop("fn", pm.FixedWindows(300)), **window)
            | "Sum" >> pm.CombinePerKey(combiner))
    if second_grouping:
        sums | "Group" >> pm.GroupByKey()
    return fingerprint(p.nodes)


def _refused(old, new) -> str:
    with pytest.raises(CheckpointError) as e:
        check_compatible(old, new, "/ck")
    message = str(e.value)
    assert "/ck" in message and "new --checkpoint_dir" in message
    return message


def test_an_identical_pipeline_and_one_whose_functions_changed_are_compatible():
    check_compatible(_pipeline(), _pipeline(), "/ck")
    check_compatible(_pipeline(), _pipeline(map_fn=_add_two), "/ck")


def test_the_fingerprint_is_json_and_names_values_not_objects():
    fp = json.loads(json.dumps(_pipeline(window=dict(
        trigger=pm.AfterWatermark(early=pm.AtPeriod(10, offset=3))))))
    assert fp["steps"]["Sum"]["windowing"] == "FixedWindows(300)"
    assert fp["steps"]["Sum"]["trigger"] == "AfterWatermark(early=AtPeriod(10, offset=3))"
    assert fp["steps"]["Sum"]["reads"] == ["Read"]
    assert "Key" not in fp["steps"]


@pytest.mark.parametrize("change, shown", [
    (dict(fn=pm.FixedWindows(600)), "its windowing: FixedWindows(300) → FixedWindows(600)"),
    (dict(fn=pm.FixedWindows(300, offset=60)),
     "its windowing: FixedWindows(300) → FixedWindows(300, offset=60)"),
    (dict(trigger=pm.AfterWatermark(late=pm.AfterCount(1))),
     "its trigger: DefaultTrigger() → AfterWatermark(late=AfterCount(1))"),
    (dict(accumulation_mode=pm.AccumulationMode.ACCUMULATING),
     "its accumulation mode: DISCARDING → ACCUMULATING"),
    (dict(allowed_lateness=60), "its allowed lateness: 0s → 60s"),
    (dict(timestamp_combiner=pm.TimestampCombiner.OUTPUT_AT_LATEST),
     "its timestamp combiner: OUTPUT_AT_EOW → OUTPUT_AT_LATEST"),
])
def test_a_changed_windowing_strategy_is_refused_naming_the_step_and_both_values(change, shown):
    message = _refused(_pipeline(), _pipeline(window=change))
    assert f"step 'Sum' changed {shown}" in message


def test_a_changed_combiner_is_refused():
    message = _refused(_pipeline(), _pipeline(combiner=pm.Count()))
    assert "step 'Sum' changed its combiner: Sum() → Count()" in message
    lambdas = _refused(_pipeline(combiner=lambda vs: sum(vs)), _pipeline(combiner=max))
    assert "test_checkpoint_compat.test_a_changed_combiner_is_refused.<locals>.<lambda>" in lambdas


def test_a_stateful_step_added_or_removed_is_refused():
    assert "stateful step 'Group' is new" in _refused(_pipeline(), _pipeline(second_grouping=True))
    assert "stateful step 'Group' was removed" in _refused(_pipeline(second_grouping=True),
                                                            _pipeline())


def _stateful_dofn_pipeline(bag: str, lateness: int = 0):
    class Buffer(pm.DoFn):
        BUF = pm.BagStateSpec(bag)
        FLUSH = pm.TimerSpec("flush", pm.TimeDomain.WATERMARK)

        def process(self, kv, buf=pm.DoFn.StateParam(BUF), flush=pm.DoFn.TimerParam(FLUSH)):
            buf.add(kv[1])

        @pm.on_timer(FLUSH)
        def flushed(self, buf=pm.DoFn.StateParam(BUF)):
            yield buf.read()

    p = pm.Pipeline()
    (p | "Read" >> pm.ReadFromKafka("localhost:1", "events", timestamp="t")
     | "Key" >> pm.Map(_add_one) | pm.WindowInto(pm.FixedWindows(60), allowed_lateness=lateness)
     | "Buffer" >> pm.ParDo(Buffer()))
    return fingerprint(p.nodes)


def test_a_stateful_dofn_whose_state_cells_or_lateness_changed_is_refused():
    assert check_compatible(_stateful_dofn_pipeline("buf"), _stateful_dofn_pipeline("buf"),
                            "/cp") is None
    assert ("step 'Buffer' changed its state: [BagStateSpec(buf)] → [BagStateSpec(items)]"
            in _refused(_stateful_dofn_pipeline("buf"), _stateful_dofn_pipeline("items")))
    assert "step 'Buffer' changed its allowed lateness: 0s → 60s" in _refused(
        _stateful_dofn_pipeline("buf"), _stateful_dofn_pipeline("buf", lateness=60))


def test_a_source_reading_other_topics_is_refused():
    assert "step 'Read' changed its topics: [events] → [clicks]" in _refused(
        _pipeline(), _pipeline(topic="clicks"))


def test_a_stateless_step_added_or_removed_is_compatible():
    check_compatible(_pipeline(), _pipeline(extra_step=True), "/ck")
    check_compatible(_pipeline(extra_step=True), _pipeline(), "/ck")


def test_what_a_grouping_reads_is_part_of_its_fingerprint():
    p = pm.Pipeline()
    a = p | "A" >> pm.Create([("k", 1)])
    b = p | "B" >> pm.Create([("k", 2)])
    a | "Sum" >> pm.CombinePerKey(sum)
    q = pm.Pipeline()
    q | "A" >> pm.Create([("k", 1)])
    (q | "B" >> pm.Create([("k", 2)])) | "Sum" >> pm.CombinePerKey(sum)
    assert b is not None
    assert "step 'Sum' changed its reads: [A] → [B]" in _refused(fingerprint(p.nodes),
                                                                 fingerprint(q.nodes))


def test_a_checkpoint_without_a_fingerprint_gets_the_current_one(tmp_path):
    (tmp_path / FILE).write_text(json.dumps({"run_id": "pomset-old", "buckets": 2}))
    p = pm.Pipeline()
    p | pm.Create([("k", 1)]) | "Sum" >> pm.CombinePerKey(sum)
    state = resume_run_state(str(tmp_path), p.nodes)
    assert state["run_id"] == "pomset-old" and state["buckets"] == 2
    assert json.loads((tmp_path / FILE).read_text())["fingerprint"] == fingerprint(p.nodes)


# --- end to end: a Kafka pipeline checkpointed, restarted changed and unchanged ---------------

def _sums(broker: str, topic: str, runner: str, checkpoint: str, size: int) -> tuple:
    """The window sums and the number of records read."""
    flags = runner_flags(runner) + [f"--checkpoint_dir={checkpoint}", "--quiet",
                                    "--checkpoint_interval=0.5"]
    with pm.Pipeline(options=pm.PipelineOptions(flags)) as p:
        sums = (p | "Read" >> pm.ReadFromKafka(broker, topic, timestamp="t", until="latest")
                | "Key" >> pm.Map(lambda r: (r["k"], r["v"]))
                | "Window" >> pm.WindowInto(pm.FixedWindows(size))
                | "Sum" >> pm.CombinePerKey(sum))
    return sorted(wv.value for wv in p.result.collect(sums)), p.result.metrics()["Read"]["read"]


@pytest.mark.parametrize("runner", ["local", "spark-streaming"])
def test_a_restart_with_other_windows_is_refused_and_an_unchanged_one_resumes(
        kafka_broker, runner, tmp_path, request):
    if runner.startswith("spark"):
        request.getfixturevalue("spark_session")
    topic = new_topic(kafka_broker, "compat", 1)
    checkpoint = str(tmp_path / "checkpoint")
    produce(kafka_broker, topic, [{"value": {"k": "a", "v": v, "t": t}}
                                  for v, t in [(1, 10), (2, 350), (4, 400)]])
    assert _sums(kafka_broker, topic, runner, checkpoint, 300) == ([("a", 1), ("a", 6)], 3)
    recorded = open(os.path.join(checkpoint, FILE)).read()

    with pytest.raises(CheckpointError) as e:
        _sums(kafka_broker, topic, runner, checkpoint, 600)
    assert "step 'Sum' changed its windowing: FixedWindows(300) → FixedWindows(600)" in str(e.value)
    assert checkpoint in str(e.value)
    assert open(os.path.join(checkpoint, FILE)).read() == recorded

    # resumed where the first run ended: the new record is the one read (the local runner's
    # counts go on from the checkpoint's), and is late (that run's watermark reached the end)
    produce(kafka_broker, topic, [{"value": {"k": "b", "v": 8, "t": 1000}}])
    assert _sums(kafka_broker, topic, runner, checkpoint, 300) == (
        [], {"local": 4, "spark-streaming": 1}[runner])


def test_a_groupby_recorded_with_row_keys_is_refused():
    """A GroupBy's grouping keys by its key fields' values; a checkpoint written when it keyed
    by Rows of them holds states no new key would find."""
    def groupby():
        p = pm.Pipeline()
        (p | "Read" >> pm.ReadFromKafka("localhost:1", "events", timestamp="t")
         | "Window" >> pm.WindowInto(pm.FixedWindows(300))
         | "Sums" >> pm.GroupBy("user").aggregate_field("n", pm.Sum(), "total"))
        return fingerprint(p.nodes)
    new = groupby()
    step = next(label for label, fields in new["steps"].items() if "keys" in fields)
    assert new["steps"][step]["keys"] == "values of user"
    old = json.loads(json.dumps(new))
    del old["steps"][step]["keys"]
    assert "its keys: none → values of user" in _refused(old, new)
    check_compatible(groupby(), groupby(), "/ck")


def test_a_grouping_recorded_with_wake_ups_of_an_earlier_form_is_refused():
    """A grouping's saved wake-ups name each due window and are pickled a slot of time at a
    time; a checkpoint whose wake-ups named only keys, or were saved in one list, cannot be
    resumed by the host that reads them by slot."""
    def grouping():
        p = pm.Pipeline()
        (p | "Read" >> pm.ReadFromKafka("localhost:1", "events", timestamp="t")
         | "Key" >> pm.Map(lambda r: (r["k"], r["v"]))
         | "Window" >> pm.WindowInto(pm.FixedWindows(300))
         | "Sum" >> pm.CombinePerKey(sum))
        return fingerprint(p.nodes)
    new = grouping()
    assert new["steps"]["Sum"]["wake-ups"] == "by key and window, in 60 s slots"
    old = json.loads(json.dumps(new))
    del old["steps"]["Sum"]["wake-ups"]
    assert ("step 'Sum' changed its wake-ups: none → by key and window, in 60 s slots"
            in _refused(old, new))
    old["steps"]["Sum"]["wake-ups"] = "by key and window"
    assert ("step 'Sum' changed its wake-ups: by key and window → by key and window, in 60 s "
            "slots" in _refused(old, new))
