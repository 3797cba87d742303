"""A key's state saved a window at a time (`triggers/saved_state.py`): restored, a key unpickles
only the records the kernel reads, saving it again keeps the others' bytes as they were, and
nothing about the state changes on the way (windows, records, holds, merge order, watermark)."""
from __future__ import annotations

import pickle

from hypothesis import given, settings, strategies as st

import pomset as pm
from pomset.runtime.kernel_host import KernelHost
from pomset.triggers.kernel import KeyState
from pomset.triggers.reducers import CombineReducer
from pomset.triggers.saved_state import SavedKeyState, state_from_bytes, state_to_bytes
from pomset.triggers.strategy import WindowingStrategy
from pomset.windowing import NO_FIRING, WindowedValue

SECOND = 1_000_000
SESSIONS = WindowingStrategy(
    pm.Sessions(10), pm.AfterWatermark(early=pm.AfterCount(2), late=pm.AfterCount(1)),
    pm.AccumulationMode.RETRACTING, 3600 * SECOND)


def _elements(strategy, pairs):
    return [WindowedValue.raw((key, 1), t, w, NO_FIRING, 1)
            for key, t in pairs for w in strategy.window_fn.assign_micros(t, 1)]


def _states(strategy, pairs, wm):
    """The keys' states after `pairs` (key, time) and the watermark moved to `wm`."""
    host = KernelHost(strategy, CombineReducer(pm.Sum()), "test")
    out: list = []
    host.elements(_elements(strategy, pairs), out)
    host.watermark(wm, out)
    host.end_step()
    return host.store.states


def _unread(ks):
    """The windows whose records are still bytes."""
    return {window for window, rec in dict.items(ks) if type(rec) is bytes}


def _same(a, b):
    assert list(a) == list(b)
    assert a.order == b.order and a.out_wm == b.out_wm and a.step == b.step
    for window in a:
        assert a[window].__getstate__() == b[window].__getstate__()


def test_a_restored_key_unpickles_only_the_windows_it_reads():
    # three sessions of one key, the first two fired on time and kept for their lateness
    states = _states(SESSIONS, [("k", 0), ("k", 40 * SECOND), ("k", 80 * SECOND)], 60 * SECOND)
    saved = state_to_bytes(states["k"])
    restored = state_from_bytes(saved)
    assert type(restored) is SavedKeyState and len(restored) == 3
    assert _unread(restored) == set(restored)

    host = KernelHost(SESSIONS, CombineReducer(pm.Sum()), "test")
    host.store.states = {"k": restored}
    host.kernel.k.wm = 60 * SECOND
    out: list = []
    host.elements(_elements(SESSIONS, [("k", 85 * SECOND)]), out)   # grows the third session
    first, second, third = restored.order
    assert _unread(restored) == {first, second}
    assert third.max_ts + 1 == 95 * SECOND

    again = state_to_bytes(restored)
    _, _, old_recs, _, _, _, _ = pickle.loads(saved)
    _, _, new_recs, _, _, _, _ = pickle.loads(again)
    assert new_recs[:2] == old_recs[:2]   # the unread records' bytes, as they were saved
    assert new_recs[2] != old_recs[2]


def test_a_key_settles_its_output_watermark_from_saved_holds_without_reading_records():
    # [5 s, 15 s) has one element, its pane pending and holding the key's output watermark at
    # its end; [30 s, 41 s) fired early at its second element and holds nothing
    states = _states(SESSIONS, [("k", 5 * SECOND), ("k", 30 * SECOND), ("k", 31 * SECOND)], 0)
    first, second = states["k"].order
    assert (states["k"][first].hold, states["k"][second].hold) == (first.max_ts, None)
    restored = state_from_bytes(state_to_bytes(states["k"]))
    assert restored.min_hold(20 * SECOND) == first.max_ts
    assert restored.min_hold(3 * SECOND) == 3 * SECOND
    assert _unread(restored) == {first, second}
    restored[first]
    assert restored.min_hold(20 * SECOND) == first.max_ts
    assert _unread(restored) == {second}


def test_pickling_a_restored_key_gives_the_whole_key_state():
    states = _states(SESSIONS, [("k", 0), ("k", 40 * SECOND)], 30 * SECOND)
    restored = state_from_bytes(state_to_bytes(states["k"]))
    whole = pickle.loads(pickle.dumps(restored))   # a local checkpoint of it, say
    assert type(whole) is KeyState
    _same(whole, states["k"])


def test_a_key_state_pickled_whole_as_older_checkpoints_hold_it_restores_as_it_was():
    states = _states(SESSIONS, [("k", 0), ("k", 40 * SECOND)], 30 * SECOND)
    restored = state_from_bytes(pickle.dumps(states["k"]))
    assert type(restored) is KeyState
    _same(restored, states["k"])


def test_windows_other_than_intervals_are_saved_as_themselves():
    strategy = WindowingStrategy(pm.GlobalWindows(), pm.Repeatedly(pm.AfterCount(2)))
    states = _states(strategy, [("k", 0), ("k", SECOND), ("k", 2 * SECOND)], 0)
    restored = state_from_bytes(state_to_bytes(states["k"]))
    assert [type(w) for w in restored] == [pm.GlobalWindow]
    _same(restored, states["k"])


@settings(max_examples=60, deadline=None)
@given(pairs=st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 200)), max_size=30),
       wm=st.integers(0, 300), read=st.lists(st.integers(0, 20), max_size=5),
       sliding=st.booleans())
def test_saving_a_key_with_any_of_its_windows_read_gives_back_the_same_state(pairs, wm, read,
                                                                           sliding):
    window_fn = pm.SlidingWindows(30, 10) if sliding else pm.Sessions(10)
    strategy = WindowingStrategy(window_fn, SESSIONS.trigger, SESSIONS.accumulation_mode,
                                 SESSIONS.allowed_lateness_us)
    states = _states(strategy, [(k, t * SECOND) for k, t in pairs], wm * SECOND)
    for ks in states.values():
        restored = state_from_bytes(state_to_bytes(ks))
        windows = list(restored)
        for i in read:
            restored.get(windows[i % len(windows)])
        again = state_from_bytes(state_to_bytes(restored))
        assert again.min_hold(2 ** 62) == ks.min_hold(2 ** 62)
        _same(again, ks)
