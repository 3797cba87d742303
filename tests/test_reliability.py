"""Reliability at the edges of a checkpointed Kafka run (issue 13), against the embedded broker:
a resumed run with nothing left to read still closes its windows; adding a sink keeps the
run's identity (no output repeated); a broker killed under a writing run fails it saying why,
never hanging, and the run resumes; a run whose newest commits Kafka lost resumes from the
older checkpoint Kafka holds; damaged checkpoint files are errors naming the file, or fall
back to an older checkpoint where that is safe. (Retention: test_kafka_retention.py; a changed
pipeline: test_checkpoint_compat.py; random kills: test_chaos.py.)"""
from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from typing import Callable

import pytest
from confluent_kafka import Consumer, TopicPartition

import pomset as pm
from pomset.broker import EmbeddedKafka, free_port
from pomset.runners.spark.checkpoint_log import check_checkpoint

from kafka_util import new_topic, produce, read_topic
from test_kafka import SPARK_FLAGS, _check_against_batch, _pipeline, _produce_views, _topics, vs

SUM_JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sum_job.py")
CHECKPOINTED = ["--checkpoint_interval=0.5", "--trigger_interval=0.5", "--early_seconds=0.2"]


def _run_id(checkpoint_dir) -> str:
    with open(os.path.join(checkpoint_dir, "pomset.json")) as f:
        return json.load(f)["run_id"]


