"""Stateful DoFns (Beam's state and timers, issue 18) give the same outputs on every runner
mode: state cells per key and window, event-time and processing-time timers, timers that set
timers, clearing, dynamic timer tags, output timestamps holding the watermark, and state
collected when a window expires. Beam's own stateful DoFn tests run in
tests/test_beam_examples.py."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pomset as pm
from pomset import DoFn
from pomset.runtime.stateful_dofn import StatefulDoFnHost
from pomset.windowing import MAX_MICROS
from conftest import RUNNERS, runner_flags
from kafka_util import new_topic, produce, read_topic

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from dedup_with_expiry import generate  # noqa: E402


def _run(runner: str, build, *flags: str):
    p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + ["--quiet", *flags]))
    out = build(p)
    out.keep()
    result = p.run()
    return result, [(wv.value, wv.ts) for wv in result.collect(out)]


def count_per_window() -> DoFn:
    """Per key and window: a count, the values, and a flush at the end of the window."""
    class CountPerWindow(DoFn):
        N = pm.CombiningValueStateSpec("n", sum)
        SEEN = pm.BagStateSpec("seen")
        FLUSH = pm.TimerSpec("flush", pm.TimeDomain.WATERMARK)

        def process(self, kv, n=DoFn.StateParam(N), seen=DoFn.StateParam(SEEN),
                    flush=DoFn.TimerParam(FLUSH), window=DoFn.WindowParam):
            n.add(1)
            seen.add(kv[1])
            flush.set(window.end)

        @pm.on_timer(FLUSH)
        def flushed(self, key=DoFn.KeyParam, n=DoFn.StateParam(N),
                    seen=DoFn.StateParam(SEEN), ts=DoFn.TimestampParam):
            yield key, n.read(), sorted(seen.read()), ts.micros
    return CountPerWindow()


def test_state_and_event_time_timers_per_key_and_window_on_every_runner(runner):
    def build(p):
        return (p | pm.Create([pm.TimestampedValue((f"k{i % 3}", i), i * 7) for i in range(30)])
                | pm.WindowInto(pm.FixedWindows(60)) | "Count" >> pm.ParDo(count_per_window()))
    result, out = _run(runner, build)
    expected = Counter()
    for i in range(30):
        expected[(f"k{i % 3}", i * 7 // 60)] += 1
    got = {(k, ts // 60_000_000 - 1): (n, seen) for (k, n, seen, ts), _ in out}
    assert {key: n for key, (n, _) in got.items()} == dict(expected)
    assert all(sorted(seen) == seen for n, seen in got.values())
    # a timer's outputs are at its output time: its time, within its window
    assert {ts for _, ts in out} == {60_000_000 * w - 1 for w in range(1, 5)}
    assert result.metrics()["Count"]["dropped"] == 0


def buffer_until_processing_time() -> DoFn:
    """Buffers a key's values until a processing-time deadline: 10 s on the TestStream's
    clock for its first round, 20 s more for each later one."""
    class Buffer(DoFn):
        BUF = pm.BagStateSpec("buf")
        ARMED = pm.ReadModifyWriteStateSpec("armed")
        ROUNDS = pm.CombiningValueStateSpec("rounds", sum)
        FLUSH = pm.TimerSpec("flush", pm.TimeDomain.REAL_TIME)

        def process(self, kv, buf=DoFn.StateParam(BUF), armed=DoFn.StateParam(ARMED),
                    rounds=DoFn.StateParam(ROUNDS), flush=DoFn.TimerParam(FLUSH)):
            buf.add(kv[1])
            if not armed.read():
                armed.write(True)
                flush.set(10 + 20 * rounds.read())

        @pm.on_timer(FLUSH)
        def flushed(self, key=DoFn.KeyParam, buf=DoFn.StateParam(BUF),
                    armed=DoFn.StateParam(ARMED), rounds=DoFn.StateParam(ROUNDS)):
            yield key, sorted(buf.read())
            buf.clear()
            armed.clear()
            rounds.add(1)
    return Buffer()


def test_processing_time_timers_fire_on_a_test_stream_clock_on_every_runner(runner):
    stream = (pm.TestStream()
              .add_elements([("a", 1), ("b", 2)])
              .advance_processing_time(5)
              .add_elements([("a", 3)])
              .advance_processing_time(6)    # a's and b's timers, set at 0, are due at 10
              .add_elements([("a", 4)])
              .advance_processing_time(20)
              .advance_watermark_to_infinity())

    def build(p):
        return p | stream | "Buffer" >> pm.ParDo(buffer_until_processing_time())
    _, out = _run(runner, build)
    assert sorted(v for v, _ in out) == [("a", [1, 3]), ("a", [4]), ("b", [2])]


def test_timers_that_set_timers_clear_and_dynamic_tags():
    class Ticker(DoFn):
        TICK = pm.TimerSpec("tick", pm.TimeDomain.WATERMARK)
        NOPE = pm.TimerSpec("nope", pm.TimeDomain.WATERMARK)
        COUNT = pm.ReadModifyWriteStateSpec("count")

        def process(self, kv, tick=DoFn.TimerParam(TICK), nope=DoFn.TimerParam(NOPE)):
            tick.set(10, dynamic_timer_tag="x")
            tick.set(15, dynamic_timer_tag="y")
            nope.set(5)
            nope.clear()

        @pm.on_timer(TICK)
        def ticked(self, tag=DoFn.DynamicTimerTagParam, ts=DoFn.TimestampParam,
                   tick=DoFn.TimerParam(TICK), count=DoFn.StateParam(COUNT)):
            n = (count.read() or 0) + 1
            count.write(n)
            if n < 4:
                tick.set(ts + 100, dynamic_timer_tag=tag)   # a timer that sets a timer
            yield tag, int(ts), n

        @pm.on_timer(NOPE)
        def never(self):
            yield "cleared timers do not fire"

    for runner in ["local", "local-sequential"]:
        _, out = _run(runner, lambda p: p | pm.Create([("k", 0)]) | pm.ParDo(Ticker()))
        assert [v for v, _ in out] == [("x", 10, 1), ("y", 15, 2), ("x", 110, 3),
                                       ("y", 115, 4), ("x", 210, 5)]


def test_a_timer_output_timestamp_holds_the_watermark_for_what_it_emits():
    """A timer firing at the end of the window but emitting at the window's start: the
    grouping after it sees that output on time, in the window it belongs to."""
    class Late(DoFn):
        T = pm.TimerSpec("t", pm.TimeDomain.WATERMARK)

        def process(self, kv, t=DoFn.TimerParam(T), window=DoFn.WindowParam):
            t.set(window.end, output_timestamp=window.start)

        @pm.on_timer(T)
        def fired(self, key=DoFn.KeyParam):
            yield key, 1

    def build(p):
        return (p | pm.TestStream().add_elements([pm.TimestampedValue(("k", 0), 5)])
                .advance_watermark_to(200).advance_watermark_to_infinity()
                | pm.WindowInto(pm.FixedWindows(10)) | pm.ParDo(Late())
                | "Sum" >> pm.CombinePerKey(sum))
    result, out = _run("local", build)
    assert out == [(("k", 1), 9_999_999)]
    assert result.metrics()["Sum"]["late"] == result.metrics()["Sum"]["dropped"] == 0


def test_state_goes_when_its_window_expires_and_later_elements_are_dropped_and_reported():
    def build(p):
        stream = (pm.TestStream()
                  .add_elements([pm.TimestampedValue(("k", 1), 5)])
                  .advance_watermark_to(30)   # [0, 10) + lateness 10 has expired
                  .add_elements([pm.TimestampedValue(("k", 2), 6),
                                 pm.TimestampedValue(("k", 3), 25)])
                  .advance_watermark_to_infinity())
        return (p | stream | pm.WindowInto(pm.FixedWindows(10), allowed_lateness=10)
                | "Count" >> pm.ParDo(count_per_window()))
    with pytest.warns(pm.LateDataWarning, match=r"'Count' dropped 1 late elements .*windows "
                                                 r"had expired"):
        result, out = _run("local", build)
    assert sorted(v[:3] for v, _ in out) == [("k", 1, [1]), ("k", 1, [3])]
    assert result.metrics()["Count"]["dropped"] == 1


def test_a_saved_host_goes_on_as_if_it_had_not_stopped():
    import pickle
    from pomset.windowing import WindowedValue, GLOBAL_WINDOW, NO_FIRING
    t = pm.ParDo(buffer_until_processing_time())
    values = [WindowedValue.raw(("k", i), 0, GLOBAL_WINDOW, NO_FIRING, 1) for i in range(4)]

    def host():
        h = StatefulDoFnHost(t, [None], "Buffer", 0)
        h.runner.setup()
        return h
    whole, outs = host(), {None: []}
    whole.elements(values, outs)
    whole.processing_time(MAX_MICROS, outs)
    first, again, split = host(), host(), {None: []}
    first.elements(values[:2], split)
    again.load(pickle.loads(pickle.dumps(first.save())))
    again.elements(values[2:], split)
    again.processing_time(MAX_MICROS, split)
    assert [wv.value for wv in split[None]] == [wv.value for wv in outs[None]] == [
        ("k", [0, 1, 2, 3])]


class _Writes(dict):
    """A Spark map state's calls over a dict, noting the entries each step writes."""

    def __init__(self):
        super().__init__()
        self.written = set()

    def getValue(self, key):
        return self.get(key)

    def updateValue(self, key, value):
        self[key] = value
        self.written.add(key)

    def removeKey(self, key):
        del self[key]
        self.written.add(key)

    def iterator(self):
        return iter(list(self.items()))


