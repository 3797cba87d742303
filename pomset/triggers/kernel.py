"""The GroupAlsoByWindow kernel: per key, windows, their contents, triggers and panes.

Written once, hosted under every runner by one host, `pomset.runtime.kernel_host.KernelHost`.
The host owns storage, timers and the clock:

- it keeps one `KeyState` per key (a dict window -> `WindowRec`, plain picklable data) in a
  store (a dict key -> KeyState) that it passes in with each call: `process_bundle` for a
  bundle of elements, `on_timers` for the wake-ups due at one time;
- it sets the kernel's time view `k` (input watermark `wm`, processing time `pt`) before
  calling, and ends each step of its own (`end_step`: a local propagation, a Spark
  micro-batch) so that the kernel can settle each key's output watermark (below);
- it drains `timer_requests` (domain -> time -> [key, rec, key, rec, ...] in request order,
  `rec` the window's `WindowRec`: pass those entries to `on_timers` once the watermark or clock
  reaches `time`) and `hold_requests` ((hold, key, window): the output watermark must not pass
  `hold` while that window still has that hold), both lazily valid: `on_timers` ignores a
  request that no longer stands, `is_current_hold` tells whether a hold does. A host that
  restores state from bytes finds the records due at a time by their wake-ups (`rec.et`,
  `rec.pt`). `moved` (domain -> times) names the times whose requests some record left
  other than by firing then (its wake-up moved, or the window went): a host that keeps saved
  requests needs to check only those times' for ones that no longer stand.

Pane timing and output timestamps are decided against the key's own output watermark: the
largest, over the steps before this one, of the minimum of the input watermark and that key's
watermark holds (a stage's output watermark is the same minimum over every key's holds). Beam
decides them against the whole stage's output watermark, which makes a pane's timing depend
on which other keys share its stage, bucket or partition; per key, every host (the local
runner, its parallel partitions, Spark's buckets) gives the same panes. With one key the two
agree. A key's output watermark is settled lazily, when the key is next touched.

Semantics follow Beam (default trigger, PaneInfo, timestamp combiners, allowed lateness,
garbage collection, ON_TIME panes emitted even when empty) and the paper where Beam is silent
(retracting mode: a firing first retracts the window's previous pane and the panes of windows
merged into it, then emits the new value).

Merging windows, as in Beam: a merged window's trigger state is merged from its sources' by
each trigger's `_on_merge` (the new element's own window, which has none yet, brings none), and
it is finished (closed) only if every source is. Pane state is per window and not merged: a
merged window that is one of its sources goes on with that window's pane index and
non-speculative index; a new window starts at index 0 (is_first), even if its sources emitted.
In retracting mode a source merged away retracts its last pane in a pane of its own: its next
index, its timing, and is_last.
"""
from __future__ import annotations

import bisect
from contextlib import contextmanager
from operator import attrgetter, itemgetter
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ..windowing import (MAX_MICROS, MIN_MICROS, PaneInfo, PaneTiming, Sessions, TimestampCombiner,
                         WindowedValue, merge_overlapping, overlapping_runs)
from .accumulation import AccumulationMode
from .definitions import EVENT_TIME, PROCESSING_TIME
from .drivers import FIRE, driver
from .reducers import AccumulatorReducer
from .strategy import WindowingStrategy

EARLY, ON_TIME, LATE = PaneTiming.EARLY, PaneTiming.ON_TIME, PaneTiming.LATE
_raw = WindowedValue.raw
_start = attrgetter("start_us")
_first = itemgetter(0)
_SESSIONS_MERGE = Sessions.merge_new

# A window's first pane (index 0, hence non-speculative index 0, or -1 when early) by
# (early, on time, is last): most windows emit only this one, so it is not rebuilt each time.
_FIRST_PANES = {(t is EARLY, t is ON_TIME, last): PaneInfo(True, last, t, 0, -1 if t is EARLY else 0)
                for t in (EARLY, ON_TIME, LATE) for last in (False, True)}


