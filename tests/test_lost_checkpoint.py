"""Checkpoint directories that vanish or are shared (issue 57), against the embedded broker: a
run holds its checkpoint directory's lock, so a second copy of the pipeline on it is refused at
start naming the process that holds it, and a crash frees it; a directory deleted under a
running pipeline stops it with a `CheckpointError` naming the directory; a run whose directory
holds nothing while Kafka holds its pipeline's output and progress mark refuses to start
unless told to restart or to resume from the mark (`--on_lost_checkpoint`)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

import pomset as pm
from pomset.sdk.errors import CheckpointError

from kafka_util import new_topic, produce, read_topic
from test_kafka import SPARK_FLAGS
from test_reliability import CHECKPOINTED, _read_all, _run_id, _sum_job


def _records(key: str, times: range) -> list:
    return [{"value": {"k": key, "v": t, "t": t}} for t in times]


def _sums(bootstrap: str, topic: str) -> Counter:
    """How often each (key, window end, sum) is in the output topic."""
    return Counter((*json.loads(m.value()), float(dict(m.headers())["pomset-window-end"]))
                   for m in read_topic(bootstrap, topic))


def _flags(runner: str, checkpoint) -> list:
    return [f"--runner={runner}", f"--checkpoint_dir={checkpoint}", *CHECKPOINTED[:2],
            *(["--streaming", *SPARK_FLAGS] if runner == "spark" else [])]


def _start_and_read(command: list, bootstrap: str, checkpoint, topic: str) -> subprocess.Popen:
    """Start a pipeline that never ends and wait until it has committed all of `topic`."""
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    deadline = time.monotonic() + 300
    while not (checkpoint.joinpath("pomset.json").exists() and _read_all(
            bootstrap, f"{_run_id(checkpoint)}-read", topic)):
        assert run.poll() is None, run.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "the run did not read its input"
        time.sleep(0.3)
    return run


def _remove(directory) -> None:
    """Delete the directory of a running query, whose writes there meanwhile can make one
    `rmtree` find it not empty: again, until it is gone."""
    deadline = time.monotonic() + 30
    while directory.exists():
        try:
            shutil.rmtree(directory)
        except OSError:
            assert time.monotonic() < deadline, f"{directory} could not be deleted"


def _kill(run: subprocess.Popen) -> None:
    if run.poll() is None:
        os.killpg(run.pid, signal.SIGKILL)
    run.wait(60)


def test_the_lock_names_its_holder_and_a_killed_holder_frees_it(tmp_path):
    from pomset.sdk.checkpoint_lock import CheckpointLock
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pomset.sdk.checkpoint_lock import "
         "CheckpointLock; lock = CheckpointLock(sys.argv[1]); print('held', flush=True); "
         "time.sleep(600)", str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(CheckpointError, match=re.escape(
                f"checkpoint directory {tmp_path} is in use by process {holder.pid} on host ")):
            CheckpointLock(str(tmp_path))
    finally:
        holder.kill()
        holder.wait()
    lock = CheckpointLock(str(tmp_path))   # SIGKILL released it
    with pytest.raises(CheckpointError, match="in use by process"):
        CheckpointLock(str(tmp_path))   # another run in this process is refused too
    lock.release()
    CheckpointLock(str(tmp_path)).release()


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_a_second_copy_of_a_pipeline_on_its_checkpoint_dir_is_refused_at_start(
        kafka_broker, runner, tmp_path):
    source = new_topic(kafka_broker, "twice-in", 1)
    out = new_topic(kafka_broker, "twice-out", 1)
    produce(kafka_broker, source, _records("a", range(0, 30)))
    checkpoint = tmp_path / "checkpoint"
    flags = _flags(runner, checkpoint)
    first = _start_and_read(_sum_job(kafka_broker, source, out, flags), kafka_broker,
                            checkpoint, source)
    try:
        second = subprocess.run(_sum_job(kafka_broker, source, out, flags + ["--until=latest"]),
                                capture_output=True, text=True, timeout=300)
        assert second.returncode != 0
        assert (f"CheckpointError: checkpoint directory {checkpoint} is in use by process "
                f"{first.pid} on host ") in second.stderr, second.stderr[-3000:]
        assert first.poll() is None, "the first copy died: " + first.stderr.read()[-3000:]
    finally:
        _kill(first)
    if runner == "local":   # the crashed copy's lock is free: its restart finishes the job
        third = subprocess.run(_sum_job(kafka_broker, source, out, flags + ["--until=latest"]),
                               capture_output=True, text=True, timeout=300)
        assert third.returncode == 0, third.stderr[-3000:]
        assert _sums(kafka_broker, out) == Counter({("a", 45, 10.0): 1, ("a", 145, 20.0): 1,
                                                    ("a", 245, 30.0): 1})


def _deleted_under_a_run(bootstrap: str, runner: str, tmp_path) -> tuple:
    """Delete the checkpoint directory of a running pipeline: it stops naming the directory,
    and its restart is refused naming the run whose output Kafka holds. Returns the topics,
    the directory, the command that reads to the end and the lost run's id."""
    source = new_topic(bootstrap, f"lost-{runner}-in", 1)
    out = new_topic(bootstrap, f"lost-{runner}-out", 1)
    checkpoint = tmp_path / "checkpoint"
    flags = _flags(runner, checkpoint)
    # window [0, 10) of a closes (the watermark reaches 50); [50, 60) of z stays open
    produce(bootstrap, source, _records("a", range(0, 10)) + _records("z", range(50, 51)))
    run = _start_and_read(_sum_job(bootstrap, source, out, flags), bootstrap, checkpoint, source)
    try:
        run_id = _run_id(checkpoint)
        _remove(checkpoint)
        produce(bootstrap, source, _records("b", range(60, 70)) + _records("y", range(100, 101)))
        run.wait(120)
    finally:
        _kill(run)
    stderr = run.stderr.read()
    assert run.returncode != 0
    assert f"CheckpointError: checkpoint directory {checkpoint} was deleted or replaced while " \
           f"the run was running" in stderr, stderr[-3000:]
    assert "FileNotFoundError" not in stderr
    assert not checkpoint.joinpath("pomset.json").exists()

    command = _sum_job(bootstrap, source, out, flags + ["--until=latest"])
    refused = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0
    assert (f"CheckpointError: checkpoint directory {checkpoint} holds no run, but Kafka holds "
            f"the output of this pipeline's run {run_id} (checkpointed in {checkpoint}) up to "
            f"its progress mark ") in refused.stderr, refused.stderr[-3000:]
    assert "--on_lost_checkpoint=resume_from_mark" in refused.stderr
    assert not checkpoint.joinpath("pomset.json").exists(), "a refused run recorded a new run"
    assert _sums(bootstrap, out) == Counter({("a", 45, 10.0): 1})
    return source, out, checkpoint, command, run_id


