"""Kafka end to end on both runners, against the embedded broker (noida-db): the video-sessions
example's netted output equals the batch answer, also across a killed and restarted run (with
nothing repeated: exactly once); malformed records go to a dead-letter topic, or fail the run
naming topic, partition and offset; an idle partition stops holding the watermark back."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

import pomset as pm
from pomset.sdk.io.kafka_clients import KafkaReader
from pomset.windowing import MIN_MICROS

from conftest import runner_flags
from kafka_util import netted, new_topic, produce, read_topic

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
import video_sessions as vs  # noqa: E402

SPARK_FLAGS = ["--spark_master=local[2]", "--spark_conf=spark.sql.shuffle.partitions=2"]


def _topics(bootstrap: str) -> str:
    prefix = f"{new_topic(bootstrap, 'video', 1)}-"
    vs.create_topics(bootstrap, list(vs.topics(prefix)) + [f"{prefix}views-dead-letters"])
    return prefix


def _pipeline(bootstrap: str, prefix: str, runner: str, *flags: str) -> list:
    """The example's pipeline role as a user starts it (so Spark's workers import nothing)."""
    return [sys.executable, os.path.join(ROOT, "examples", "video_sessions.py"), "--role=pipeline",
            *runner_flags(runner), f"--bootstrap_servers={bootstrap}", f"--topic_prefix={prefix}",
            "--quiet", *SPARK_FLAGS, *flags]


def _produce_views(bootstrap: str, prefix: str, events: list) -> None:
    produce(bootstrap, f"{prefix}views", [{"value": e, "key": e["user"].encode()} for e in events])


def _check_against_batch(bootstrap: str, prefix: str, events: list) -> list:
    """The netted sessions and billing topics equal the batch answer; no record is there twice
    (a repeated pane would carry the same pane index and diff). Returns the session records."""
    _, sessions_topic, billing_topic = vs.topics(prefix)
    sessions, billing = vs.batch_answer(events)
    records = read_topic(bootstrap, sessions_topic)
    got = netted(records)
    assert set(got.values()) == {1}
    assert {(dict(v)["user"], dict(v)["start"], dict(v)["end"], dict(v)["seconds"])
            for v, _ in got} == sessions
    billed = netted(read_topic(bootstrap, billing_topic))
    assert set(billed.values()) == {1}
    assert dict(billed.keys()) == billing
    repeats = Counter((m.key(), m.value(), tuple(m.headers())) for m in records)
    assert max(repeats.values()) == 1, [r for r, n in repeats.items() if n > 1][:3]
    return records


@pytest.mark.parametrize("runner", ["local", "local-threads", "local-processes", "spark"])
def test_video_sessions_on_kafka_equal_the_batch_answer(kafka_broker, runner):
    prefix = _topics(kafka_broker)
    events = [e for _, e in vs.generate(1500, 30, 5, seed=11)]
    _produce_views(kafka_broker, prefix, events)
    proc = subprocess.run(_pipeline(kafka_broker, prefix, runner, "--until=latest"),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_against_batch(kafka_broker, prefix, events)


# Spark's: test_chaos.py, killed at random. The last pair kills a run whose groupings are
# partitioned over 2 processes and resumes it with them over 3 threads' 12 buckets.
@pytest.mark.parametrize("runner,resumed", [("local", "local"), ("local-threads", "local-threads"),
                                            ("local-processes", "local-threads")])
def test_killed_and_restarted_run_writes_each_result_once(kafka_broker, runner, resumed, tmp_path):
    prefix = _topics(kafka_broker)
    events = [e for _, e in vs.generate(2000, 30, 5, seed=5)]
    _produce_views(kafka_broker, prefix, events[:1200])
    flags = [f"--checkpoint_dir={tmp_path / 'checkpoint'}", "--checkpoint_interval=0.5",
             "--trigger_interval=0.5", "--early_seconds=0.2"]
    first = subprocess.Popen(_pipeline(kafka_broker, prefix, runner, *flags),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not read_topic(kafka_broker, f"{prefix}sessions"):
            assert first.poll() is None and time.monotonic() < deadline, "no output committed"
            time.sleep(0.5)
        _produce_views(kafka_broker, prefix, events[1200:1600])
        time.sleep(1.0)   # let it read on, then kill it mid-stream: no chance to clean up
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    committed = len(read_topic(kafka_broker, f"{prefix}sessions"))
    _produce_views(kafka_broker, prefix, events[1600:])
    second = subprocess.run(_pipeline(kafka_broker, prefix, resumed, *flags, "--until=latest"),
                            capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    records = _check_against_batch(kafka_broker, prefix, events)
    assert 0 < committed < len(records)
    assert any(m.headers()[0] == ("pomset-diff", b"-1") for m in records), "no retractions"


BAD_RECORDS = [
    {"value": b"{not json", "partition": 0},
    {"value": {"n": 1}, "partition": 0},                       # no timestamp field
    {"value": {"n": 2, "t": [1]}, "partition": 1},             # a list is not a time
    {"value": b"\xff\xfe", "partition": 1},                     # not UTF-8
    {"value": {"n": 3, "t": 5}, "partition": 1, "headers": [("pomset-diff", b"2")]},
]


def _mixed_topic(bootstrap: str) -> str:
    topic = new_topic(bootstrap, "mixed", 2)
    good = [{"value": {"n": n, "t": 10 * n}, "partition": n % 2} for n in range(10, 20)]
    produce(bootstrap, topic, good[:5] + BAD_RECORDS + good[5:])
    return topic


@pytest.mark.parametrize("runner", ["local", "local-threads", "spark-streaming"])
def test_undecodable_records_go_to_the_dead_letter_topic_and_are_counted(kafka_broker, runner,
                                                                          request):
    if runner.startswith("spark"):
        request.getfixturevalue("spark_session")
    topic = _mixed_topic(kafka_broker)
    dead_topic = new_topic(kafka_broker, "dead", 1)
    with pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + ["--quiet"])) as p:
        good, bad = p | "mixed" >> pm.ReadFromKafka(kafka_broker, topic, timestamp="t",
                                                    until="latest").with_exception_handling()
        ns = good | pm.Map(lambda r: r["n"])
        bad | pm.WriteToKafka(kafka_broker, dead_topic)
    assert sorted(wv.value for wv in p.result.collect(ns)) == list(range(10, 20))
    assert p.result.metrics()["mixed"]["dead_lettered"] == 5
    assert p.result.metrics()["mixed"]["read"] == 10
    letters = [json.loads(m.value()) for m in read_topic(kafka_broker, dead_topic)]
    errors = sorted(letter["error"] for letter in letters)
    assert len(errors) == 5 and all(e.startswith(f"topic {topic!r} partition ") for e in errors)
    assert any("partition 0 offset" in e and "not valid JSON" in e for e in errors)
    assert any("no timestamp field 't'" in e for e in errors)
    assert any("is a list" in e for e in errors)
    assert any("not UTF-8" in e for e in errors)
    assert any("pomset-diff header b'2'" in e for e in errors)


@pytest.mark.parametrize("runner", ["local", "spark-streaming"])
def test_an_undecodable_record_without_a_dead_letter_output_fails_the_run_naming_it(
        kafka_broker, runner, request):
    if runner.startswith("spark"):
        request.getfixturevalue("spark_session")
    topic = new_topic(kafka_broker, "broken", 1)
    produce(kafka_broker, topic, [{"value": {"t": 1}}, {"value": b"[oops"}])
    with pytest.raises(Exception, match=rf"topic '{topic}' partition 0 offset 1: record is not "
                                        r"valid JSON"):
        with pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + ["--quiet"])) as p:
            p | pm.ReadFromKafka(kafka_broker, topic, timestamp="t", until="latest")


@pytest.mark.parametrize("runner", ["local", "spark-streaming"])
def test_kafka_sinks_write_records_made_anywhere_and_name_a_value_they_cannot_write(
        kafka_broker, runner, request):
    """Records straight from a source (Spark's driver encodes them), from an element-wise step
    and from a grouping, and from a step after a grouping (Spark's tasks encode those where
    they are made): values, keys, diffs and counts as the sink says. A value the sink cannot
    write fails the run naming the sink, wherever it is encoded."""
    if runner.startswith("spark"):
        request.getfixturevalue("spark_session")
    source = new_topic(kafka_broker, "sink-in", 2)
    events = [{"k": "ab"[i % 2], "n": i, "t": i} for i in range(8)]
    produce(kafka_broker, source, [{"value": e, "partition": i % 2} for i, e in enumerate(events)])
    out = {name: new_topic(kafka_broker, f"sink-{name}", 1) for name in ("read", "keys", "sums",
                                                                           "labelled")}
    flags = runner_flags(runner) + ["--quiet"]
    with pm.Pipeline(options=pm.PipelineOptions(flags)) as p:
        rows = p | pm.ReadFromKafka(kafka_broker, source, timestamp="t", until="latest")
        rows | "as read" >> pm.WriteToKafka(kafka_broker, out["read"])
        (rows | pm.Map(lambda r: r["k"] * r["n"])
         | "keys" >> pm.WriteToKafka(kafka_broker, out["keys"], key=lambda v: v[:1],
                                     value_format="str"))
        sums = (rows | pm.Map(lambda r: (r["k"], r["n"])) | pm.WindowInto(pm.FixedWindows(100))
                | pm.CombinePerKey(pm.Sum()))
        sums | "sums" >> pm.WriteToKafka(kafka_broker, out["sums"], key=lambda kv: kv[0])
        (sums | pm.Map(lambda kv: {"k": kv[0], "sum": kv[1]})
         | "labelled" >> pm.WriteToKafka(kafka_broker, out["labelled"]))
    got = {name: read_topic(kafka_broker, topic) for name, topic in out.items()}
    assert sorted((json.loads(m.value()) for m in got["read"]), key=lambda e: e["n"]) == events
    assert sorted((m.key(), m.value()) for m in got["keys"]) == sorted(
        ((e["k"] * e["n"])[:1].encode(), (e["k"] * e["n"]).encode()) for e in events)
    # windowed: each record names its window (its end, in netted's keys)
    assert netted(got["sums"]) == Counter({(("a", 12), 100.0): 1, (("b", 16), 100.0): 1})
    assert {m.key() for m in got["sums"]} == {b"a", b"b"}
    assert netted(got["labelled"]) == Counter({((("k", "a"), ("sum", 12)), 100.0): 1,
                                               ((("k", "b"), ("sum", 16)), 100.0): 1})
    assert all(dict(m.headers())["pomset-diff"] == b"+1" for ms in got.values() for m in ms)
    metrics = p.result.metrics()
    assert [metrics[name]["written"] for name in ("as read", "keys", "sums", "labelled")] == \
        [8, 8, 2, 2]
    with pytest.raises(pm.UserCodeError, match=r"strings: value_format='str' needs str elements, "
                                               r"got int \d"):
        with pm.Pipeline(options=pm.PipelineOptions(flags)) as p:
            (p | pm.ReadFromKafka(kafka_broker, source, timestamp="t", until="latest")
             | pm.Map(lambda r: r["n"])
             | "strings" >> pm.WriteToKafka(kafka_broker, out["keys"], value_format="str"))


def test_a_run_that_never_ends_keeps_no_pcollections_unless_asked():
    def build(flags, keep=False):
        p = pm.Pipeline(options=pm.PipelineOptions(flags))
        read = p | pm.ReadFromKafka("127.0.0.1:1", "t")
        if keep:
            read.keep()
        read | pm.Map(len)
        return p
    assert build([]).recorded() == []   # a stream kept in memory forever would only grow
    assert len(build(["--collect=all"]).recorded()) == 2
    assert len(build(["--collect=leaves"]).recorded()) == 1
    assert [pc.label for pc in build([], keep=True).recorded()] == ["ReadFromKafka"]
    ending = pm.Pipeline()
    ending | pm.ReadFromKafka("127.0.0.1:1", "t", until="latest") | pm.Map(len)
    assert [pc.label for pc in ending.recorded()] == ["Map(len)"]


def test_retractions_read_back_as_retractions(kafka_broker):
    topic = new_topic(kafka_broker, "diffs", 1)
    produce(kafka_broker, topic, [
        {"value": ["a", 1], "headers": [("pomset-diff", b"+1")]},
        {"value": ["a", 1], "headers": [("pomset-diff", b"-1")]},
        {"value": ["a", 5]}])
    with pm.Pipeline(options=pm.PipelineOptions(["--quiet"])) as p:
        read = p | pm.ReadFromKafka(kafka_broker, topic, until="latest")
    assert [(wv.value, wv.diff) for wv in p.result.collect(read)] == [
        (["a", 1], 1), (["a", 1], -1), (["a", 5], 1)]


IDLE_S = 5.0   # long enough that reading a few records on a busy machine takes less


def _reader(bootstrap: str, topic: str, idle_timeout) -> KafkaReader:
    source = pm.ReadFromKafka(bootstrap, topic, timestamp="t", max_out_of_orderness=10,
                              idle_timeout=idle_timeout)
    consumer = source.consumer("idle-test")
    partitions = source.partitions(consumer)
    return KafkaReader(source, consumer, source.start_offsets(consumer, partitions), None,
                       source.dead_letters("idle", []))


def _read_all(reader: KafkaReader, n: int) -> None:
    got, deadline = 0, time.monotonic() + 30
    while got < n and time.monotonic() < deadline:
        got += len(reader.poll(100, 0.2))
    assert got == n


def test_an_idle_partition_stops_holding_the_watermark_back(kafka_broker):
    topic = new_topic(kafka_broker, "idle", 2)
    produce(kafka_broker, topic, [{"value": {"t": t}, "partition": 0} for t in (100, 200, 150)])
    idle, never = _reader(kafka_broker, topic, IDLE_S), _reader(kafka_broker, topic, None)
    idle_from = time.monotonic() + IDLE_S
    for reader in (idle, never):
        _read_all(reader, 3)
        assert reader.watermark() == MIN_MICROS   # partition 1 has told nothing yet
    time.sleep(max(0.0, idle_from - time.monotonic()) + 0.1)
    produce(kafka_broker, topic, [{"value": {"t": 210}, "partition": 0}])
    for reader in (idle, never):
        _read_all(reader, 1)
    assert idle.watermark() == 200_000_000      # partition 1 idle: 210 - 10 from partition 0
    assert never.watermark() == MIN_MICROS      # no idle timeout: partition 1 holds it back
    produce(kafka_broker, topic, [{"value": {"t": 50}, "partition": 1}])
    _read_all(idle, 1)
    assert idle.watermark() == 200_000_000      # active again and behind, yet no regression
    produce(kafka_broker, topic, [{"value": {"t": 400}, "partition": 0},
                                  {"value": {"t": 300}, "partition": 1}])
    _read_all(idle, 2)
    assert idle.watermark() == 290_000_000      # the minimum over both partitions again
    idle.close()
    never.close()


class _CountingConsumer:
    """A real consumer that records how many records each `consume` call asked for."""

    def __init__(self, consumer) -> None:
        self.consumer, self.asked = consumer, []

    def consume(self, num_messages, timeout):
        self.asked.append(num_messages)
        return self.consumer.consume(num_messages, timeout)

    def __getattr__(self, name):
        return getattr(self.consumer, name)


def test_a_bounded_read_asks_for_no_more_records_than_its_range_holds(kafka_broker):
    # librdkafka's consume waits for as many records as asked or its timeout: a Spark task
    # asking for more than its range holds would wait the timeout out every micro-batch
    from pomset.sdk.io.kafka_clients import read_range
    topic = new_topic(kafka_broker, "bounded", 1)
    produce(kafka_broker, topic, [{"value": {"t": t}} for t in (1, 2, 3, 4, 5)])
    source = pm.ReadFromKafka(kafka_broker, topic, timestamp="t")
    consumer = _CountingConsumer(source.consumer("bounded-test"))
    try:
        out, _, _ = read_range(source, consumer, (topic, 0), 1, 4, source.dead_letters("b", []))
    finally:
        consumer.close()
    assert [wv.value["t"] for wv in out] == [2, 3, 4]
    assert consumer.asked and max(consumer.asked) <= 3


def test_partition_watermarks_on_their_own_clock():
    from pomset.sdk.io.kafka import PartitionWatermarks
    a, b = ("t", 0), ("t", 1)
    clock = PartitionWatermarks([a, b], out_of_orderness_us=10, idle_us=100, now_us=0)
    clock.saw(a, 500, now_us=50)
    assert clock.watermark(99) == MIN_MICROS    # b says nothing and is not idle yet
    assert clock.watermark(100) == 490          # b idle
    assert clock.watermark(200) == 490          # both idle: it stays where it was
    clock.saw(b, 300, now_us=210)
    assert clock.watermark(210) == 490          # b back, behind: no regression
    clock.finish(b)
    clock.saw(a, 900, now_us=220)
    assert clock.watermark(230) == 890          # a finished partition holds nothing back


def test_spark_markers_skip_idle_channels_and_the_reader_marks_idle_partitions(kafka_broker):
    from pomset.runners.spark.stream_sources import KafkaReader as StreamReader
    from pomset.runtime.markers import ChannelMarker, Channels
    seen = Channels()
    seen.observe([(0, ChannelMarker("p0", 190)), (0, ChannelMarker("p1", idle=True))])
    assert seen.input_watermark(0, ["p0", "p1"]) == 190
    seen.observe([(0, ChannelMarker("p1", 50))])
    assert seen.input_watermark(0, ["p0", "p1"]) == 50   # the host keeps its own from going back

    topic = new_topic(kafka_broker, "idle-spark", 2)
    produce(kafka_broker, topic, [{"value": {"t": 1}, "partition": 0}])
    source = pm.ReadFromKafka(kafka_broker, topic, timestamp="t", idle_timeout=IDLE_S)
    channels = {f"{topic}:0": "c0", f"{topic}:1": "c1"}
    reader = StreamReader(channels, source, "idle", "idle-spark", False, 0.1, True)
    start = reader.initialOffset()
    # a first micro-batch Spark plans before anything arrived: one task, the clock's
    assert [p.value for p in reader.partitions(start, start)] == [([], False, (None, [], []))]
    end = reader.latestOffset(start, None)
    assert end["o"] == {f"{topic}:0": 1, f"{topic}:1": 0}
    [read] = reader.partitions(start, end)
    ranges, hold, (_, idle, finished) = read.value
    # (an unbounded read: it marks its event times, not a held watermark)
    assert (ranges, hold) == ([(f"{topic}:0", 0, 1)], False)
    assert (idle, finished) == ([], [])             # neither idle nor finished
    time.sleep(IDLE_S + 0.1)
    later = reader.latestOffset(end, None)       # nothing new: a clock tick
    assert later["tick"] == end["tick"] + 1
    assert reader.partitions(end, later)[-1].value[2][1] == [f"{topic}:0", f"{topic}:1"]
    # a micro-batch run again (after a restart) says what it said the first time
    assert [p.value for p in reader.partitions(end, later)] == [
        p.value for p in reader.partitions(end, later)]
    reader.stop()


def test_a_spark_micro_batch_reads_its_partitions_in_a_task_per_core(kafka_broker):
    """More partitions than tasks: the ranges one after another in equal shares (none cut
    this small), the clock with the least loaded task; every record is read once, and every
    partition marks its own channel."""
    from pomset.runners.spark import packs
    from pomset.runners.spark.stream_sources import KafkaReader as StreamReader
    from pomset.runtime.markers import ChannelMarker
    topic = new_topic(kafka_broker, "tasks-spark", 3)
    sizes = {0: 5, 1: 1, 2: 3}
    produce(kafka_broker, topic, [{"value": {"t": 10 * p + i}, "partition": p}
                                  for p, n in sizes.items() for i in range(n)])
    source = pm.ReadFromKafka(kafka_broker, topic, timestamp="t")
    channels = {f"{topic}:{p}": f"c{p}" for p in sizes}
    reader = StreamReader(channels, source, "tasks", "tasks-spark", False, 60, True, tasks=2)
    start = reader.initialOffset()
    end = reader.latestOffset(start, None)
    parts = reader.partitions(start, end)
    assert [[(name, stop - first) for name, first, stop in p.value[0]] for p in parts] == [
        [(f"{topic}:0", 5)], [(f"{topic}:1", 1), (f"{topic}:2", 3)]]
    assert [p.value[2] is not None for p in parts] == [False, True]   # 5 records against 4
    values, marked = [], Counter()
    for p in parts:
        for batch in reader.read(p):
            if batch.column("t")[0].as_py() is not None:
                continue   # a count for the driver
            elements, markers = packs.split_stream(batch)
            values += [wv.value["t"] for wv in elements]
            marked.update(m.channel for m in markers if isinstance(m, ChannelMarker))
    assert sorted(values) == sorted(10 * p + i for p, n in sizes.items() for i in range(n))
    assert marked == {"c0": 2, "c1": 1, "c2": 1}   # each partition's, and the clock's on c0
    reader.stop()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 3000)), max_size=6),
       st.integers(1, 5), st.integers(1, 800))
def test_a_micro_batch_spreads_its_ranges_over_its_tasks_in_equal_shares(sizes, tasks, least):
    """`spread`: every offset read once, by at most `tasks` tasks; a partition cut between
    tasks in order (its first part in the earlier task, which a stateful step takes first);
    no cut within `least` records of a range's end; each task's share within two such
    distances of an equal one."""
    from pomset.runners.spark.stream_sources import spread
    ranges = [(f"p{i}", first, first + n) for i, (first, n) in enumerate(sizes) if n]
    groups = spread(ranges, tasks, least)
    assert 1 <= len(groups) <= tasks and (all(groups) or groups == [[]])
    pieces = [(name, first, stop, task) for task, g in enumerate(groups)
              for name, first, stop in g]
    for name, first, stop in ranges:
        mine = sorted((f, s, t) for n, f, s, t in pieces if n == name)
        assert [f for f, _, _ in mine] == [first] + [s for _, s, _ in mine[:-1]]
        assert mine[-1][1] == stop and all(f < s for f, s, _ in mine)
        assert [t for _, _, t in mine] == sorted(t for _, _, t in mine)
        for f, _, _ in mine[1:]:
            assert min(f - first, stop - f) >= least
    total = sum(stop - first for _, first, stop in ranges)
    if ranges:
        share = total / min(tasks, total)
        assert all(abs(sum(s - f for _, f, s in g) - share) <= 2 * least + 1 for g in groups)


def test_a_partition_two_spark_tasks_share_keeps_each_keys_order(kafka_broker, spark_session):
    """One partition, 10,000 records in one micro-batch: two tasks read a half each
    (`spread`), and a stateful DoFn still sees every key's records in the order they were
    produced (the step takes the earlier task's rows first)."""
    from pomset.runners.spark.stream_sources import spread
    topic = new_topic(kafka_broker, "halves", 1)
    n = 10_000
    assert len(spread([(f"{topic}:0", 0, n)], 2)) == 2
    produce(kafka_broker, topic, [{"value": {"k": f"k{i % 7}", "i": i, "t": i}}
                                  for i in range(n)])

    class Previous(pm.DoFn):
        LAST = pm.ReadModifyWriteStateSpec("last")

        def process(self, kv, last=pm.DoFn.StateParam(LAST)):
            yield kv[0], last.read(), kv[1]
            last.write(kv[1])

    flags = runner_flags("spark-streaming") + SPARK_FLAGS + ["--quiet"]
    with pm.Pipeline(options=pm.PipelineOptions(flags)) as p:
        seen = (p | pm.ReadFromKafka(kafka_broker, topic, timestamp="t", until="latest")
                | pm.Map(lambda r: (r["k"], r["i"])) | pm.ParDo(Previous()))
    got = [wv.value for wv in p.result.collect(seen)]
    assert len(got) == n
    assert all(before == (i - 7 if i >= 7 else None) for _, before, i in got)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from("abcd"), st.tuples(st.integers(0, 50), st.integers(0, 50)),
                       min_size=1),
       st.one_of(st.none(), st.integers(1, 120)))