def next_pane(wm: int, kow: int, max_ts: int, lateness: int, index: int, nonspec: int,
              pending: bool, finished: bool) -> Optional[Tuple[PaneInfo, int, int]]:
    """What a firing of a window ending at `max_ts` emits, as every host fires: its pane and
    the window's next pane index and non-speculative index after it; None when it emits no
    pane (nothing arrived since the last, `pending` False, and it is not the ON_TIME pane,
    which is sent even when empty). Its timing: EARLY before the input watermark `wm` passes
    the window's end, ON_TIME for its first pane after while the key's output watermark `kow`
    has not passed it, else LATE. It is the last pane when the trigger `finished` or the
    window expires (allowed `lateness` past its end)."""
    if wm <= max_ts:
        if not pending:
            return None
        is_last = finished or max_ts + lateness < expiry_watermark(wm, lateness)
        if index == 0:
            return _FIRST_PANES[True, False, is_last], 1, nonspec
        return PaneInfo(False, is_last, EARLY, index, -1), index + 1, nonspec
    timing = LATE if nonspec or kow > max_ts else ON_TIME
    if not pending and timing is LATE:
        return None
    is_last = finished or max_ts + lateness < expiry_watermark(wm, lateness)
    if index == 0:   # then nonspec is 0 too
        return _FIRST_PANES[False, timing is ON_TIME, is_last], 1, 1
    return PaneInfo(False, is_last, timing, index, nonspec), index + 1, nonspec + 1


class TimeView:
    """The clocks the host shows the kernel (µs): the input watermark `wm` and processing time
    `pt` now, the input watermark `settled_wm` as of the end of the host's previous step, and
    `step`, which step this is (each key's output watermark is settled once per step)."""

    __slots__ = ("wm", "pt", "settled_wm", "step")

    def __init__(self) -> None:
        self.wm = MIN_MICROS
        self.pt = 0
        self.settled_wm = MIN_MICROS
        self.step = 0


class WindowRec:
    """Everything one key keeps for one active window."""

    __slots__ = ("window", "acc", "pending", "hold", "ts", "fin", "closed", "index",
                 "nonspec", "last_out", "retract", "et", "pt")

    def __init__(self, window: Any, acc: Any, ts: Sequence[Any]) -> None:
        self.window = window
        self.acc = acc
        self.pending = False     # elements arrived since the last pane
        self.hold: Optional[int] = None   # output timestamp of the pending pane, if it holds the watermark
        # trigger state, one slot per trigger node: a list, or the kernel's shared tuple for
        # the plain watermark trigger armed, copied to a list by _fire before it changes
        self.ts: Sequence[Any] = ts
        self.fin = 0             # finished flags: bit i for trigger node i
        self.closed = False      # root trigger finished: later elements are dropped
        self.index = 0           # next pane index
        self.nonspec = 0         # next non-speculative pane index (> 0: an ON_TIME or LATE pane was emitted)
        # Both sequences are replaced, never mutated in place, so the empty tuple serves as
        # "none" without allocating two lists per window.
        self.last_out: Sequence[Any] = ()   # (value, ts, window, diff) emitted by the last pane (retracting)
        # windows merged into this one, to retract: (their next index, next non-speculative
        # index, what their last pane emitted) each
        self.retract: Sequence[Any] = ()
        self.et: Optional[int] = None   # requested event-time wake-up
        self.pt: Optional[int] = None   # requested processing-time wake-up

    # the slots in order, spelled out: states are pickled and unpickled a window at a time
    def __getstate__(self):
        return (self.window, self.acc, self.pending, self.hold, self.ts, self.fin, self.closed,
                self.index, self.nonspec, self.last_out, self.retract, self.et, self.pt)

    def __setstate__(self, state) -> None:
        (self.window, self.acc, self.pending, self.hold, self.ts, self.fin, self.closed,
         self.index, self.nonspec, self.last_out, self.retract, self.et, self.pt) = state


class KeyState(dict):
    """One key's state: its active windows (window -> WindowRec); for merging WindowFns,
    `order`, the same windows sorted by start, so merging looks only at neighbours; and the
    key's output watermark `out_wm` as settled in step `step`."""

    __slots__ = ("order", "out_wm", "step")

    def __init__(self) -> None:
        super().__init__()
        self.order: List[Any] = []
        self.out_wm = MIN_MICROS
        self.step = -1

    def hold_of(self, window: Any) -> Optional[int]:
        """The window's watermark hold; None if it has none or is not active."""
        rec = self.get(window)
        return None if rec is None else rec.hold

    def min_hold(self, bound: int) -> int:
        """The earliest of `bound` and the windows' watermark holds."""
        for rec in self.values():
            if rec.hold is not None and rec.hold < bound:
                bound = rec.hold
        return bound

    def __reduce__(self):
        return (_key_state, (list(self.items()), self.order, self.out_wm, self.step))


