"""DGS input streams read where they are handled (issue 19; Kallas et al., Sec. 3.4: each
input stream sits by its worker): a run over `pm.dgs.Stream`s gives the sequential program's
output on the streams merged by timestamp (ties in stream order), on any valid plan and
transport, with random channel delays and slices; on the local runner each worker process
reads its own streams; a stream that goes back in time, or whose reading fails, is an error
naming it."""
from __future__ import annotations

import functools
import os
import random

import pytest
from hypothesis import example, given, settings, strategies as st

import pomset as pm
from pomset.runtime.dgs.deployment import DGSDeployment
from pomset.sdk.errors import UserCodeError
from pomset.traces.dgs.streams import merged_items

from test_dgs_consistency import FRAUD_TRACE, WINDOW_TRACE, fraud, window
from test_dgs_runtime import deploy, make_program, runs, sequential


def as_streams(arrivals, per_tag, rnd):
    """The arrivals `(ts, (tag, value), id)` dealt at random to `per_tag[tag]` streams of each
    tag, each stream in timestamp order (ties in arrival order), the streams shuffled; and
    the items in the order the merged input has them: by timestamp, then stream, then place
    in the stream."""
    streams = {tag: [[] for _ in range(n)] for tag, n in per_tag.items()}
    for ts, (tag, value), _ in arrivals:
        rnd.choice(streams[tag]).append((ts, value))
    listed = [(tag, sorted(events, key=lambda e: e[0]))
              for tag, lists in streams.items() for events in lists]
    rnd.shuffle(listed)
    made = [pm.dgs.Stream(tag, lambda events=events: iter(events), name=f"s{i}")
            for i, (tag, events) in enumerate(listed)]
    order = sorted((ts, i, j, (tag, value)) for i, (tag, events) in enumerate(listed)
                   for j, (ts, value) in enumerate(events))
    return made, [(ts, item) for ts, _, _, item in order]


def micros(outs):
    return [(ts * 10 ** 6, o) for ts, o in outs]


@settings(max_examples=300, deadline=None)
@given(run=runs(), data=st.data())
def test_theorem_3_5_over_streams_any_valid_plan_with_random_delays(run, data):
    rnd = random.Random(run["seed"])
    per_tag = {t: data.draw(st.integers(1, 3), label=f"streams of {t!r}")
               for t in sorted(run["trace"].tags, key=repr)}
    streams, items = as_streams(run["arrivals"], per_tag, rnd)
    d = deploy(run)
    got = d.run_streams(streams)
    assert got == micros(sequential(run["program"], items)), run["plan"].describe()
    assert sum(d.read) == len(items)
    assert [(ts, item) for ts, item in merged_items(streams)] == [
        (ts * 10 ** 6, item) for ts, item in items]


@pytest.mark.parametrize("mode", ["threads", "processes"])
@pytest.mark.parametrize("name", ["window", "fraud", "pages"])
def test_threads_and_processes_read_their_streams_and_give_the_sequential_output(name, mode):
    program, trace = make_program(name, 3)
    rnd = random.Random(5)
    tags = sorted(trace.tags, key=repr)
    # tags independent of themselves are the busy ones, on several streams each
    busy = {t: not trace.depends(t, t) for t in tags}
    weights = [20 if busy[t] else 1 for t in tags]
    arrivals = [(rnd.randrange(2000), (rnd.choices(tags, weights)[0], rnd.randrange(60)), i)
                for i in range(3000)]
    streams, items = as_streams(arrivals, {t: 3 if busy[t] else 1 for t in tags}, rnd)
    source = pm.dgs.ReadStreams(streams, trace)
    d = DGSDeployment(program, trace, leaves=3, mode=mode, slice_size=64)
    got = d.run_streams(streams, source.rates())
    assert got == micros(sequential(program, items))
    assert len(d.plan.workers) > 1 and sum(d.read) == len(items)


def fraud_streams(tmp_path, n=2000, seed=9):
    """Fraud detection's input as four transaction streams and a rule stream, each reading
    notes the process it was read in; and the items in merged order."""
    rnd = random.Random(seed)
    arrivals = [(rnd.randrange(900), (rnd.choice(["tx"] * 30 + ["rule"]), rnd.randrange(60)), i)
                for i in range(n)]
    per_tag = {"tx": 4, "rule": 1}
    plain, items = as_streams(arrivals, per_tag, rnd)
    log = tmp_path / "read-by"

    def reader(stream):
        def read():
            with open(log, "a") as f:
                f.write(f"{os.getpid()}\n")
            return stream.read()
        return read
    streams = [pm.dgs.Stream(s.tag, reader(s), name=s.name) for s in plain]
    return streams, items, log


@pytest.mark.parametrize("flags,elsewhere", [
    (["--workers=1"], False),
    (["--workers=2", "--worker_mode=processes"], True),
    (["--workers=3", "--worker_mode=threads"], False),
    (["--workers=3", "--worker_mode=processes", "--shuffle_merges=4"], False)])   # simulated