def test_a_capped_micro_batch_shares_its_records_among_partitions_by_backlog(parts, most):
    from pomset.runners.spark.stream_sources import at_most
    start = {p: a for p, (a, _) in parts.items()}
    ends = {p: b for p, (_, b) in parts.items()}
    got = at_most(start, ends, most)
    backlog = {p: max(0, ends[p] - start[p]) for p in parts}
    assert all(start[p] <= got[p] <= max(start[p], ends[p]) for p in parts)
    released = sum(got[p] - start[p] for p in parts)
    total = sum(backlog.values())
    if most is None or total <= most:
        assert released == total
    else:   # each within one of its fair share, and none with records waiting left out
        fair = {p: most * n / total for p, n in backlog.items()}
        assert all(abs(got[p] - start[p] - fair[p]) < 1 for p in parts)
        assert all(got[p] > start[p] for p in parts if backlog[p])
        assert most <= released <= most + sum(1 for p in parts if 0 < fair[p] < 1)


def test_a_spark_read_to_the_latest_offsets_in_capped_micro_batches(kafka_broker):
    """--max_records_per_batch: micro-batches of at most that many records until the offsets
    latest at the start; only the last says the partitions finished, and then none follows."""
    from pomset.runners.spark.stream_sources import KafkaReader as StreamReader
    topic = new_topic(kafka_broker, "capped-spark", 3)
    sizes = {0: 6, 1: 0, 2: 3}
    produce(kafka_broker, topic, [{"value": {"t": i}, "partition": p}
                                  for p, n in sizes.items() for i in range(n)])
    source = pm.ReadFromKafka(kafka_broker, topic, timestamp="t", until="latest")
    channels = {f"{topic}:{p}": f"c{p}" for p in sizes}
    reader = StreamReader(channels, source, "capped", "capped-spark", True, 60, True,
                          max_records=4)
    offsets, released, finished = reader.initialOffset(), [], []
    while True:
        end = reader.latestOffset(offsets, None)
        if end == offsets:
            break
        released.append(sum(end["o"].values()) - sum(offsets["o"].values()))
        finished.append(sorted(end["finished"]))
        offsets = end
    assert released == [4, 4, 1]
    assert finished[-1] == sorted(channels) and finished[0] == [f"{topic}:1"]
    assert offsets["o"] == {f"{topic}:{p}": n for p, n in sizes.items()}
    reader.stop()