def test_a_host_storing_by_key_writes_only_the_keys_and_slots_a_step_touches():
    """Spark streaming's adapter: keys' cells and timers in shards, timers in slot pages, the
    host new each step (as each micro-batch) with only its saved queues: a step with one key's
    element writes that key's shard and no slot page its timer's slot does not hold; the
    outputs are those of one host in memory."""
    import pickle
    from pomset.runners.spark import codec
    from pomset.runners.spark.stateful import _shard, _ShardedStates, _SlotPages
    from pomset.windowing import NO_FIRING, WindowedValue
    t = pm.ParDo(count_per_window())
    window = pm.IntervalWindow(0, 60)
    keys = [f"k{i}" for i in range(20)]
    steps = [([(k, 1, 5_000_000) for k in keys], 0), ([("k3", 2, 6_000_000)], 0),
             ([], MAX_MICROS)]
    shards, entries, queues, got = _Writes(), _Writes(), None, []
    whole, expected = StatefulDoFnHost(t, [None], "Count", 0), {None: []}
    for elements, wm in steps:
        bundle = [WindowedValue.raw((k, v), ts, window, NO_FIRING, 1) for k, v, ts in elements]
        whole.elements(bundle, expected)
        whole.watermark(wm, expected)
        host, outs = StatefulDoFnHost(t, [None], "Count", 0), {None: []}
        states = _ShardedStates(shards, lambda v: pickle.dumps(v, protocol=5), pickle.loads)
        host.reset(states, _SlotPages(entries))
        if queues is not None:
            host.restore_queues(pickle.loads(pickle.dumps(queues)), key_of=states.key)
        shards.written.clear()
        entries.written.clear()
        host.elements(bundle, outs, keys=[states.key(codec.dumps(k)) for k, _, _ in elements])
        host.watermark(wm, outs)
        host.end_step()
        queues = host.save_queues(key_form=states.kb_of.__getitem__)
        got += outs[None]
        if elements == [("k3", 2, 6_000_000)]:
            assert shards.written == {(_shard(codec.dumps("k3")),)}
            assert entries.written == set()   # its timer's slot was there: nothing new
    assert sorted(wv.value for wv in got) == sorted(wv.value for wv in expected[None]) == sorted(
        (k, 2 if k == "k3" else 1, [1, 2] if k == "k3" else [1], 60_000_000) for k in keys)
    assert shards == {}