def test_a_pipeline_reading_streams_gives_the_sequential_output(tmp_path, flags, elsewhere):
    streams, items, log = fraud_streams(tmp_path)
    p = pm.Pipeline(argv=flags + ["--quiet"])
    out = p | pm.dgs.ReadStreams(streams, FRAUD_TRACE, label="streams") | fraud()
    out.keep()
    result = p.run()
    expected = micros(sequential(fraud(), items))
    assert [(wv.ts, wv.value) for wv in result.collect(out)] == expected and len(expected) > 20
    pids = {int(x) for x in log.read_text().split()}
    if elsewhere:   # the root reads the rules, each leaf its transactions
        assert len(pids) >= 3 and os.getpid() not in pids
    else:
        assert pids == {os.getpid()}
    metrics = result.metrics()
    assert metrics["streams"]["read"] == len(items) == metrics["Fraud"]["received"]


def test_streams_read_by_the_runner_where_their_elements_go_elsewhere_too(tmp_path):
    """The source's output is kept as well: the runner reads the streams, merged, and the DGS
    step gets their elements."""
    streams, items, log = fraud_streams(tmp_path)
    p = pm.Pipeline(argv=["--workers=2", "--worker_mode=processes", "--quiet"])
    events = p | pm.dgs.ReadStreams(streams, FRAUD_TRACE)
    events.keep()
    out = events | fraud()
    out.keep()
    result = p.run()
    assert [(wv.ts, wv.value) for wv in result.collect(events)] == [
        (ts * 10 ** 6, item) for ts, item in items]
    assert [(wv.ts, wv.value) for wv in result.collect(out)] == micros(sequential(fraud(), items))
    assert {int(x) for x in log.read_text().split()} == {os.getpid()}


def test_timestamps_may_be_floats_timestamps_or_negative_and_ties_keep_stream_order():
    streams = [pm.dgs.Stream("v", lambda: iter([(-2.5, 1), (0.25, 2), (0.25, 3)]), name="a"),
               pm.dgs.Stream("v", lambda: iter([(pm.Timestamp(micros=250_000), 10),
                                                (pm.Timestamp(seconds=7), 11)]), name="b"),
               pm.dgs.Stream("b", lambda: iter([(0.25, "x"), (7, "y")]), name="c")]
    assert list(merged_items(streams)) == [
        (-2_500_000, ("v", 1)), (250_000, ("v", 2)), (250_000, ("v", 3)), (250_000, ("v", 10)),
        (250_000, ("b", "x")), (7_000_000, ("v", 11)), (7_000_000, ("b", "y"))]
    d = DGSDeployment(window(), WINDOW_TRACE, leaves=2, mode="simulated", rng=random.Random(1))
    assert d.run_streams(streams, {"v": 2, "b": 1}) == [(250_000, 16), (7_000_000, 11)]


def _backwards():
    return iter([(1.0, 1), (3.0, 2), (2.0, 3)])


def _failing():
    yield (1.0, 1)
    raise OSError("disk gone")


@pytest.mark.parametrize("flags", [["--workers=1"], ["--workers=2", "--worker_mode=processes"]])
@pytest.mark.parametrize("read,says", [
    (_backwards, r"stream 1 Stream\('v', 'late'\): event 2 \(value 3\) is at 2.0 s, before "
                 r"the one ahead of it at 3.0 s; a stream's events must come in timestamp order"),
    (_failing, r"stream 1 Stream\('v', 'late'\): reading it failed after 1 events: OSError: "
               r"disk gone")])
def test_a_stream_out_of_order_or_failing_is_an_error_naming_it(flags, read, says):
    streams = [pm.dgs.Stream("b", lambda: iter([(5.0, 0)]), name="barriers"),
               pm.dgs.Stream("v", read, name="late"),
               pm.dgs.Stream("v", lambda: iter([(1.5, 4)]), name="fine")]
    p = pm.Pipeline(argv=flags + ["--quiet"])
    p | pm.dgs.ReadStreams(streams, WINDOW_TRACE) | window()
    with pytest.raises(UserCodeError, match=says):
        p.run()


def _reader(path, mode="r"):
    return iter([])


def test_a_stream_is_named_after_its_reader_and_its_arguments():
    assert pm.dgs.Stream("v", functools.partial(_reader, "a.jsonl", mode="rb")).name == \
        "_reader('a.jsonl', mode='rb')"
    assert repr(pm.dgs.Stream("v", _reader)) == "Stream('v', '_reader')"


def test_bad_streams_are_refused_when_the_pipeline_is_built():
    with pytest.raises(TypeError, match="read must be callable"):
        pm.dgs.Stream("v", [(1, 2)])
    with pytest.raises(TypeError, match="non-empty list of pm.dgs.Stream"):
        pm.dgs.ReadStreams([], WINDOW_TRACE)
    with pytest.raises(pm.PipelineConstructionError, match="outside the trace type's alphabet"):
        pm.dgs.ReadStreams([pm.dgs.Stream("q", lambda: iter([]))], WINDOW_TRACE)


@example(n=0)
@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 40))
def test_a_run_over_streams_starts_from_the_initial_state_only(n):
    streams = [pm.dgs.Stream("v", lambda: iter([(float(i), i) for i in range(n)]))]
    d = DGSDeployment(window(), WINDOW_TRACE, leaves=1)
    assert d.run_streams(streams) == []
    assert d.joined_state() == sum(range(n))
    with pytest.raises(RuntimeError, match="reads its streams once"):
        d.run_streams(streams)