def _read_all(bootstrap: str, group: str, topic: str) -> bool:
    """Whether consumer group `group` has committed every partition of `topic` to its end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        parts = sorted(c.list_topics(topic, timeout=10).topics[topic].partitions)
        committed = c.committed([TopicPartition(topic, p) for p in parts], timeout=10)
        ends = [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts]
    finally:
        c.close()
    return all(tp.offset == end for tp, end in zip(committed, ends))


def _run_until_read(command: list, bootstrap: str, checkpoint, label: str, topic: str,
                    also: Callable[[], bool] = lambda: True) -> None:
    """Run a pipeline that never ends until its source `label` has committed every record of
    `topic` (and `also()` holds), then stop it: the local runner with Ctrl-C (it commits what
    it did), Spark with SIGKILL (its checkpoint has every completed micro-batch)."""
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not (checkpoint.joinpath("pomset.json").exists() and _read_all(
                bootstrap, f"{_run_id(checkpoint)}-{label}", topic) and also()):
            assert run.poll() is None, run.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "the run did not read its input"
            time.sleep(0.5)
        if "--runner=spark" in command:
            os.killpg(run.pid, signal.SIGKILL)
        else:
            run.send_signal(signal.SIGINT)
        run.wait(120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_a_resumed_run_with_nothing_left_to_read_closes_its_windows(kafka_broker, runner,
                                                                    tmp_path):
    prefix = _topics(kafka_broker)
    events = [e for _, e in vs.generate(800, 20, 4, seed=3)]
    _produce_views(kafka_broker, prefix, events)
    checkpoint = tmp_path / "checkpoint"
    flags = [f"--checkpoint_dir={checkpoint}", *CHECKPOINTED]
    _run_until_read(_pipeline(kafka_broker, prefix, runner, *flags), kafka_broker, checkpoint,
                    "views", f"{prefix}views")
    sessions, _ = vs.batch_answer(events)
    before = _closed(read_topic(kafka_broker, f"{prefix}sessions"))
    assert len(before) < len(sessions), "every session was closed before the restart"
    second = subprocess.run(_pipeline(kafka_broker, prefix, runner, *flags, "--until=latest"),
                            capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    records = _check_against_batch(kafka_broker, prefix, events)
    assert len(_closed(records)) == len(sessions)


def _closed(records: list) -> set:
    """The session windows (user, end) that had their on-time pane: the watermark passed them."""
    return {(json.loads(m.value())["user"], dict(m.headers())["pomset-window-end"])
            for m in records if dict(m.headers())["pomset-pane-timing"] == b"ON_TIME"}


def test_a_resumed_local_run_fires_the_windows_its_built_in_combine_folded(kafka_broker,
                                                                            tmp_path):
    """A built-in combine on the local runner (`CombinePerKey(Sum())`, which folds columns
    natively and, under a trigger that fires once, could fire from its folded columns alone)
    resumed with nothing left to read fires every window the first run left open: its
    restored state is the kernel's."""
    source = new_topic(kafka_broker, "native-in", 1)
    out = new_topic(kafka_broker, "native-out", 1)
    records = [{"value": {"k": f"k{i % 3}", "v": i, "t": 1000 + i}} for i in range(60)]
    produce(kafka_broker, source, records)
    checkpoint = tmp_path / "checkpoint"
    flags = ["--runner=local", f"--checkpoint_dir={checkpoint}", *CHECKPOINTED[:2]]
    _run_until_read(_sum_job(kafka_broker, source, out, flags), kafka_broker, checkpoint, "read",
                    source)
    assert len(_kafka_sums(kafka_broker, out)) < len(_expected_sums(records)), \
        "the first run closed every window"
    second = subprocess.run(_sum_job(kafka_broker, source, out, flags + ["--until=latest"]),
                            capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    got = Counter()
    for k, end, total in _kafka_sums(kafka_broker, out):
        got[(k, end)] += total
    assert got == _expected_sums(records)


def _sum_job(bootstrap: str, source: str, out: str, flags: list, dead: str = "") -> list:
    """The command line of `sum_job.py`: per key, the sum of `v` in windows of 10 s, to topic
    `out`; with `dead`, records that do not decode go to that topic."""
    return [sys.executable, SUM_JOB, bootstrap, source, out, dead, "--quiet", *flags]


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_adding_a_dead_letter_sink_to_a_checkpointed_run_repeats_nothing(kafka_broker, runner,
                                                                        tmp_path):
    source = new_topic(kafka_broker, "sums-in", 1)
    out = new_topic(kafka_broker, "zz-sums", 1)
    dead = new_topic(kafka_broker, "aa-dead", 1)   # sorts first: it would have become the run's id
    records = [{"value": {"k": f"k{i % 3}", "v": i, "t": i}} for i in range(60)]
    checkpoint = tmp_path / "checkpoint"
    flags = [f"--runner={runner}", f"--checkpoint_dir={checkpoint}", *CHECKPOINTED[:2],
             *(["--streaming", *SPARK_FLAGS] if runner == "spark" else [])]
    produce(kafka_broker, source, records[:30])
    _run_until_read(_sum_job(kafka_broker, source, out, flags), kafka_broker, checkpoint, "read",
                    source)
    produce(kafka_broker, source, records[30:] + [{"value": b"{broken"}])
    second = subprocess.run(_sum_job(kafka_broker, source, out, flags + ["--until=latest"], dead),
                            capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    written = read_topic(kafka_broker, out)
    expected = Counter({(k, float(end)): n for (k, end), n in _expected_sums(records).items()})
    got = Counter()
    for m in written:
        k, total = json.loads(m.value())
        got[(k, float(dict(m.headers())["pomset-window-end"]))] += total
    assert got == expected
    assert len(written) == len(expected), "a window's sum was written more than once"
    assert [json.loads(m.value())["error"] for m in read_topic(kafka_broker, dead)] == [
        f"topic {source!r} partition 0 offset 60: record is not valid JSON: Expecting property "
        f"name enclosed in double quotes at column 2"]


def _own_broker(tmp_path) -> EmbeddedKafka:
    """A broker of the test's own on a data directory it keeps across a restart."""
    broker = EmbeddedKafka(port=free_port(), data_dir=str(tmp_path / "broker"))
    os.makedirs(broker.data_dir)
    broker.start()
    return broker


def _kill_and_restart(broker: EmbeddedKafka) -> None:
    os.killpg(broker.process.pid, signal.SIGKILL)
    broker.process.wait()
    time.sleep(1)
    broker.start()


def _start_and_read(bootstrap: str, prefix: str, checkpoint, flags: list) -> subprocess.Popen:
    """The video-sessions pipeline started, once it has committed all the input there is."""
    run = subprocess.Popen(_pipeline(bootstrap, prefix, "local", *flags),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    deadline = time.monotonic() + 300
    while not (checkpoint.joinpath("pomset.json").exists() and _read_all(
            bootstrap, f"{_run_id(checkpoint)}-views", f"{prefix}views")):
        assert run.poll() is None and time.monotonic() < deadline, "input not read"
        time.sleep(0.5)
    return run


def test_a_broker_killed_under_a_writing_run_fails_it_saying_why_and_a_restart_resumes(
        tmp_path):
    """The broker dies (SIGKILL) and comes back on its data directory while the run writes:
    the run carries on, or fails with a `KafkaError` saying why (never a bare `SystemError`,
    never a hang: a transactional request that gets no answer fails within a minute), and a
    restart resumes and runs to the end. What the embedded broker lost with the crash (the
    last second of writes, and the state of a transaction that was open) is its own: see
    README, so the output is checked exactly in the next test, where nothing was in flight."""
    broker = _own_broker(tmp_path)
    run = None
    try:
        prefix = _topics(broker.bootstrap_servers)
        events = [e for _, e in vs.generate(1500, 30, 5, seed=9)]
        _produce_views(broker.bootstrap_servers, prefix, events[:1000])
        checkpoint = tmp_path / "checkpoint"
        flags = [f"--checkpoint_dir={checkpoint}", *CHECKPOINTED]
        run = _start_and_read(broker.bootstrap_servers, prefix, checkpoint, flags)
        _produce_views(broker.bootstrap_servers, prefix, events[1000:1200])
        _kill_and_restart(broker)
        _produce_views(broker.bootstrap_servers, prefix, events[1200:])
        try:
            run.wait(30)
        except subprocess.TimeoutExpired:   # it carried on across the crash: Ctrl-C
            run.send_signal(signal.SIGINT)
            run.wait(150)
        errors = run.stderr.read()
        assert "SystemError" not in errors, errors[-3000:]
        assert run.returncode in (0, 130) or "KafkaError: Kafka output: " in errors, errors[-3000:]
        final = subprocess.run(_pipeline(broker.bootstrap_servers, prefix, "local", *flags,
                                         "--until=latest"),
                               capture_output=True, text=True, timeout=300)
        assert final.returncode == 0, final.stderr[-3000:]
    finally:
        if run is not None and run.poll() is None:
            run.kill()
        broker.stop()


def test_a_broker_killed_while_the_run_is_down_loses_nothing(tmp_path):
    """Run and broker killed with nothing in flight, both restarted on their directories: the
    run resumes from its checkpoint and the output is exact, nothing written twice."""
    broker = _own_broker(tmp_path)
    run = None
    try:
        bootstrap = broker.bootstrap_servers
        prefix = _topics(bootstrap)
        events = [e for _, e in vs.generate(1500, 30, 5, seed=9)]
        _produce_views(bootstrap, prefix, events[:1000])
        checkpoint = tmp_path / "checkpoint"
        flags = [f"--checkpoint_dir={checkpoint}", *CHECKPOINTED]
        run = _start_and_read(bootstrap, prefix, checkpoint, flags)
        time.sleep(12)   # partitions go idle after 10 s, firing what that releases
        committed = len(read_topic(bootstrap, f"{prefix}sessions"))
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        _kill_and_restart(broker)
        _produce_views(bootstrap, prefix, events[1000:])
        final = subprocess.run(_pipeline(bootstrap, prefix, "local", *flags, "--until=latest"),
                               capture_output=True, text=True, timeout=300)
        assert final.returncode == 0, final.stderr[-3000:]
        records = _check_against_batch(bootstrap, prefix, events)
        assert 0 < committed < len(records)
    finally:
        if run is not None and run.poll() is None:
            run.kill()
        broker.stop()


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_a_run_resumes_from_the_older_checkpoint_whose_output_kafka_holds(kafka_broker, runner,
                                                                         tmp_path):
    """Kafka's progress mark set back two checkpoints, as a broker that lost acknowledged
    writes leaves it: the local runner resumes from that epoch's checkpoint (one of the 3
    kept), Spark runs the micro-batches after it again; each says so, and writes the file
    parts after it anew."""
    source = new_topic(kafka_broker, "sums-in", 1)
    out = new_topic(kafka_broker, "sums", 1)
    files = tmp_path / "out" / "sums"
    records = [{"value": {"k": f"k{i % 3}", "v": i, "t": i}} for i in range(60)]
    checkpoint = tmp_path / "checkpoint"
    spark = ["--runner=spark", "--streaming", *SPARK_FLAGS] if runner == "spark" else []
    command = _sum_job(kafka_broker, source, f"{out},file:{files}",
                       [*spark, f"--checkpoint_dir={checkpoint}", *CHECKPOINTED[:2]])
    # the local runner commits an epoch when stopped; Spark a micro-batch per tick meanwhile
    for i in range(0, 40, 40 if spark else 10):
        produce(kafka_broker, source, records[i:i + (40 if spark else 10)])
        _run_until_read(command, kafka_broker, checkpoint, "read", source, also=lambda: not spark
                        or len(_spark_checkpoint_files(checkpoint, "commits")) >= 3)
    if spark:
        newest = int(_spark_checkpoint_files(checkpoint, "commits")[-1].rsplit("/", 1)[1])
        mark = newest - 2
        said = (f"Kafka holds the output of micro-batches up to {mark}, but Spark's checkpoint "
                f"in {checkpoint} had completed up to {newest}")
    else:
        epochs = sorted(int(p[-10:-4]) for p in glob.glob(str(checkpoint / "epoch-*.pkl")))
        assert len(epochs) == 3
        mark, newest = epochs[0], epochs[-1]
        said = (f"Kafka holds the output of epoch {mark} of run {_run_id(checkpoint)}, but "
                f"{checkpoint} had checkpoints up to epoch {newest}")
    assert mark >= 0
    _set_mark(kafka_broker, checkpoint, mark)
    produce(kafka_broker, source, records[40:])
    done = subprocess.run(command + ["--until=latest"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"CheckpointWarning: {said}" in done.stderr, done.stderr[-5000:]
    assert _file_sums(files) == _expected_sums(records)


def _set_mark(bootstrap: str, checkpoint, mark: int) -> None:
    """Set the run's progress mark in Kafka back to `mark`."""
    with open(checkpoint / "pomset.json") as f:
        state = json.load(f)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{state['run_id']}-progress",
                  "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(state["progress_topic"], 0, mark, metadata=str(mark))],
             asynchronous=False)
    c.close()


def _file_sums(prefix) -> Counter:
    """(key, window end) -> sum, over every part file a run wrote."""
    got: Counter = Counter()
    for path in glob.glob(f"{prefix}*"):
        with open(path) as f:
            for line in f:
                row = json.loads(line)
                got[(row["key"], row["window_end"])] += row["value"] * row.get("diff", 1)
    return got


def _damage(path: str) -> None:
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def test_a_damaged_checkpoint_falls_back_to_the_one_before_when_that_is_safe(kafka_broker,
                                                                           tmp_path):
    """With file sinks only, an older checkpoint is a safe place to resume: the parts after it
    are written again."""
    source = new_topic(kafka_broker, "sums-in", 1)
    records = [{"value": {"k": f"k{i % 3}", "v": i, "t": i}} for i in range(60)]
    checkpoint, out = tmp_path / "checkpoint", tmp_path / "out" / "sums"
    flags = ["--runner=local", f"--checkpoint_dir={checkpoint}", *CHECKPOINTED[:2]]
    command = _sum_job(kafka_broker, source, f"file:{out}", flags)
    for i in range(0, 40, 10):   # a run per ten records: several checkpoints
        produce(kafka_broker, source, records[i:i + 10])
        _run_until_read(command, kafka_broker, checkpoint, "read", source)
    epochs = sorted(glob.glob(str(checkpoint / "epoch-*.pkl")))
    assert len(epochs) == 3, epochs
    _damage(epochs[-1])
    produce(kafka_broker, source, records[40:])
    done = subprocess.run(command + ["--until=latest"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"CheckpointWarning: checkpoint file {epochs[-1]} is damaged" in done.stderr
    assert _file_sums(out) == _expected_sums(records)


def test_a_damaged_checkpoint_whose_output_kafka_holds_is_an_error_naming_it(kafka_broker,
                                                                            tmp_path):
    source = new_topic(kafka_broker, "sums-in", 1)
    out = new_topic(kafka_broker, "sums", 1)
    produce(kafka_broker, source, [{"value": {"k": "a", "v": i, "t": i}} for i in range(20)])
    checkpoint = tmp_path / "checkpoint"
    command = _sum_job(kafka_broker, source, out, [f"--checkpoint_dir={checkpoint}",
                                                   *CHECKPOINTED[:2]])
    _run_until_read(command, kafka_broker, checkpoint, "read", source)
    newest = sorted(glob.glob(str(checkpoint / "epoch-*.pkl")))[-1]
    _damage(newest)
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode != 0
    assert f"CheckpointError: checkpoint file {newest} is damaged" in again.stderr
    assert "would write output twice" in again.stderr
    with open(checkpoint / "pomset.json", "w"):
        pass   # emptied, as a crash of a non-atomic write would leave it
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert f"CheckpointError: the run's metadata {checkpoint / 'pomset.json'} is damaged" in \
        again.stderr


def _expected_sums(records: list) -> Counter:
    out: Counter = Counter()
    for r in records:
        v = r["value"]
        out[(v["k"], v["t"] // 10 * 10 + 10)] += v["v"]
    return out


def _kafka_sums(bootstrap: str, topic: str) -> list:
    return [(json.loads(m.value())[0], float(dict(m.headers())["pomset-window-end"]),
             json.loads(m.value())[1]) for m in read_topic(bootstrap, topic)]


def _spark_checkpoint_files(checkpoint, log: str) -> list:
    return sorted((p for p in glob.glob(str(checkpoint / log / "*")) if p.rsplit("/", 1)[1]
                   .isdigit()), key=lambda p: int(p.rsplit("/", 1)[1]))


def test_spark_checkpoint_files_damaged_are_repaired_where_safe_else_named(kafka_broker,
                                                                          tmp_path):
    source = new_topic(kafka_broker, "sums-in", 1)
    out = new_topic(kafka_broker, "sums", 1)
    records = [{"value": {"k": f"k{i % 3}", "v": i, "t": i}} for i in range(40)]
    checkpoint = tmp_path / "checkpoint"
    command = _sum_job(kafka_broker, source, out, ["--runner=spark", "--streaming", *SPARK_FLAGS,
                                                   f"--checkpoint_dir={checkpoint}",
                                                   *CHECKPOINTED[:2]])
    produce(kafka_broker, source, records[:20])
    _run_until_read(command, kafka_broker, checkpoint, "read", source)
    newest_commit = _spark_checkpoint_files(checkpoint, "commits")[-1]
    _damage(newest_commit)
    produce(kafka_broker, source, records[20:])
    done = subprocess.run(command + ["--until=latest"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"CheckpointWarning: Spark checkpoint file {newest_commit} was damaged" in done.stderr
    sums = _kafka_sums(kafka_broker, out)
    assert Counter({(k, end): n for k, end, n in sums}) == Counter(
        {(k, float(end)): n for (k, end), n in _expected_sums(records).items()})
    assert len(sums) == len(_expected_sums(records)), "a window's sum was written twice"
    # what a damaged file Spark cannot do without says, on the checkpoint that run left
    newest_offsets = _spark_checkpoint_files(checkpoint, "offsets")[-1]
    _damage(newest_offsets)
    with pytest.raises(pm.CheckpointError, match=rf"Spark checkpoint file {newest_offsets} is "
                                                 r"damaged: .* micro-batch \d+ completed"):
        check_checkpoint(str(checkpoint), kafka_mark=None)
    with open(checkpoint / "metadata", "w") as f:
        f.write('{"id": "3b')
    with pytest.raises(pm.CheckpointError, match=rf"Spark checkpoint file "
                                                 rf"{checkpoint / 'metadata'} is damaged"):
        check_checkpoint(str(checkpoint), kafka_mark=None)