def _key_state(items: list, order: list, out_wm: int = MIN_MICROS, step: int = -1) -> KeyState:
    ks = KeyState()
    ks.update(items)
    ks.order = order
    ks.out_wm = out_wm
    ks.step = step
    return ks


def settle(ks: KeyState, k: TimeView) -> int:
    """The key's output watermark in this step: at its first touch in a step, raised to the
    minimum of the input watermark as of the previous step and the key's holds, which have
    not changed since it was last touched (so no step in between could have raised it more)."""
    if ks.step != k.step:
        ks.step = k.step
        if k.settled_wm > ks.out_wm:   # else no hold can raise it (a batch's input, a still watermark)
            hold = ks.min_hold(k.settled_wm)
            if hold > ks.out_wm:
                ks.out_wm = hold
    return ks.out_wm


class Counters:
    """Elements the kernel did not put in a pane, by reason."""

    __slots__ = ("late", "dropped_expired", "dropped_closed")

    def __init__(self) -> None:
        self.late = 0
        self.dropped_expired = 0
        self.dropped_closed = 0


class ElementError(Exception):
    """The kernel could not process `element` (a bundle's value, or a due timer's key):
    `cause` is the exception raised on the way (a reducer's, a WindowFn's), or None when the
    element is not a (key, value) pair with a hashable key, which the message then says."""

    def __init__(self, element: Any, message: str = "", cause: Optional[BaseException] = None) -> None:
        super().__init__(message or f"{type(cause).__name__}: {cause}")
        self.element = element
        self.cause = cause


def expiry_watermark(wm: int, lateness: int) -> int:
    """What a window's end plus allowed lateness is compared with to tell whether it expired:
    the watermark, except that at the end of time every window has (even the global window
    with an allowed lateness reaching past the end of time)."""
    return wm if wm < MAX_MICROS else wm + lateness + 1


