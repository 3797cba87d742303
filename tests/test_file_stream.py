"""File sources read as a stream on the local runner (`--streaming`): a run without
`--streaming_until` keeps going and takes files added later, stops on SIGTERM after committing (exit status 143, one line),
and resumes from its checkpoint without reading a file twice; the release order and the
watermark rule are `runtime.file_stream`'s, shared with Spark's file stream (the conformance
suite compares the panes)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

import pomset as pm
from pomset.runtime.file_stream import FileListing, file_watermark
from pomset.windowing import MAX_MICROS, MIN_MICROS

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "file_stream_job.py")


def _write_events(path, events) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps({"k": k, "v": v, "t": t}) + "\n" for k, v, t in events))
    os.replace(tmp, path)   # a file appears whole


def _lines(directory) -> Counter:
    """The sink's lines over its part files, as (key, window start, value)."""
    return Counter((r["key"], r["window_start"], r["value"])
                   for f in directory.glob("o-*.jsonl")
                   for r in map(json.loads, f.read_text().splitlines()))


def _wait_for(predicate, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_local_stream_of_files_runs_until_stopped_and_resumes_from_its_checkpoint(tmp_path):
    inbox, out = tmp_path / "in", tmp_path / "out"
    inbox.mkdir()
    _write_events(inbox / "1.jsonl", [("a", 1, 5), ("a", 2, 25), ("b", 3, 40), ("a", 4, 52)])
    flags = [f"--input={inbox}", f"--output={out}/o", "--max_out_of_orderness=10",
             "--trigger_interval=0.2", "--checkpoint_interval=0.2",
             f"--checkpoint_dir={tmp_path}/ck"]
    job = subprocess.Popen([sys.executable, JOB, *flags], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    try:
        # the watermark is 52 - 10: only [0, 30) is complete
        _wait_for(lambda: _lines(out), job)
        assert _lines(out) == Counter([("a", 0.0, 3)])
        time.sleep(1)   # every file there is read: the run goes on, waiting for more
        assert job.poll() is None
        # then 95 - 10: [30, 60) too (b's 33 comes behind the watermark of 42, in time for
        # its window), while a's 95 waits in [90, 120)
        _write_events(inbox / "2.jsonl", [("b", 5, 33), ("a", 6, 95)])
        _wait_for(lambda: len(_lines(out)) == 3, job)
        job.send_signal(signal.SIGTERM)
        _, err = job.communicate(timeout=30)
        assert job.returncode == 143, err[-3000:]   # as shells report SIGTERM
        assert f"resume with --checkpoint_dir={tmp_path}/ck" in err.splitlines()[-1], err
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    # resumed: only the new file is read, a's 95 still waiting with its window; the stream
    # ends once the files there at the start are read, closing every window
    _write_events(inbox / "3.jsonl", [("a", 7, 100)])
    resumed = subprocess.run([sys.executable, JOB, *flags, "--streaming_until=latest"],
                             capture_output=True, text=True, timeout=60)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert _lines(out) == Counter([("a", 0.0, 3), ("a", 30.0, 4), ("b", 30.0, 8),
                                   ("a", 90.0, 13)])


def test_files_are_released_oldest_first_at_most_n_a_micro_batch(tmp_path):
    for i, name in enumerate(["c", "a", "b"]):
        (tmp_path / f"{name}.txt").write_text("x\n")
        os.utime(tmp_path / f"{name}.txt", ns=(10 ** 9 * (i + 1),) * 2)
    listing = FileListing(str(tmp_path / "*.txt"), max_files=2)
    assert listing.list_new() == 3
    assert [os.path.basename(f) for f in listing.files] == ["c.txt", "a.txt", "b.txt"]
    assert (listing.upto(0, 3), listing.upto(2, 3)) == (2, 3)
    (tmp_path / "0.txt").write_text("x\n")   # newer, though first by name: after the others
    assert listing.list_new() == 4 and listing.files[-1].endswith("0.txt")
    assert FileListing(str(tmp_path / "*.txt"), files=listing.files[:2]).list_new() == 4


def test_the_watermark_trails_the_latest_event_time_and_ends_at_the_end_of_time():
    assert file_watermark(MIN_MICROS, 5_000_000) == MIN_MICROS   # nothing read yet
    assert file_watermark(60_000_000, 5_000_000) == 55_000_000
    assert file_watermark(60_000_000, None) == MIN_MICROS   # no --max_out_of_orderness
    assert file_watermark(60_000_000, 5_000_000, ended=True) == MAX_MICROS


def test_a_test_stream_and_a_stream_of_files_are_refused_together(tmp_path):
    (tmp_path / "in.txt").write_text("x\n")
    p = pm.Pipeline(options=pm.PipelineOptions(["--streaming", "--quiet"]))
    (p | pm.TestStream().add_elements(["y"]).advance_watermark_to_infinity(),
     p | pm.ReadFromText(str(tmp_path / "in.txt"))) | pm.Flatten()
    with pytest.raises(pm.PipelineConstructionError,
                       match=r"a TestStream or streams \(Kafka, or files with --streaming\)"):
        p.run()