def test_a_saved_state_of_an_earlier_form_is_refused_by_name():
    host = StatefulDoFnHost(pm.ParDo(count_per_window()), [None], "Count", 0)
    with pytest.raises(pm.CheckpointError, match="stateful ParDo 'Count'.*earlier version"):
        host.load({"cells": {}, "timers": {}, "wm": 0, "pt": 0, "out_wm": 0})


def test_mistakes_are_reported_where_they_are_made():
    with pytest.raises(pm.PipelineConstructionError, match="with stateful DoFn must be "
                                                           "key-value pairs. CountPerWindow "
                                                           "keeps state or sets timers"):
        p = pm.Pipeline()
        p | pm.Create([1, 2]) | pm.ParDo(count_per_window())

    class NoCallback(DoFn):
        T = pm.TimerSpec("t", pm.TimeDomain.WATERMARK)

        def process(self, kv, t=DoFn.TimerParam(T)):
            t.set(0)
    with pytest.raises(ValueError, match=r"has a TimerSpec without an associated on_timer "
                                         r"callback: TimerSpec\(t\)"):
        pm.ParDo(NoCallback())

    class TooLate(DoFn):
        T = pm.TimerSpec("t", pm.TimeDomain.WATERMARK)

        def process(self, kv, t=DoFn.TimerParam(T), window=DoFn.WindowParam):
            t.set(window.end + pm.Duration(seconds=5))

        @pm.on_timer(T)
        def fired(self):
            yield 1
    with pytest.raises(pm.UserCodeError, match="timer 't' set to .* after its window .* "
                                               "expires"):
        with pm.Pipeline(options=pm.PipelineOptions(["--quiet"])) as p:
            (p | pm.Create([pm.TimestampedValue(("k", 1), 1)])
             | pm.WindowInto(pm.FixedWindows(10)) | pm.ParDo(TooLate()))
    with pytest.raises(ValueError, match="DoFn.StateParam takes a state spec"):
        DoFn.StateParam(pm.TimerSpec("t", pm.TimeDomain.WATERMARK))