def test_a_capped_micro_batch_reads_a_little_of_every_partition_that_waits(kafka_broker):
    """A partition whose share of --max_records_per_batch rounds to none beside a big
    backlog still gets a record: it is read, and not marked idle while the big one drains
    (an idle partition's records would fall behind the watermark)."""
    from pomset.runners.spark.stream_sources import KafkaReader as StreamReader
    topic = new_topic(kafka_broker, "capped-idle-spark", 2)
    produce(kafka_broker, topic, [{"value": {"t": i}, "partition": 0} for i in range(200)]
            + [{"value": {"t": 1}, "partition": 1} for _ in range(2)])
    source = pm.ReadFromKafka(kafka_broker, topic, timestamp="t", idle_timeout=IDLE_S)
    channels = {f"{topic}:0": "c0", f"{topic}:1": "c1"}
    reader = StreamReader(channels, source, "capped-idle", "capped-idle-spark", False, 60, True,
                          max_records=10)
    offsets = reader.latestOffset(reader.initialOffset(), None)
    assert offsets["o"] == {f"{topic}:0": 10, f"{topic}:1": 1}
    time.sleep(IDLE_S + 0.1)
    later = reader.latestOffset(offsets, None)
    assert later["o"] == {f"{topic}:0": 20, f"{topic}:1": 2} and later["idle"] == []
    reader.stop()


