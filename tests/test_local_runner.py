"""The local runner's own contract: progress and summary, metrics, and kernel state that
round-trips through bytes at any point without changing the output."""
from __future__ import annotations

import io
import pickle
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import pomset as pm
from pomset.runners.spark.stateful import PAGE_SLOTS, _SlotPages, _restored
from pomset.runtime.kernel_host import KernelHost
from pomset.runtime.timers import InMemoryStore, unslotted
from pomset.triggers.saved_state import state_from_bytes, state_to_bytes
from pomset.triggers.reducers import CombineReducer
from pomset.triggers.strategy import WindowingStrategy
from pomset.windowing import MAX_MICROS, NO_FIRING, WindowedValue, to_micros


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _batch(options):
    p = pm.Pipeline(options=options)
    (p | pm.Create([pm.TimestampedValue(("k", i), i) for i in range(5000)])
       | pm.WindowInto(pm.FixedWindows(100)) | pm.CombinePerKey(sum))
    return p.run()


def test_summary_on_a_terminal(monkeypatch):
    term = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", term)
    _batch(pm.PipelineOptions([]))
    text = term.getvalue()
    assert "pomset run finished in" in text
    assert "CombinePerKey(sum)" in text and "received=5000" in text and "emitted=50" in text
    assert "late: 0, dropped: 0, dead_lettered: 0" in text


def test_quiet_flag_and_non_terminals_print_nothing(monkeypatch):
    term = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", term)
    _batch(pm.PipelineOptions(["--quiet"]))
    assert term.getvalue() == ""
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    _batch(pm.PipelineOptions([]))
    assert pipe.getvalue() == ""


def test_metrics_count_late_and_dropped_elements():
    stream = (pm.TestStream()
              .add_elements([pm.TimestampedValue(("k", 1), 10)])
              .advance_watermark_to(200)
              .add_elements([pm.TimestampedValue(("k", 2), 50),     # late, within lateness
                             pm.TimestampedValue(("k", 4), 5)])
              .advance_watermark_to(1000)
              .add_elements([pm.TimestampedValue(("k", 8), 20)])    # window expired: dropped
              .advance_watermark_to_infinity())
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet"]))
    sums = (p | stream | pm.WindowInto(pm.FixedWindows(100), allowed_lateness=300)
              | pm.CombinePerKey(sum))
    result = p.run()
    assert [(wv.value[1], wv.pane.timing) for wv in result.collect(sums)] == [
        (1, pm.PaneTiming.ON_TIME), (2, pm.PaneTiming.LATE), (4, pm.PaneTiming.LATE)]
    assert result.counter("late") == 2
    assert result.counter("dropped") == 1


def test_collect_leaves_only_keeps_leaves():
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", "--collect=leaves"]))
    mid = p | pm.Create([("a", 1)]) | pm.Map(lambda kv: kv)
    out = mid | pm.GroupByKey()
    result = p.run()
    assert [wv.value for wv in result.collect(out)] == [("a", [1])]
    try:
        result.collect(mid)
    except pm.PipelineConstructionError as e:
        assert "--collect=all" in str(e)
    else:
        raise AssertionError("an intermediate PCollection should not be collected with leaves")


# --- the kernel's state is plain data ---------------------------------------------------------

class _MapState(dict):
    """A map state's calls over a dict (`_SlotPages` takes Spark's)."""

    def getValue(self, key):
        return self.get(key)

    def updateValue(self, key, value):
        self[key] = value

    def removeKey(self, key):
        del self[key]


def _host(ops, strategy, roundtrip: bool, only=None, paged: int = 0) -> list:
    """The runtime's kernel host over a script of steps, optionally with every key's state,
    wake-up and hold going through bytes after every step (as Spark's buckets keep them;
    `paged`: the wake-up slots in a map state, as Spark's groupings keep them, `paged` slots to
    a page);
    the panes of each step, in a canonical order (a step's panes have no order among them).
    With `only`, the elements of other keys are left out (their steps stay, empty)."""
    slots = _MapState()

    def new_host():
        return KernelHost(strategy, CombineReducer(pm.Sum()), "test",
                          slot_store=_SlotPages(slots, paged) if paged else None)

    host, steps = new_host(), []
    for op, a, b, c in ops:
        out: list = []
        if op == "el":
            if only is None or a == only:
                host.elements([WindowedValue.raw((a, b), c, w, NO_FIRING, 1)
                               for w in strategy.window_fn.assign_micros(c, b)], out)
        elif op == "wm":
            host.watermark(a, out)
        else:
            host.processing_time(host.kernel.k.pt + a, out)
        host.end_step()
        steps.append(sorted(repr((wv.value, wv.ts, wv.window, wv.pane, wv.diff)) for wv in out))
        if roundtrip:
            states = {k: state_from_bytes(state_to_bytes(v))
                      for k, v in host.store.states.items()}
            queues = pickle.loads(pickle.dumps(host.save_queues()))
            _assert_every_wake_up_is_saved(queues, states, slots if paged else None, paged)
            host = new_host()
            host.store.states = states
            host.restore_queues(queues)
    return steps