class GroupAlsoByWindow:
    """Groups one key's elements by window and emits panes as the trigger says."""

    def __init__(self, strategy: WindowingStrategy, reducer: Any) -> None:
        self.strategy = strategy
        self.reducer = reducer
        self.trigger = strategy.trigger
        self.driver = driver(self.trigger)
        self.n_trigger = self.trigger.slot_count()
        self.window_fn = strategy.window_fn
        self.merging = self.window_fn.is_merging()
        # Sessions' own merge (not a subclass's merge_windows): a new window merges with the
        # run of windows it overlaps, found by `Sessions.overlapping`
        self._overlapping = (Sessions.overlapping if self.merging and
                             type(self.window_fn).merge_new is _SESSIONS_MERGE else None)
        # a bundle's on-time elements are folded per key before they merge (`_fold`)
        self.combiner = strategy.timestamp_combiner
        # what moves an element's time before it is combined (OUTPUT_AT_EARLIEST_TRANSFORMED)
        self._transform = self.combiner.transform(self.window_fn)
        # (not under a transform, which takes each element's own time in its final window)
        self._folds = (self._overlapping is not None and self.trigger.folds_on_time_elements()
                       and self._transform is None)
        self.lateness = strategy.allowed_lateness_us
        self.mode = strategy.accumulation_mode
        self.discarding = self.mode is AccumulationMode.DISCARDING
        self.retracting = self.mode is AccumulationMode.RETRACTING
        self.eow = self.combiner is TimestampCombiner.OUTPUT_AT_EOW
        self.k = TimeView()
        self.counters = Counters()
        # where the elements it would drop go instead, when the grouping keeps them (a late
        # output); None: they are dropped and counted
        self.late_out: Optional[list] = None
        # reducer.add for diff == +1 without the diff dispatch, when the reducer offers it
        self._add_one = getattr(reducer, "add_one", None)
        # whether the driver's trigger fires once per window, at the watermark (fast paths)
        self._plain = self.driver.plain
        # a pane's single datum, for reducers that always produce exactly one (combines),
        # outside retracting mode (which also keeps what each pane emitted)
        self._single_output = None if self.retracting else getattr(reducer, "output", None)
        self.timer_requests: Dict[str, Dict[int, list]] = {EVENT_TIME: {}, PROCESSING_TIME: {}}
        self.hold_requests: list = []
        self.moved: Dict[str, set] = {EVENT_TIME: set(), PROCESSING_TIME: set()}

    # --- inputs ---------------------------------------------------------------------------
    @contextmanager
    def folding_partials(self) -> Iterator[None]:
        """While open, each element's value is a partial accumulator of the grouping's
        CombineFn (combiner lifting), merged into its window's accumulator where a value would
        be added."""
        reducer, add_one = self.reducer, self._add_one
        lifted = AccumulatorReducer(reducer.fn)
        self.reducer, self._add_one = lifted, lifted.add_one
        try:
            yield
        finally:
            self.reducer, self._add_one = reducer, add_one

    def process_bundle(self, store: Dict[Any, KeyState], bundle: Sequence[WindowedValue],
                       out: list) -> None:
        """A bundle of (key, value) elements, each in its assigned window; `store` holds each
        key's state (a new key's is added). Panes the elements cause go to `out`. Raises
        `ElementError` naming the element that could not be processed."""
        k = self.k
        wm = k.wm
        if (wm == MIN_MICROS and self._plain and not self.merging and self.eow
                and self._add_one):
            return self._accumulate(store, bundle)
        if self._folds and getattr(self.reducer, "folds", False) and wm < MAX_MICROS:
            if not isinstance(bundle, list):
                bundle = list(bundle)
            folded, rest = self._fold(bundle, wm)
            if len(rest) < len(bundle):
                add_one, merge = self._add_one, self.reducer.merge

                def take(acc: Any, value: Any) -> Any:
                    return merge((acc, value.acc)) if type(value) is _Folded else add_one(acc, value)
                self._each(store, folded, out, take)
                bundle = rest
        self._each(store, bundle, out, self._add_one)

    def _each(self, store: Dict[Any, KeyState], bundle: Sequence[WindowedValue], out: list,
              add_one: Any) -> None:
        """process_bundle, an element at a time; `add_one` takes an element's value (diff +1)
        into its window's accumulator."""
        k = self.k
        wm = k.wm
        lateness, merging, counters = self.lateness, self.merging, self.counters
        late_out = self.late_out
        create, add = self.reducer.create, self.reducer.add
        n_trigger, plain, step = self.n_trigger, self._plain, k.step
        # The plain watermark trigger fires a window's pending pane, output at its end, as soon
        # as the input watermark passes that end (before the host moves the output watermark),
        # and late elements at once: with OUTPUT_AT_EOW such a hold could never bind.
        hold = not plain or not self.eow
        gone = expiry_watermark(wm, lateness)
        try:
            for wv in bundle:
                kv = wv.value
                if type(kv) is not tuple or len(kv) != 2:
                    raise element_error(kv, None)
                key, value = kv
                ks = store.get(key)
                if ks is None:
                    ks = store[key] = KeyState()
                kow = ks.out_wm if ks.step == step else settle(ks, k)
                ts, window = wv.ts, wv.window
                if window.max_ts + lateness < gone:
                    if late_out is None:
                        counters.dropped_expired += 1
                    else:
                        late_out.append(wv)
                    continue
                if ts < wm:
                    counters.late += 1
                if merging:
                    window = self._merge(ks, key, window)
                rec = ks.get(window)
                if rec is None:
                    if plain and wm <= window.max_ts:
                        # a new window before the watermark passes it (the fast path below
                        # then takes the element)
                        rec = self._new_armed(ks, key, window)
                    else:
                        rec = ks[window] = WindowRec(window, create(), [None] * n_trigger)
                elif rec.closed:
                    if late_out is None:
                        counters.dropped_closed += 1
                    else:
                        late_out.append(wv)
                    continue
                if add_one is not None and wv.diff == 1:
                    rec.acc = add_one(rec.acc, value)
                else:
                    rec.acc = add(rec.acc, value, wv.diff)
                rec.pending = True
                if hold:
                    self._hold(rec, key, ts, kow, wv.window)
                if plain and rec.pt is None and wm <= rec.window.max_ts:
                    # Fast paths for the plain watermark trigger (Beam's default) while the
                    # watermark has not passed the window, where _on_element (the general
                    # path, through the trigger objects) reduces to:
                    # - its wake-up at the end of the window asked for: then the trigger is
                    #   armed (WM_ARMED; unarmed or fired it would have asked for no wake-up or
                    #   the gc time, which is the end only with no allowed lateness, and
                    #   only after the watermark passed the window), so its _on_element
                    #   changes nothing (no early trigger), _should_fire is False (it fires
                    #   only once wm > max_ts) and _schedule would ask for the same wake-ups
                    #   again (end of window, before the gc time; no processing time);
                    # - unarmed (None, a window new from merging) with no wake-up asked
                    #   for: _on_element arms it, _should_fire is False, and _schedule asks for
                    #   one event-time wake-up at the end of the window.
                    # tests/test_fast_paths.py checks them against the general path.
                    end = rec.window.max_ts + 1
                    if rec.et == end:
                        continue
                    if rec.et is None and self.driver.arm(rec):
                        rec.et = end
                        self._request(EVENT_TIME, end, key, rec)
                        continue
                self._on_element(key, rec, value, ts, out, kow)
        except ElementError:
            raise
        except Exception as e:
            raise element_error(wv.value, e) from e

    def _fold(self, bundle: Sequence[WindowedValue], wm: int) -> Tuple[list, list]:
        """Under Sessions and a trigger that folds on-time elements: each key's elements up to
        its first that is late (behind the watermark), a retraction or not a pair, folded into
        one `_Folded` partial accumulator per session they make among themselves (an element
        alone in its session is left as it is). Taking them in so gives the state they would
        give one by one: nothing fires or counts on their arrival
        (`Trigger.folds_on_time_elements`), and a session merges with the windows any of its
        elements would. Returns the folded elements and partials, by key in the order the keys
        came and by session in the order their first elements came, and the rest, in the
        bundle's order, to be taken one by one after them."""
        groups: Dict[Any, list] = {}
        stopped: set = set()
        rest: list = []
        for wv in bundle:
            kv = wv.value
            if type(kv) is tuple and len(kv) == 2:
                key = kv[0]
                try:
                    if wv.diff == 1 and wv.ts >= wm and key not in stopped:
                        group = groups.get(key)
                        if group is None:
                            groups[key] = [wv]
                        else:
                            group.append(wv)
                        continue
                    stopped.add(key)
                except TypeError:   # an unhashable key: the element-wise path says so
                    pass
            rest.append(wv)
        folded: list = []
        add = folded.append
        for key, group in groups.items():
            if len(group) == 1:
                add(group[0])
                continue
            sessions = self._sessions(key, group)
            if len(sessions) > 1:
                sessions.sort(key=_first)
            for _, taken in sessions:
                add(taken)
        return folded, rest

    def _sessions(self, key: Any, group: List[WindowedValue]) -> List[Tuple[int, WindowedValue]]:
        """One key's on-time elements (in arrival order) as sessions among themselves: for
        each, the arrival position of its first element and what the kernel takes in, its
        element if alone, else a `_Folded` partial at their combined time."""
        create, add_one, combine = self.reducer.create, self._add_one, self.combiner.combine
        order = sorted(range(len(group)), key=lambda i: group[i].window.start_us)
        out: List[Tuple[int, WindowedValue]] = []
        for members, span in overlapping_runs(order, lambda i: group[i].window):
            if len(members) == 1:
                out.append((members[0], group[members[0]]))
                continue
            acc, ts = create(), None
            for i in members:
                wv = group[i]
                try:
                    acc = add_one(acc, wv.value[1])
                except Exception as e:
                    raise element_error(wv.value, e) from e
                ts = wv.ts if ts is None else combine(ts, wv.ts)
            out.append((min(members), _raw((key, _Folded(acc)), ts, span, group[members[0]].pane, 1)))
        return out

    def _accumulate(self, store: Dict[Any, KeyState], bundle: Sequence[WindowedValue]) -> None:
        """process_bundle for the plain watermark trigger with non-merging windows, output at
        their ends, before the watermark has moved (a batch's whole input): nothing can be late
        or fire, so each element only adds to its window, a new window armed with its one
        wake-up, at its end (the fast paths' invariant: an existing window is armed)."""
        add, add_one, new_armed = self.reducer.add, self._add_one, self._new_armed
        try:
            for wv in bundle:
                kv = wv.value
                if type(kv) is not tuple or len(kv) != 2:
                    raise element_error(kv, None)
                key, value = kv
                ks = store.get(key)
                if ks is None:
                    ks = store[key] = KeyState()
                window = wv.window
                rec = ks.get(window)
                if rec is None:
                    rec = new_armed(ks, key, window)
                rec.acc = add_one(rec.acc, value) if wv.diff == 1 else add(rec.acc, value, wv.diff)
                rec.pending = True
        except ElementError:
            raise
        except Exception as e:
            raise element_error(wv.value, e) from e

    def _new_armed(self, ks: KeyState, key: Any, window: Any) -> WindowRec:
        """A new window's record before the watermark passes it, under the plain watermark
        trigger: what _on_element and _schedule make of it, armed (the shared state) with one
        wake-up asked for, at the end of the window."""
        rec = ks[window] = WindowRec(window, self.reducer.create(), self.driver.armed)
        rec.et = window.max_ts + 1
        self._request(EVENT_TIME, rec.et, key, rec)
        return rec

    def on_timers(self, store: Dict[Any, KeyState], domain: str, time: int, entries: list,
                  out: list) -> None:
        """The wake-ups requested at `time` in `domain` are due, for `entries` (key, rec,
        key, rec, ...: flat, in request order): fire what the trigger says, collect garbage
        (a key left with no window leaves `store`). A request that no longer stands (the
        window's wake-up moved, or the window is gone) is ignored, so the host may keep stale
        requests and deliver them all. Raises `ElementError` naming the key that failed."""
        k = self.k
        wm = k.wm
        lateness, plain, should_fire, merging = (self.lateness, self._plain,
                                                self.driver.should_fire, self.merging)
        event_time = domain == EVENT_TIME
        fire, single, eow, step = self._fire, self._single_output, self.eow, k.step
        gone = expiry_watermark(wm, lateness)
        key = None
        try:
            for i in range(0, len(entries), 2):
                key, rec = entries[i], entries[i + 1]
                if event_time:
                    if rec.et != time:
                        continue
                    rec.et = None
                else:
                    if rec.pt != time:
                        continue
                    rec.pt = None
                ks = store[key]
                kow = ks.out_wm if ks.step == step else settle(ks, k)
                window = rec.window
                max_ts = window.max_ts
                if not rec.closed:
                    if plain and single is not None and rec.index == 0 and max_ts + lateness < gone:
                        # _fire for a single-datum pane that is the window's first (so the
                        # trigger is armed: every element arms it, only firing disarms
                        # it) and, as the window expires below, its last: ON_TIME (sent
                        # even when empty) unless the output watermark already passed it
                        on_time = kow <= max_ts
                        if rec.pending or on_time:
                            ts = max_ts if eow or rec.hold is None else rec.hold
                            out.append(_raw((key, single(rec.acc)), ts, window,
                                            _FIRST_PANES[False, on_time, True], 1))
                        rec.closed = True
                    elif should_fire(k, rec):
                        fire(key, rec, out, kow)
                if max_ts + lateness < gone:
                    if not rec.closed and (rec.pending or not rec.nonspec):
                        fire(key, rec, out, kow, final=True)
                    self._unqueue(rec)   # gone: its other requests no longer stand
                    del ks[window]
                    if merging:
                        _remove_sorted(ks.order, window)
                    if not ks:
                        del store[key]
                else:
                    self._schedule(key, rec)
        except Exception as e:
            raise ElementError(key, cause=e) from e

    # --- host helpers ---------------------------------------------------------------------
    def end_step(self) -> None:
        """The host's step is over: what the input watermark now is settles the keys' output
        watermarks in the next one."""
        k = self.k
        k.settled_wm = k.wm
        k.step += 1

    def is_current_hold(self, ks: Optional[KeyState], hold: int, window: Any) -> bool:
        return ks is not None and ks.hold_of(window) == hold

    # --- internals ------------------------------------------------------------------------
    def _on_element(self, key: Any, rec: WindowRec, value: Any, ts: int, out: list,
                    kow: int) -> None:
        """An element added to `rec`, through the trigger's driver: fire if it says so. Its
        wake-ups are asked for again even where the driver says they stand, as a record just
        made by merging windows has asked for none yet."""
        if self.driver.on_element(self.k, rec, value, ts) == FIRE:
            self._fire(key, rec, out, kow)
        self._schedule(key, rec)

    def _hold(self, rec: WindowRec, key: Any, ts: int, kow: int, assigned: Any) -> None:
        """Where the pending pane will be output, and whether that holds the watermark: an
        element counts at its time (moved, under OUTPUT_AT_EARLIEST_TRANSFORMED, in the window
        it was `assigned`, before any merge), or at the window's end if that is behind the
        watermark."""
        k = self.k
        if self.eow:
            t = rec.window.max_ts
        else:
            if self._transform is not None:
                ts = self._transform(assigned, ts)
            t = ts if ts >= k.wm else rec.window.max_ts
            if rec.hold is not None:
                t = self.combiner.combine(rec.hold, t)
        if t != rec.hold and t >= kow:
            rec.hold = t
            self.hold_requests.append((t, key, rec.window))

    def _schedule(self, key: Any, rec: WindowRec) -> None:
        k = self.k
        et = pt = None
        if not rec.closed:
            # A wake-up already due was just evaluated; asking again would spin.
            et, pt = self.driver.wakes(k, rec)
            if et is not None and et <= k.wm:
                et = None
            if pt is not None and pt <= k.pt:
                pt = None
        gc = min(rec.window.max_ts + self.lateness + 1, MAX_MICROS)
        if et is None or et > gc:
            et = gc
        if et != rec.et:
            if rec.et is not None:
                self.moved[EVENT_TIME].add(rec.et)
            rec.et = et
            self._request(EVENT_TIME, et, key, rec)
        if pt != rec.pt:
            if rec.pt is not None:
                self.moved[PROCESSING_TIME].add(rec.pt)
            rec.pt = pt
            if pt is not None:
                self._request(PROCESSING_TIME, pt, key, rec)

    def _unqueue(self, rec: WindowRec) -> None:
        """The record's requests no longer stand (its window is gone)."""
        if rec.et is not None:
            self.moved[EVENT_TIME].add(rec.et)
        if rec.pt is not None:
            self.moved[PROCESSING_TIME].add(rec.pt)
        rec.et = rec.pt = None

    def _request(self, domain: str, time: int, key: Any, rec: WindowRec) -> None:
        at = self.timer_requests[domain]
        entries = at.get(time)
        if entries is None:
            entries = at[time] = []
        entries.append(key)
        entries.append(rec)

    def _fire(self, key: Any, rec: WindowRec, out: list, kow: int, final: bool = False) -> None:
        """Emit the window's pane (`kow`: its key's output watermark, which decides ON_TIME or
        LATE), as the trigger fires or (`final`) the window expires."""
        k = self.k
        wm = k.wm
        window = rec.window
        max_ts = window.max_ts
        if final:
            finished = True
        else:
            finished = self.driver.on_fire(k, rec)
        fired = next_pane(wm, kow, max_ts, self.lateness, rec.index, rec.nonspec, rec.pending,
                          finished)
        if fired is not None:
            pane, rec.index, rec.nonspec = fired
            ts = max_ts if self.eow or rec.hold is None else rec.hold
            if self._single_output is not None:
                out.append(_raw((key, self._single_output(rec.acc)), ts, window, pane, 1))
            elif self.retracting:
                for r_index, r_nonspec, emitted in rec.retract:
                    # a merged-away window's last pane: its own next index, its own timing
                    r_pane = next_pane(wm, kow, emitted[0][2].max_ts, self.lateness, r_index,
                                       r_nonspec, True, True)[0]
                    for value, rts, rwin, diff in emitted:
                        out.append(_raw(value, rts, rwin, r_pane, -diff))
                for value, rts, rwin, diff in rec.last_out:
                    out.append(_raw(value, rts, rwin, pane, -diff))
                rec.retract = ()
                rec.last_out = last = []
                for value, diff in self.reducer.outputs(rec.acc):
                    kv = (key, value)
                    out.append(_raw(kv, ts, window, pane, diff))
                    last.append((kv, ts, window, diff))
            else:
                for value, diff in self.reducer.outputs(rec.acc):
                    out.append(_raw((key, value), ts, window, pane, diff))
            if self.discarding and not pane.is_last:
                rec.acc = self.reducer.create()
        rec.pending = False
        rec.hold = None
        if finished:
            rec.closed = True
            rec.acc = None
            rec.last_out = ()

    def _merge(self, ks: KeyState, key: Any, window: Any) -> Any:
        """MergeWindows with the new element's window; returns the window it now belongs to.
        Each merged window gets a new record: its sources' contents, holds and trigger state
        merged, its pane indices those of the source that is the same window, if any."""
        if window in ks:
            return window
        order = ks.order
        merges = None
        if self._overlapping is not None:
            run = self._overlapping(order, window)
            if not run:
                ks[window] = WindowRec(window, self.reducer.create(), [None] * self.n_trigger)
                bisect.insort(order, window, key=_start)
                return window
            if len(run) == 1:
                return self._grow(ks, key, ks[run[0]], window)
            # Sessions' one group: the run with the new window (which may be a folded
            # session, longer than the gap, so not looked for again among the sorted windows)
            merges = merge_overlapping([*run, window])
        fresh = WindowRec(window, self.reducer.create(), [None] * self.n_trigger)
        ks[window] = fresh
        bisect.insort(order, window, key=_start)
        target = window   # the new window's own, unless a group merges it (fresh then None)
        if merges is None:
            merges = self.window_fn.merge_new(order, window)
        for group, merged in merges:
            sources = [ks.pop(w) for w in group]
            for s in sources:   # merged away: their requests no longer stand
                self._unqueue(s)
            for w in group:
                _remove_sorted(order, w)
            rec = WindowRec(merged, self.reducer.merge([s.acc for s in sources if s.acc is not None]),
                            [None] * self.n_trigger)
            rec.pending = any(s.pending for s in sources)
            holds = [s.hold for s in sources if s.hold is not None]
            rec.hold = None
            for h in holds:   # merged as the timestamp combiner says (LATEST: the latest)
                rec.hold = h if rec.hold is None else self.combiner.combine(rec.hold, h)
            # The new element's own window has no trigger state yet and, as in Beam, brings
            # none to the merge (else a rule over all sources, such as "finished only if
            # finished in every source", would count it).
            prior = [s for s in sources if s is not fresh]
            if prior:
                self.trigger.slot_on_merge(self.k, rec, 0, prior)
                rec.closed = all(s.closed for s in prior)
            # Pane state is per window and not merged (Beam): a merged window that is one of
            # its sources goes on with that window's pane indices; a new one starts at 0.
            retract: list = []
            for s in sources:
                retract.extend(s.retract)
                if s.window == merged:
                    rec.index, rec.nonspec = s.index, s.nonspec
                    rec.last_out = s.last_out
                elif s.last_out:
                    retract.append((s.index, s.nonspec, s.last_out))
            rec.retract = retract
            if merged in ks:
                raise ValueError(f"{self.window_fn!r}.merge_windows produced {merged!r}, which is "
                                 f"already an active window outside the merged group {group!r}")
            ks[merged] = rec
            bisect.insort(order, merged, key=_start)
            if rec.hold is not None:
                self.hold_requests.append((rec.hold, key, merged))
            if window in group:
                target = merged
                fresh = None
        if fresh is not None and ks.get(window) is not fresh:
            raise ValueError(f"{self.window_fn!r}.merge_windows lost window {window!r}")
        return target

    def _grow(self, ks: KeyState, key: Any, old: WindowRec, window: Any) -> Any:
        """_merge where the new element's window overlaps one other, `old`, under Sessions'
        merge: the same merged record, made without the new window's own record, which
        brings only an empty accumulator, so `old`'s accumulator is the merged one as it is
        (a CombineFn's merge with a fresh accumulator gives the other back; Beam merges a
        single source's state no further either); `old`'s place in the order is taken by
        the span."""
        was = old.window
        merged = was if was.start_us <= window.start_us and window.max_ts <= was.max_ts \
            else was.span(window)
        self._unqueue(old)
        del ks[was]
        order = ks.order
        order[bisect.bisect_left(order, was.start_us, key=_start)] = merged
        acc = old.acc if old.acc is not None else self.reducer.create()
        rec = ks[merged] = WindowRec(merged, acc, [None] * self.n_trigger)
        rec.pending = old.pending
        rec.hold = old.hold
        self.trigger.slot_on_merge(self.k, rec, 0, [old])
        rec.closed = old.closed
        if merged == was:
            rec.index, rec.nonspec, rec.last_out = old.index, old.nonspec, old.last_out
            rec.retract = list(old.retract)
        elif old.last_out:
            rec.retract = [*old.retract, (old.index, old.nonspec, old.last_out)]
        else:
            rec.retract = list(old.retract)
        if rec.hold is not None:
            self.hold_requests.append((rec.hold, key, merged))
        return merged


class _Folded:
    """A partial accumulator the kernel folded from some of a bundle's values (`_fold`)."""

    __slots__ = ("acc",)

    def __init__(self, acc: Any) -> None:
        self.acc = acc


def element_error(kv: Any, cause: Optional[BaseException]) -> ElementError:
    """The error for an element the kernel could not process: a message when it is not a
    (key, value) pair or its key is not hashable, else `cause` (found only once something
    raised, so the per-element path does no extra checks)."""
    if type(kv) is not tuple or len(kv) != 2:
        return ElementError(kv, f"needs (key, value) pairs, got {kv!r}")
    try:
        hash(kv[0])
    except TypeError:
        return ElementError(kv, f"key {kv[0]!r} is not hashable (use a tuple or str key)")
    return ElementError(kv, cause=cause)


def _remove_sorted(order: List[Any], window: Any) -> None:
    """Remove `window` from windows sorted by start (several may share a start)."""
    i = bisect.bisect_left(order, window.start_us, key=_start)
    while order[i] != window:
        i += 1
    del order[i]