def test_pomset_kafka_up_and_down(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path))
    cli = [sys.executable, "-m", "pomset.cli", "kafka"]
    up = subprocess.run(cli + ["up"], env=env, capture_output=True, text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    servers = up.stdout.strip().rsplit("=", 1)[1]
    try:
        topic = new_topic(servers, "cli", 1)
        produce(servers, topic, [{"value": {"x": 1}}])
        assert [json.loads(m.value()) for m in read_topic(servers, topic)] == [{"x": 1}]
        status = subprocess.run(cli + ["status"], env=env, capture_output=True, text=True)
        assert servers in status.stdout
    finally:
        down = subprocess.run(cli + ["down"], env=env, capture_output=True, text=True, timeout=60)
    assert down.stdout.strip() == "Kafka broker stopped"
    status = subprocess.run(cli + ["status"], env=env, capture_output=True, text=True)
    assert status.returncode == 1


def test_json_records_with_a_declared_schema_are_rows_and_misfits_dead_letters(kafka_broker):
    topic = new_topic(kafka_broker, "typed", 1)
    produce(kafka_broker, topic, [{"value": {"t": 1, "user": "u1", "n": "3"}},
                                  {"value": {"t": 2, "user": "u2", "n": "many"}},
                                  {"value": {"t": 3, "user": "u1", "n": 4}}])
    with pm.Pipeline(options=pm.PipelineOptions(["--quiet"])) as p:
        good, bad = p | "typed" >> pm.ReadFromKafka(
            kafka_broker, topic, timestamp="t", until="latest",
            schema={"user": str, "n": int}).with_exception_handling()
        assert good.schema.names == ["user", "n"]
        totals = (good | pm.WindowInto(pm.FixedWindows(60))
                  | pm.GroupBy("user").aggregate_field("n", pm.Sum, "total")).keep()
        bad.keep()
    assert [wv.value for wv in p.result.collect(totals)] == [pm.Row(user="u1", total=7)]
    [letter] = [wv.value for wv in p.result.collect(bad)]
    assert letter.error.endswith("offset 1: record does not fit the schema: field 'n' = "
                                 "'many' is not a int64")


def _windowed_sums(bootstrap: str, topic: str, runner: str, *more: str, **read) -> tuple:
    flags = runner_flags(runner) + ["--quiet", "--bundle_size=50", *more]
    with pm.Pipeline(options=pm.PipelineOptions(flags)) as p:
        sums = (p | "Read" >> pm.ReadFromKafka(bootstrap, topic, timestamp="t", until="latest",
                                               **read)
                | "Key" >> pm.Map(lambda r: (r["k"], r["v"]))
                | "Window" >> pm.WindowInto(pm.FixedWindows(60))
                | "Sum" >> pm.CombinePerKey(sum))
    return sorted(wv.value for wv in p.result.collect(sums)), p.result.metrics()["Sum"]


@pytest.mark.parametrize("runner", ["local", "spark-streaming"])
def test_a_bounded_read_gives_the_batch_answer_by_default(kafka_broker, runner, request,
                                                         tmp_path):
    """2,000 events out of order over 3 partitions, read with until="latest": the windowed sums
    are the batch answer, none late, also on Spark in micro-batches of at most 700 records;
    with watermark="events" the watermark trails the events read, so the run drops late ones
    and ends with a warning saying how many and why."""
    if runner.startswith("spark"):
        request.getfixturevalue("spark_session")
    topic = new_topic(kafka_broker, "backfill", 3)
    events = [{"k": "abc"[i % 3], "v": i, "t": (i * 7919) % 6000} for i in range(2000)]
    produce(kafka_broker, topic, [{"value": e, "partition": i % 3} for i, e in enumerate(events)])
    batch = Counter()
    for e in events:
        batch[(e["k"], e["t"] // 60)] += e["v"]
    sums, counts = _windowed_sums(kafka_broker, topic, runner)
    assert sorted(sums) == sorted((k, v) for (k, _), v in batch.items())
    assert counts["late"] == counts["dropped"] == 0
    if runner.startswith("spark"):
        checkpoint = tmp_path / "capped"
        capped, counts = _windowed_sums(kafka_broker, topic, runner, "--max_records_per_batch=700",
                                        f"--checkpoint_dir={checkpoint}")
        assert capped == sums and counts["late"] == counts["dropped"] == 0
        assert len([f for f in os.listdir(checkpoint / "commits") if f.isdigit()]) == 3
    if runner == "local":   # Spark's one micro-batch to the end sees every event at once
        with pytest.warns(pm.LateDataWarning, match=r"'Sum' dropped [\d,]+ late elements"):
            _, counts = _windowed_sums(kafka_broker, topic, runner, watermark="events")
        assert counts["dropped"] > 0


def test_watermark_choices_are_checked():
    with pytest.raises(ValueError, match="watermark must be 'end' .* or 'events'"):
        pm.ReadFromKafka("h:1", "t", until="latest", watermark="late")
    with pytest.raises(ValueError, match="without until= it never ends"):
        pm.ReadFromKafka("h:1", "t", watermark="end")