def _assert_every_wake_up_is_saved(queues, states, chunks, page_slots=0):
    """Saved wake-ups name every live window's at its time (a pickle of them each once), and
    saved holds only what still holds. A slot saved before may still name a window since
    merged away or moved: the kernel skips it when due (the round trip's panes show it).
    Slots kept in pages (`_SlotPages`) have every chunk of their page the saved queues count,
    and no other."""
    for domain, attr in (("event", "et"), ("processing", "pt")):
        saved = set()
        slots = queues["timers"][domain]
        if chunks is not None:
            keys = [(k[0].split(":"), text) for k, (text,) in chunks.items()]
            pages = {(int(page), int(c)): _restored(text) for (d, page, c), text in keys
                     if d == domain}
            assert {(slot // page_slots, c) for slot, n in slots.items() for c in range(n)} == \
                set(pages)
            assert {(page, s) for (page, _), held in pages.items() for s in held} == {
                (slot // page_slots, slot) for slot in slots}
            slots = {slot: b"".join(pages[slot // page_slots, c].get(slot, b"") for c in range(n))
                     for slot, n in slots.items()}
        for data in slots.values():
            f = io.BytesIO(data)
            while f.tell() < len(data):
                pairs = [(time, window, k) for time, by_window in pickle.load(f)
                         for window, keys in by_window for k in keys]
                assert len(set(pairs)) == len(pairs)
                saved.update(pairs)
        live = {(getattr(rec, attr), window, k) for k, ks in states.items()
                for window, rec in ks.items() if getattr(rec, attr) is not None}
        assert live <= saved
    for time, entries in queues["holds"]:
        for key, window in zip(entries[0::2], entries[1::2]):
            assert states[key][window].hold == time


ops_strategy = st.lists(st.one_of(
    st.tuples(st.just("el"), st.sampled_from("abc"), st.integers(1, 9),
              st.integers(0, 600).map(lambda s: to_micros(s))),
    st.tuples(st.just("wm"), st.integers(0, 700).map(lambda s: to_micros(s)), st.none(), st.none()),
    st.tuples(st.just("pt"), st.integers(1, 90).map(lambda s: to_micros(s)), st.none(), st.none()),
), max_size=40).map(lambda ops: ops + [("wm", MAX_MICROS, None, None)])


class QuietFor(pm.Trigger):
    """Fires once the watermark is 10 s past the window's latest element: its event-time
    wake-up moves with every element (a saved one then no longer stands)."""

    def on_element(self, ctx, value, timestamp):
        latest = max(ctx.state.get("latest", timestamp.micros), timestamp.micros)
        ctx.state["latest"] = latest
        ctx.set_timer(pm.Timestamp.from_micros(latest + 10_000_000))

    def should_fire(self, ctx):
        return "latest" in ctx.state and ctx.watermark.micros >= ctx.state["latest"] + 10_000_000

    def on_fire(self, ctx):
        ctx.state.clear()
        return False

    def on_merge(self, ctx, source_states):
        times = [s["latest"] for s in source_states if "latest" in s]
        if times:
            ctx.state["latest"] = max(times)
            ctx.set_timer(pm.Timestamp.from_micros(max(times) + 10_000_000))


ROUND_TRIP_TRIGGERS = [
    pm.AfterWatermark(early=pm.AfterProcessingTime(30), late=pm.AfterCount(1)),
    pm.AfterWatermark(early=pm.AfterProcessingTime(30), late=pm.AfterProcessingTime(20)),
    QuietFor(),
]


@settings(max_examples=100, deadline=None)
@given(ops=ops_strategy, sessions=st.booleans(), trigger=st.sampled_from(ROUND_TRIP_TRIGGERS))
@example(ops=[("el", "a", 1, to_micros(100)), ("el", "a", 2, to_micros(110)),
              ("wm", MAX_MICROS, None, None)], sessions=False, trigger=QuietFor())
# a restored wake-up that a step asks for again at the same time is saved once
@example(ops=[("el", "c", 1, 0), ("el", "c", 1, to_micros(1)), ("el", "c", 1, 0),
              ("pt", to_micros(1), None, None), ("wm", MAX_MICROS, None, None)],
         sessions=True, trigger=ROUND_TRIP_TRIGGERS[0])
def test_kernel_state_round_trips_through_bytes(ops, sessions, trigger):
    strategy = WindowingStrategy(
        window_fn=pm.Sessions(60) if sessions else pm.SlidingWindows(120, 60),
        trigger=trigger,
        accumulation_mode=pm.AccumulationMode.RETRACTING,
        allowed_lateness_us=to_micros(10_000))
    kept = _host(ops, strategy, roundtrip=False)
    assert _host(ops, strategy, roundtrip=True) == kept
    for paged in (1, 3, PAGE_SLOTS):
        assert _host(ops, strategy, roundtrip=True, paged=paged) == kept


def test_a_slot_chunk_missing_from_the_state_is_a_checkpoint_error():
    """Slots kept in pages of chunks: a chunk the saved queues count but the state lacks is
    named, not skipped (its wake-ups would never fire)."""
    slots = _MapState()
    saved = _SlotPages(slots, 4).save("event", {}, {5: b"x"})
    assert saved == {5: 1} and _restored(slots[("event:1:0",)][0]) == {5: b"x"}
    with pytest.raises(pm.CheckpointError, match="slots 4-7 lack chunk 1 of 2"):
        _SlotPages(slots, 4).read("event", 5, 2)
    with pytest.raises(pm.CheckpointError, match="slot 6 are missing from its page"):
        _SlotPages(slots, 4).read("event", 6, 1)


class _CountingMapState(_MapState):
    """A map state that counts its calls (each a round trip to Spark's state store)."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def getValue(self, key):
        self.calls += 1
        return super().getValue(key)

    def updateValue(self, key, value):
        self.calls += 1
        super().updateValue(key, value)

    def removeKey(self, key):
        self.calls += 1
        super().removeKey(key)


def test_slot_pages_cost_a_round_trip_a_page_not_a_slot():
    """A step's new wake-ups in 40 slots of 3 pages are written as a chunk per page, without
    reading them; reading a slot reads its page's chunks once, and the step writes the page
    back as one chunk (what it still holds and what the step added) and removes the rest; a
    page whose last slot was read is removed."""
    slots = _CountingMapState()
    first = _SlotPages(slots, 16).save("event", {}, {s: b"a%d" % s for s in range(40)})
    assert slots.calls == 3 and set(first.values()) == {1}
    second = _SlotPages(slots, 16).save("event", first, {s: b"b%d" % s for s in range(0, 40, 8)})
    assert slots.calls == 6 and set(second.values()) == {2}
    store, slots.calls = _SlotPages(slots, 16), 0
    assert store.read("event", 0, second[0]) == b"a0b0"
    assert store.read("event", 3, second[3]) == b"a3"   # the page is read once
    assert slots.calls == 2
    unread = {s: n for s, n in second.items() if s not in (0, 3)}
    third = store.save("event", unread, {2: b"c2"})
    assert slots.calls == 2 + 2   # page 0 as one chunk, its second chunk removed
    assert {s: third[s] for s in (1, 2, 16, 32)} == {1: 1, 2: 1, 16: 2, 32: 2}
    assert _restored(slots[("event:0:0",)][0])[2] == b"a2c2" and ("event:0:1",) not in slots
    store = _SlotPages(slots, 16)
    for s in range(32, 40):
        store.read("event", s, third[s])
    left = {s: n for s, n in third.items() if s < 32}
    assert set(store.save("event", left, {})) == set(left)
    assert not [k for k in slots if k[0].startswith("event:2:")]


def test_a_restored_host_reads_only_the_wake_up_slots_a_step_needs():
    """Saved wake-ups are pickled a slot of time at a time: a restored step that fires the
    earliest slot reads it alone; a new wake-up is appended to its slot, read or not; the
    others (say, windows waiting out a long allowed lateness) stay pickled, saved again byte
    for byte, and everything fires when its time comes."""
    strategy = WindowingStrategy(window_fn=pm.FixedWindows(60), allowed_lateness_us=0)
    host = KernelHost(strategy, CombineReducer(pm.Sum()), "test")
    minute = 60_000_000
    out: list = []
    host.elements([WindowedValue.raw(("k", 1), t * minute, w, NO_FIRING, 1)
                   for t in (0, 5, 10, 20)
                   for w in strategy.window_fn.assign_micros(t * minute, 1)], out)
    host.end_step()
    saved = pickle.loads(pickle.dumps(host.save_queues()))
    assert sorted(saved["timers"]["event"]) == [1, 6, 11, 21]   # a window's end, in its slot
    states = {k: state_from_bytes(state_to_bytes(v))
              for k, v in host.store.states.items()}

    restored = KernelHost(strategy, CombineReducer(pm.Sum()), "test")
    restored.store.states = states
    restored.restore_queues(saved)
    restored.elements([WindowedValue.raw((key, 1), t * minute, w, NO_FIRING, 1)
                       for key, t in (("k", 15), ("j", 20))
                       for w in strategy.window_fn.assign_micros(t * minute, 1)], out)
    restored.watermark(2 * minute, out)
    restored.end_step()
    assert [(wv.value, wv.window.start_us // minute) for wv in out] == [(("k", 1), 0)]
    assert sorted(restored.timers.slots["event"]) == [6, 11, 21]   # never read
    again = restored.save_queues()
    assert sorted(again["timers"]["event"]) == [6, 11, 16, 21]
    for slot in (6, 11):
        assert again["timers"]["event"][slot] is saved["timers"]["event"][slot]
    old, new = saved["timers"]["event"][21], again["timers"]["event"][21]
    assert new.startswith(old) and len(new) > len(old)   # "j"'s wake-up appended

    later = KernelHost(strategy, CombineReducer(pm.Sum()), "test")
    later.store.states = restored.store.states
    later.restore_queues(pickle.loads(pickle.dumps(again)))
    out = []
    later.watermark(MAX_MICROS, out)
    assert sorted((wv.value, wv.window.start_us // minute) for wv in out) == [
        (("j", 1), 20), (("k", 1), 5), (("k", 1), 10), (("k", 1), 15), (("k", 1), 20)]


class _Touches(InMemoryStore):
    """Keys' states in memory, noting the keys a step touched (would save again)."""

    def __init__(self, states: dict) -> None:
        super().__init__()
        self.states, self.touched = states, set()

    def touch(self, key):
        self.touched.add(key)


def test_a_saved_wake_up_that_no_longer_stands_is_skipped_without_touching_its_key():
    """A session that grew keeps its old end's wake-up in a slot no step read; when that
    time comes the entry is skipped, and its key is not touched (its state not saved again)
    until the session's own end, which fires."""
    strategy = WindowingStrategy(window_fn=pm.Sessions(60), allowed_lateness_us=0)
    minute = 60_000_000

    def step(saved, states, elements=(), wm=None):
        host = KernelHost(strategy, CombineReducer(pm.Sum()), "test", _Touches(states))
        if saved is not None:
            host.restore_queues(pickle.loads(pickle.dumps(saved)))
        out: list = []
        host.elements([WindowedValue.raw(("a", 1), t, w, NO_FIRING, 1)
                       for t in elements for w in strategy.window_fn.assign_micros(t, 1)], out)
        if wm is not None:
            host.watermark(wm, out)
        host.end_step()
        states = {k: state_from_bytes(state_to_bytes(v))
                  for k, v in host.store.states.items()}
        return host.save_queues(), states, host.store.touched, out

    saved, states, _, _ = step(None, {}, elements=[0])           # session [0 s, 60 s)
    saved, states, _, _ = step(saved, states, elements=[30_000_000])   # now [0 s, 90 s)
    assert [time for time, _ in unslotted(saved["timers"]["event"])] == [60_000_000, 90_000_000]
    saved, states, touched, out = step(saved, states, wm=70_000_000)
    assert out == [] and touched == set()   # the 60 s entry stood no longer
    _, _, touched, out = step(saved, states, wm=2 * minute)
    assert touched == {"a"}
    assert [(wv.value, wv.window.max_ts + 1) for wv in out] == [(("a", 2), 90_000_000)]


def _split(steps_of_parts: list) -> list:
    """Several hosts' panes, step by step, as one canonical list per step."""
    return [sorted(sum(parts, [])) for parts in zip(*steps_of_parts)]


@settings(max_examples=60, deadline=None)
@given(ops=ops_strategy, sessions=st.booleans(), combiner=st.sampled_from(list(pm.TimestampCombiner)))
def test_panes_do_not_depend_on_which_keys_share_a_host(ops, sessions, combiner):
    """Pane timing and timestamps are decided against each key's own output watermark, so the
    keys hosted together give exactly the panes of each key hosted alone (as on Spark's
    buckets or a parallel runner's partitions), late data and holds included."""
    strategy = WindowingStrategy(
        window_fn=pm.Sessions(60) if sessions else pm.SlidingWindows(120, 60),
        trigger=pm.AfterWatermark(early=pm.AfterProcessingTime(30), late=pm.AfterCount(1)),
        accumulation_mode=pm.AccumulationMode.RETRACTING, timestamp_combiner=combiner,
        allowed_lateness_us=to_micros(10_000))
    alone = [_host(ops, strategy, False, only=key) for key in "abc"]
    assert _host(ops, strategy, roundtrip=False) == _split(alone)


def test_run_after_with_block_returns_the_same_result_without_rerunning():
    calls = []
    with pm.Pipeline(options=pm.PipelineOptions(["--quiet"])) as p:
        out = p | pm.Create([1, 2]) | pm.Map(lambda v: calls.append(v) or v)
    result = p.run()
    assert result is p.result
    assert [wv.value for wv in result.collect(out)] == [1, 2]
    assert calls == [1, 2]
