"""A checkpoint directory on a disk that fills up: the run fails with a `CheckpointError`
naming the directory, the file and the reason, leaves no temporary file behind, and, started
again once there is room, resumes and writes exactly what it should. The disk is a real one
that really fills: a small tmpfs mounted for the test (the tests run as root)."""
from __future__ import annotations

import errno
import os
import subprocess
from collections import Counter

import pytest

import pomset as pm

from kafka_util import new_topic, produce
from sum_job import main as sum_job
from test_reliability import (CHECKPOINTED, _expected_sums, _kafka_sums, _run_until_read,
                              _sum_job)


@pytest.fixture
def small_disk(tmp_path):
    """A file system of its own, 1 MiB of memory (tmpfs), that a test can fill."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    assert mounted.returncode == 0, f"this test mounts a tmpfs, as root: {mounted.stderr}"
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def fill(disk, leave: int = 0) -> str:
    """Write a file on `disk` until the disk is full, then give back `leave` bytes of it; the
    file."""
    path = os.path.join(disk, "filler")
    chunk = b"\0" * 4096
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
        f.truncate(max(0, f.tell() - leave))
    return path


def assert_sums(bootstrap: str, out: str, records: list) -> None:
    """That topic `out` holds sum_job's sums of `records`, each exactly once."""
    got: Counter = Counter()
    for k, end, total in _kafka_sums(bootstrap, out):
        got[(k, end)] += total
    assert got == _expected_sums(records)


def test_a_full_disk_while_checkpointing_names_the_directory_and_a_restart_resumes(
        kafka_broker, small_disk):
    source = new_topic(kafka_broker, "full-in", 1)
    out = new_topic(kafka_broker, "full-out", 1)
    records = [{"value": {"k": f"k{i % 3}", "v": i, "t": i}} for i in range(60)]
    checkpoint = small_disk / "checkpoint"
    flags = ["--runner=local", f"--checkpoint_dir={checkpoint}", *CHECKPOINTED[:2]]
    produce(kafka_broker, source, records[:30])
    _run_until_read(_sum_job(kafka_broker, source, out, flags), kafka_broker, checkpoint, "read",
                    source)
    run = [kafka_broker, source, out, "", "--quiet", *flags, "--until=latest"]
    before = sorted(os.listdir(checkpoint))
    produce(kafka_broker, source, records[30:])
    filler = fill(small_disk)
    with pytest.raises(pm.CheckpointError) as info:
        sum_job(run)
    msg = str(info.value)
    assert f"in the checkpoint directory {checkpoint}: No space left on device (ENOSPC)" in msg
    assert "cannot write epoch-" in msg and "free space there and start the run again" in msg
    assert sorted(os.listdir(checkpoint)) == before   # no temporary file left behind
    os.remove(filler)
    sum_job(run)
    assert_sums(kafka_broker, out, records)


def test_a_full_disk_under_a_spark_query_names_its_checkpoint_directory_and_a_restart_resumes(
        kafka_broker, small_disk, spark_session):
    """The disk fills while Spark writes its checkpoint (its offset and commit logs, its state
    store): Spark's own IOException becomes the `CheckpointError` naming the directory."""
    source = new_topic(kafka_broker, "spark-full-in", 1)
    out = new_topic(kafka_broker, "spark-full-out", 1)
    records = [{"value": {"k": f"k{i % 3}", "v": i, "t": i}} for i in range(60)]
    produce(kafka_broker, source, records)
    checkpoint = small_disk / "checkpoint"
    run = [kafka_broker, source, out, "", "--quiet", "--runner=spark",
           f"--checkpoint_dir={checkpoint}", "--until=latest"]
    filler = fill(small_disk, leave=64 << 10)
    with pytest.raises(pm.CheckpointError) as info:
        sum_job(run)
    msg = str(info.value)
    assert msg.startswith(f"Spark could not write to the checkpoint directory {checkpoint}: "
                          f"No space left on device (ENOSPC)"), msg
    assert "free space there and start the run again" in msg
    os.remove(filler)
    sum_job(run)
    assert_sums(kafka_broker, out, records)