def test_a_checkpoint_dir_deleted_under_a_local_run_stops_it_and_its_restart_refuses(
        kafka_broker, tmp_path):
    _, out, _, command, run_id = _deleted_under_a_run(kafka_broker, "local", tmp_path)
    resumed = subprocess.run(command + ["--on_lost_checkpoint=resume_from_mark"],
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"--on_lost_checkpoint=resume_from_mark: run {run_id} goes on" in resumed.stderr
    # nothing read before the mark is read again: a once, z's open window lost with the state
    assert _sums(kafka_broker, out) == Counter({("a", 45, 10.0): 1, ("b", 645, 70.0): 1,
                                                ("y", 100, 110.0): 1})


def test_a_checkpoint_dir_deleted_under_a_spark_query_stops_it_and_its_restart_refuses(
        kafka_broker, tmp_path):
    source, out, checkpoint, command, run_id = _deleted_under_a_run(kafka_broker, "spark",
                                                                    tmp_path)
    # the stopped query's tasks wrote state there again: no new run starts over it
    restart = command + ["--on_lost_checkpoint=restart"]
    over_leftovers = subprocess.run(restart, capture_output=True, text=True, timeout=300)
    assert over_leftovers.returncode != 0
    assert re.search(f"CheckpointError: checkpoint directory {re.escape(str(checkpoint))} holds "
                     r"no run \(pomset.json is missing\) but a run's checkpoint files: "
                     r"(offsets, )?state;", over_leftovers.stderr), over_leftovers.stderr[-3000:]
    shutil.rmtree(checkpoint)
    # Spark's marks name no source offsets: it cannot resume from one alone, and says so
    from pomset.runtime.lost_checkpoint import start_run_state
    os.makedirs(checkpoint)
    p = pm.Pipeline(options=pm.PipelineOptions([]))
    (p | "read" >> pm.ReadFromKafka(kafka_broker, source, timestamp="t")
     | "write" >> pm.WriteToKafka(kafka_broker, out))
    with pytest.raises(CheckpointError, match="This runner cannot resume from Kafka's mark alone"):
        start_run_state(str(checkpoint), p.nodes, "resume_from_mark", resumable=False)
    assert os.listdir(checkpoint) == []
    restarted = subprocess.run(restart, capture_output=True, text=True, timeout=300)
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    assert "--on_lost_checkpoint=restart: starting a new run" in restarted.stderr
    assert _run_id(checkpoint) != run_id
    # read again from the start, as asked: a's window twice
    assert _sums(kafka_broker, out) == Counter({("a", 45, 10.0): 2, ("z", 50, 60.0): 1,
                                                ("b", 645, 70.0): 1, ("y", 100, 110.0): 1})


def test_a_spark_failure_met_once_the_checkpoint_dir_is_gone_is_that_checkpoint_error(
        spark_session, tmp_path):
    from pomset.runners.spark.failures import SparkJobError, user_errors
    from pomset.sdk.checkpoint_lock import CheckpointLock
    missing = tmp_path / "no-such-table"

    def fail() -> None:   # a job Spark fails on a file, as a query's write to a lost directory
        spark_session.read.parquet(str(missing)).collect()

    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    lock = CheckpointLock(str(checkpoint))
    with pytest.raises(SparkJobError):   # the directory is there: the failure is itself
        with user_errors(str(checkpoint), lock):
            fail()
    shutil.rmtree(checkpoint)
    checkpoint.write_text("a file where the directory was")
    with pytest.raises(CheckpointError, match=re.escape(
            f"checkpoint directory {checkpoint} was deleted or replaced while the run was "
            f"running (its lock {checkpoint}/pomset.lock is gone)")) as lost:
        with user_errors(str(checkpoint), lock):
            fail()
    assert isinstance(lost.value.__cause__, SparkJobError)   # what Spark met, chained
    assert str(missing) in str(lost.value.__cause__)
    lock.release()


def test_a_checkpoint_dir_replaced_under_a_spark_query_stops_it_naming_the_dir(
        kafka_broker, tmp_path):
    """A file in the directory's place: every write Spark makes there from then on fails
    (its offset log's, a stateful task's state commit), and the run stops with the
    CheckpointError naming the directory, not with Spark's own failure."""
    source = new_topic(kafka_broker, "replaced-in", 1)
    out = new_topic(kafka_broker, "replaced-out", 1)
    checkpoint = tmp_path / "checkpoint"
    produce(kafka_broker, source, _records("a", range(0, 10)))
    run = _start_and_read(_sum_job(kafka_broker, source, out, _flags("spark", checkpoint)),
                          kafka_broker, checkpoint, source)
    try:
        _remove(checkpoint)
        checkpoint.write_text("a file where the directory was")
        produce(kafka_broker, source, _records("b", range(60, 70)))
        run.wait(120)
    finally:
        _kill(run)
    stderr = run.stderr.read()
    assert run.returncode != 0
    assert stderr.rstrip().splitlines()[-1].startswith(
        f"pomset.sdk.errors.CheckpointError: checkpoint directory {checkpoint} was deleted or "
        f"replaced while the run was running (its lock {checkpoint}/pomset.lock is gone)"), \
        stderr[-3000:]