transcripts = st.lists(st.one_of(
    st.tuples(st.just("elements"), st.lists(st.tuples(st.sampled_from("abc"),
                                                       st.integers(0, 99)), max_size=6)),
    st.tuples(st.just("watermark"), st.integers(0, 100))), max_size=8)


def counter() -> DoFn:
    """Counts per key, emitting the running count with each element, and the final count
    when the key's window ends."""
    class Counting(DoFn):
        N = pm.ReadModifyWriteStateSpec("n")
        END = pm.TimerSpec("end", pm.TimeDomain.WATERMARK)

        def process(self, kv, n=DoFn.StateParam(N), end=DoFn.TimerParam(END),
                    window=DoFn.WindowParam):
            count = (n.read() or 0) + 1
            n.write(count)
            end.set(window.end)
            yield kv[0], "running", count

        @pm.on_timer(END)
        def ended(self, key=DoFn.KeyParam, n=DoFn.StateParam(N)):
            yield key, "final", n.read()
    return Counting()


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(transcripts, st.sampled_from([r for r in RUNNERS if r != "local-sequential"]))
def test_a_counting_stateful_dofn_gives_the_same_results_on_every_runner(
        spark_session, transcript, runner):
    """For random transcripts of elements and watermark moves, a stateful DoFn that counts per
    key gives, on any other runner mode, exactly the sequential reference's outputs, which
    are what counting says (each key and window's last final: its count)."""
    stream = pm.TestStream()
    wm = 0
    for kind, arg in transcript:
        if kind == "elements" and arg:
            stream = stream.add_elements([pm.TimestampedValue(kv, kv[1]) for kv in arg])
        elif kind == "watermark" and arg > wm:
            stream, wm = stream.advance_watermark_to(arg), arg
    stream = stream.advance_watermark_to_infinity()

    def build(p):
        return (p | stream | pm.WindowInto(pm.FixedWindows(20), allowed_lateness=1000)
                | "Count" >> pm.ParDo(counter()))
    _, reference = _run("local-sequential", build)
    _, got = _run(runner, build)
    assert sorted(got) == sorted(reference)
    last: dict = {}   # a window fires again when a late element comes: the last is its count
    for (key, what, n), ts in reference:
        if what == "final":
            last[(key, ts // 20_000_000)] = max(n, last.get((key, ts // 20_000_000), 0))
    assert last == Counter((k, t // 20) for kind, arg in transcript if kind == "elements"
                           for k, t in arg)


def test_a_stateful_dofn_downstream_of_a_retracting_grouping_sees_the_diffs():
    """Retracting panes reach a stateful DoFn with diff -1 (DoFn.DiffParam): one that keeps
    the latest pane per key undoes a retracted one, and its timer reports what is left."""
    class Latest(DoFn):
        PANES = pm.BagStateSpec("panes")
        REPORT = pm.TimerSpec("report", pm.TimeDomain.WATERMARK)

        def process(self, kv, diff=DoFn.DiffParam, panes=DoFn.StateParam(PANES),
                    report=DoFn.TimerParam(REPORT)):
            kept = panes.read()
            panes.clear()
            if diff < 0:
                kept.remove(kv[1])
            else:
                kept.append(kv[1])
            for v in kept:
                panes.add(v)
            report.set(pm.MAX_TIMESTAMP)
            yield kv[0], kv[1], diff

        @pm.on_timer(REPORT)
        def reported(self, key=DoFn.KeyParam, panes=DoFn.StateParam(PANES)):
            yield key, "left", panes.read()

    def build(p):
        stream = (pm.TestStream()
                  .add_elements([pm.TimestampedValue(("k", 1), 1)])
                  .advance_processing_time(10)
                  .add_elements([pm.TimestampedValue(("k", 2), 2)])
                  .advance_processing_time(10)
                  .advance_watermark_to_infinity())
        return (p | stream
                | pm.WindowInto(pm.GlobalWindows(), trigger=pm.Repeatedly(pm.AfterCount(1)),
                                accumulation_mode=pm.AccumulationMode.RETRACTING)
                | "Sum" >> pm.CombinePerKey(sum) | "Latest" >> pm.ParDo(Latest()))
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet"]))
    out = build(p)
    out.keep()
    got = [(wv.value, wv.diff) for wv in p.run().collect(out)]
    # the panes 1, then 3 (1 retracted), then the final pane at the end (3 retracted, 3)
    assert got == [(("k", 1, 1), 1), (("k", 1, -1), -1), (("k", 3, 1), 1),
                   (("k", 3, -1), -1), (("k", 3, 1), 1), (("k", "left", [3]), 1)]


# --- a killed and restarted run: state and timers come back from the checkpoint ------------------

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                       "dedup_with_expiry.py")


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_a_killed_run_resumes_its_state_and_timers_from_the_checkpoint(kafka_broker, runner,
                                                                          tmp_path):
    """examples/dedup_with_expiry.py on Kafka, killed mid-stream (SIGKILL: no chance to clean
    up) and restarted: an id seen before the kill and repeated after it is still known (its
    time-to-live, 1000 minutes, outlasts the 25 minutes of events), so the output topic holds
    every id exactly once."""
    source, sink = new_topic(kafka_broker, "dedup-in", 2), new_topic(kafka_broker, "dedup-out", 1)
    events = generate(1500, seed=7)
    cut = len(events) * 2 // 3

    def send(batch):
        produce(kafka_broker, source, [{"value": e, "key": e["id"].encode()} for e in batch])
    command = [sys.executable, EXAMPLE, "--role=pipeline", *runner_flags(runner), "--quiet",
               f"--bootstrap_servers={kafka_broker}", f"--source={source}", f"--sink={sink}",
               "--ttl_minutes=1000",
               f"--checkpoint_dir={tmp_path / 'checkpoint'}", "--checkpoint_interval=0.5",
               "--trigger_interval=0.5", "--spark_master=local[2]",
               "--spark_conf=spark.sql.shuffle.partitions=2"]
    send(events[:cut])
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not read_topic(kafka_broker, sink):
            assert first.poll() is None and time.monotonic() < deadline, "no output committed"
            time.sleep(0.5)
        time.sleep(1.0)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    committed = len(read_topic(kafka_broker, sink))
    repeated = [dict(e) for e in events[:cut:10]]   # ids the first run saw, sent again
    send(events[cut:] + repeated)
    second = subprocess.run(command + ["--until=latest"], capture_output=True, text=True,
                            timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    ids = [json.loads(m.value())["id"] for m in read_topic(kafka_broker, sink)]
    assert 0 < committed < len(ids)
    assert Counter(ids) == Counter({e["id"] for e in events})


def test_ordered_list_state_reads_in_time_order_and_by_range():
    class Recent(DoFn):
        EVENTS = pm.OrderedListStateSpec("events")
        REPORT = pm.TimerSpec("report", pm.TimeDomain.WATERMARK)

        def process(self, kv, ts=DoFn.TimestampParam, events=DoFn.StateParam(EVENTS),
                    report=DoFn.TimerParam(REPORT)):
            events.add((ts, kv[1]))
            report.set(100)

        @pm.on_timer(REPORT)
        def reported(self, events=DoFn.StateParam(EVENTS)):
            yield "all", [v for _, v in events.read()]
            yield "[20, 40)", [(int(t), v) for t, v in events.read_range(20, 40)]
            events.clear_range(0, 30)
            yield "from 30", [v for _, v in events.read()]

    values = [(50, "e"), (10, "a"), (30, "c"), (20, "b"), (40, "d")]
    _, out = _run("local", lambda p: p | pm.Create(
        [pm.TimestampedValue(("k", v), t) for t, v in values]) | pm.ParDo(Recent()))
    assert [v for v, _ in out] == [("all", ["a", "b", "c", "d", "e"]),
                                   ("[20, 40)", [(20, "b"), (30, "c")]),
                                   ("from 30", ["c", "d", "e"])]


def test_a_stateful_dofn_gets_its_bundle_lifecycle():
    """start_bundle and finish_bundle bracket each bundle of process calls and of timer
    firings, as for any DoFn; what finish_bundle outputs comes out."""
    class Lifecycle(DoFn):
        T = pm.TimerSpec("t", pm.TimeDomain.WATERMARK)

        def start_bundle(self):
            self.seen = 0

        def process(self, kv, t=DoFn.TimerParam(T)):
            self.seen += 1
            t.set(50)

        @pm.on_timer(T)
        def fired(self, key=DoFn.KeyParam):
            self.seen += 1

        def finish_bundle(self):
            yield pm.TimestampedValue(("calls", self.seen), 0)

    _, out = _run("local-sequential", lambda p: p | pm.Create(
        [pm.TimestampedValue((k, 1), 1) for k in "abc"]) | pm.ParDo(Lifecycle()))
    assert sorted(v for v, _ in out) == [("calls", 3), ("calls", 3)]
