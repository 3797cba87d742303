"""The one host of the GroupAlsoByWindow kernel, under every runner: the keys' states (in a
store the runner provides), the wake-ups and watermark holds the kernel asks for, the order of
clock moves within a step, the batch run to the end, and kernel errors as `UserCodeError`s.

A runner moves the clocks of one step in this order, as every runner must for the same panes:
`processing_time` (the clock the step's elements arrive at; processing-time wake-ups now due
fire), `elements` (the step's input), then `watermark` (event-time wake-ups due fire, in time
order), and calls `end_step` once the step is over (a local propagation, a Spark micro-batch).
A step may move the processing clock once more after the watermark, before `end_step`: what
fell due while the step ran (Spark's micro-batches, which take seconds) fires in it.
`output_watermark` is the host's output watermark after the step: the minimum of its input
watermark and its holds, never going back.

Keys' states live in a `KeyStates` store: the local runner keeps them in memory
(`InMemoryStates`), Spark's stateful processor in state variables a shard at a time (it loads
the shards of the keys a step touches, and saves those that changed). Wake-ups and holds are
queued by time and checked lazily: an entry that no longer stands is skipped when due. Their
saved form (`save_queues`) names keys and windows, not records, so a store can load states on
demand and find a due record without looking through its key's windows. The saved wake-ups
are cut into slots of `SLOT_US` by their time, each pickled on its own: a restored host
unpickles a slot only once its time may be due, and a step's new wake-ups in a slot it did
not read are appended to it as one more pickle, so a step's work on them follows what it
fires and asks for, not every live window (a long allowed lateness keeps a wake-up for
each). An appended
slot may so keep a wake-up that no longer stands (its window merged away or its time moved
after it was saved) until its time, when it is skipped. A runner whose state is read and
written an entry at a time (Spark) keeps the slots in a `SlotStore` of its own: the saved
queues then name each slot's entry there, so a step does not carry every slot's bytes."""
from __future__ import annotations

import heapq
import io
import pickle
from functools import reduce
from operator import attrgetter
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Optional, Protocol,
                    Sequence, Tuple)

from ..triggers.definitions import EVENT_TIME, PROCESSING_TIME
from ..triggers.kernel import ElementError, GroupAlsoByWindow, KeyState
from ..windowing import MAX_MICROS, MIN_MICROS, WindowedValue
from ..sdk.errors import UserCodeError
from .elementwise import user_code_error
from .lifting import split_tallied
from .watermarks import output_watermark


SLOT_US = 60_000_000   # the span of time one saved slot of wake-ups covers
# a record's wake-up time in each domain
_DUE = {EVENT_TIME: attrgetter("et"), PROCESSING_TIME: attrgetter("pt")}


def _same(key: Any) -> Any:
    return key


def slotted(wakeups: Iterable[Tuple[int, list]]) -> Dict[int, bytes]:
    """Saved wake-ups, [(time, [(window, [key, ...]), ...]), ...], in their saved form: by slot
    (time // `SLOT_US`), each slot's pickled. A slot's bytes may be several such pickles one
    after another (`appended`)."""
    by_slot: Dict[int, list] = {}
    for time, by_window in wakeups:
        by_slot.setdefault(time // SLOT_US, []).append((time, by_window))
    return {slot: pickle.dumps(times, protocol=pickle.HIGHEST_PROTOCOL)
            for slot, times in by_slot.items()}


def appended(slots: Dict[int, bytes], more: Dict[int, bytes]) -> Dict[int, bytes]:
    """`slots` with the slots of `more` after them, each slot's pickles one after another:
    what a slot held is kept as its bytes, neither read nor pickled again."""
    return {**slots, **{slot: slots[slot] + data if slot in slots else data
                        for slot, data in more.items()}}


def slot_entries(data: bytes) -> Iterator[Tuple[int, list]]:
    """A saved slot's wake-ups, (time, [(window, [key, ...]), ...]), from each of its pickles."""
    f = io.BytesIO(data)
    while f.tell() < len(data):
        yield from pickle.load(f)


def unslotted(slots: Dict[int, bytes]) -> List[Tuple[int, list]]:
    """The wake-ups of `slotted`'s form, as one list."""
    return [entry for slot in sorted(slots) for entry in slot_entries(slots[slot])]


class SlotStore(Protocol):
    """Where a host's saved wake-up slots live outside its saved queues (Spark's state
    variables), so that a step reads and writes only the slots it touches: the saved queues
    then hold, per slot, the store's entry for it (whatever `save` returned), not its bytes."""

    def read(self, domain: str, slot: int, entry: Any) -> bytes:
        """The slot's wake-ups in `slotted`'s form (several pickles one after another), taken
        out of the store: what stays queued is saved again with `save`."""

    def save(self, domain: str, unread: Dict[int, Any], new: Dict[int, bytes]) -> Dict[int, Any]:
        """Keep `new` (slot -> pickled wake-ups) after what the slots not read hold (`unread`:
        slot -> entry); returns every slot's entry now."""


class PickledSlots:
    """Saved slots kept in the saved queues themselves, as their bytes (the local runner, a
    checkpoint): a slot's entry is its wake-ups pickled, new ones appended (`appended`)."""

    def read(self, domain: str, slot: int, entry: bytes) -> bytes:
        return entry

    def save(self, domain: str, unread: Dict[int, bytes],
             new: Dict[int, bytes]) -> Dict[int, bytes]:
        return appended(unread, new)


class KeyStates(Protocol):
    """Where a host keeps its keys' states between steps. `states` is the working dict
    (key -> KeyState) the kernel reads and changes."""

    states: Dict[Any, KeyState]

    def ensure(self, keys: Iterable[Any]) -> None:
        """Make the states of `keys` (those that have one) present in `states`."""

    def touch(self, key: Any) -> None:
        """The key's state may have changed in this step: save it with `save`."""

    def save(self) -> None:
        """Write back what changed in this step (keys left with no state leave the store)."""

    def loaded(self, key: Any) -> bool:
        """Whether `states` tells all about the key now (its state, or none if absent)."""


class InMemoryStates:
    """Keys' states kept in memory (the local runner, a batch task)."""

    def __init__(self) -> None:
        self.states: Dict[Any, KeyState] = {}

    def ensure(self, keys: Iterable[Any]) -> None:
        pass

    def touch(self, key: Any) -> None:
        pass

    def save(self) -> None:
        pass

    def loaded(self, key: Any) -> bool:
        return True


class TimeQueue:
    """Entries by time: a heap of the distinct times and, per time, its entries in request
    order, flat (a, b, a, b, ...: no tuple per entry). Many windows share an end (fixed and
    sliding windows), so this pushes and pops one heap entry per distinct time instead of one
    per window."""

    __slots__ = ("times", "at")

    def __init__(self) -> None:
        self.times: List[int] = []
        self.at: Dict[int, list] = {}

    def extend(self, time: int, entries: Sequence[Any]) -> None:
        """Entries due at `time`, after those already there."""
        bucket = self.at.get(time)
        if bucket is None:
            bucket = self.at[time] = []
            heapq.heappush(self.times, time)
        bucket += entries

    def first(self) -> Optional[int]:
        return self.times[0] if self.times else None

    def pop_first(self) -> list:
        """Remove the first time; returns its entries."""
        return self.at.pop(heapq.heappop(self.times))

    def clear(self) -> None:
        self.times.clear()
        self.at.clear()


class KernelHost:
    """One grouping's kernel with its keys' states, wake-ups, holds and clocks (see the module
    docstring). `label` names the transform in errors."""

    def __init__(self, strategy: Any, reducer: Any, label: str,
                 states: Optional[KeyStates] = None, keep_late: bool = False,
                 slot_store: Optional[SlotStore] = None) -> None:
        self.kernel = GroupAlsoByWindow(strategy, reducer)
        if keep_late:
            self.kernel.late_out = []
        self.label = label
        self.store: KeyStates = states if states is not None else InMemoryStates()
        # wake-ups: flat (key, rec) entries, and per domain and time the restored ones as they
        # were saved, [(window, [saved key, ...]), ...], until due (their keys as `_key_of`
        # makes them); a restored time is in its queue too, with no entries of its own
        self.timers = {EVENT_TIME: TimeQueue(), PROCESSING_TIME: TimeQueue()}
        self.restored: Dict[str, Dict[int, list]] = {EVENT_TIME: {}, PROCESSING_TIME: {}}
        # per domain, the restored slots not read yet: slot -> the slot store's entry for them
        # (by default, `PickledSlots`: the wake-ups pickled)
        self.slots: Dict[str, Dict[int, Any]] = {EVENT_TIME: {}, PROCESSING_TIME: {}}
        self.slot_store: SlotStore = slot_store if slot_store is not None else PickledSlots()
        self._key_of: Callable[[Any], Any] = _same
        self.holds = TimeQueue()   # flat (key, window) entries
        self.out_wm = MIN_MICROS
        # the instant of the wake-ups now firing: a partitioned host orders outputs by it
        self.firing: Any = None
        # whether every queued entry has its record and states need no loading (in memory,
        # nothing restored), so due entries go to the kernel as they are
        self._direct = isinstance(self.store, InMemoryStates)

    @property
    def counters(self) -> Any:
        return self.kernel.counters

    @property
    def input_watermark(self) -> int:
        return self.kernel.k.wm

    # --- a step ------------------------------------------------------------------------------
    def elements(self, bundle: Sequence[WindowedValue], out: list,
                 keys: Optional[Iterable[Any]] = None) -> None:
        """A bundle of (key, value) elements; panes go to `out`. `keys`, the bundle's keys,
        lets a store that loads states on demand load them first."""
        self._load(keys)
        try:
            self.kernel.process_bundle(self.store.states, bundle, out)
        except ElementError as e:
            raise self._error(e) from e.cause
        self._drain()

    def _load(self, keys: Optional[Iterable[Any]]) -> None:
        if keys is not None:
            store = self.store
            keys = list(keys)
            store.ensure(keys)
            for key in keys:
                store.touch(key)

    def partials(self, bundle: Sequence[WindowedValue], out: list,
                 keys: Optional[Iterable[Any]] = None) -> None:
        """A bundle of (key, partial accumulator) elements, each folded by the grouping's
        CombineFn from some of a window's inputs elsewhere (combiner lifting, columnar
        aggregation): merged into the windows' accumulators, as `elements` adds values. A
        `Tallied` partial's late and dropped elements are counted by its elements' times."""
        plain, tallied = split_tallied(bundle)
        with self.kernel.folding_partials():
            if plain:
                self.elements(plain, out, keys)
                keys = None
            if tallied:
                self._tallied(tallied, out, keys)

    def _tallied(self, bundle: Sequence[WindowedValue], out: list,
                 keys: Optional[Iterable[Any]]) -> None:
        """`Tallied` partials, one at a time: the kernel counts each as one element, late if
        its time is behind the input watermark, dropped if its window expired or closed; the
        counts then become those of the elements it folded (a combine is lifted only where no
        element can fire or close its window on arrival, `lifting.liftable_in_streams`, so
        one partial's elements share its window's fate)."""
        self._load(keys)
        k, states = self.kernel, self.store.states
        c, wm, combine = k.counters, k.k.wm, k.combiner.combine
        try:
            for wv in bundle:
                key, t = wv.value
                late, expired, closed = c.late, c.dropped_expired, c.dropped_closed
                # where the elements would have put the pane: each at its time, or at the
                # window's end if the watermark had passed it (`GroupAlsoByWindow._hold`)
                end = wv.window.max_ts
                if t.lo >= wm:
                    ts = combine(t.lo, t.hi)
                elif t.hi < wm:
                    ts = end
                else:
                    ts = reduce(combine, [x if x >= wm else end for x in t.time_list()])
                k.process_bundle(states, (WindowedValue.raw((key, t.acc), ts, wv.window,
                                                            wv.pane, 1),), out)
                n = t.rows()
                if c.dropped_expired > expired:
                    c.dropped_expired += n - 1
                    continue
                c.late = late + t.late(wm)
                if c.dropped_closed > closed:
                    c.dropped_closed += n - 1
        except ElementError as e:
            raise self._error(e) from e.cause
        self._drain()

    def processing_time(self, pt: int, out: list) -> None:
        """The processing clock moved to `pt` (it never goes back): fire what is due."""
        k = self.kernel.k
        if pt > k.pt:
            k.pt = pt
        self._fire(PROCESSING_TIME, k.pt, out)

    def watermark(self, wm: int, out: list) -> None:
        """The input watermark moved to `wm` (it never goes back): fire what is due."""
        k = self.kernel.k
        if wm > k.wm:
            k.wm = wm
        self._fire(EVENT_TIME, k.wm, out)

    def key_count(self) -> int:
        """The keys with a state in `states` now."""
        return len(self.store.states)

    def output_watermark(self) -> int:
        """The output watermark after this step's clock moves: the minimum of the input
        watermark and the holds, never going back."""
        self.out_wm = output_watermark(self.out_wm, (self.kernel.k.wm, self.hold()))
        return self.out_wm

    def end_step(self) -> None:
        """The step is over: the keys' output watermarks settle from here, and the states
        that changed are saved."""
        self.kernel.end_step()
        self.store.save()

    def take_late(self) -> List[WindowedValue]:
        """The elements kept out of panes since the last call, as they came (too late for
        their window, or for one a finished trigger closed), for a grouping whose late
        output keeps them (`keep_late`)."""
        late = self.kernel.late_out
        if not late:
            return []
        self.kernel.late_out = []
        return late

    def run_to_end(self, elements: Sequence[WindowedValue], now: int) -> List[WindowedValue]:
        """A bounded input's panes: every element in, then the watermark from MIN to MAX
        (the paper's batch execution), at processing time `now`."""
        out: List[WindowedValue] = []
        self.kernel.k.pt = now
        self.elements(elements, out)
        self.watermark(MAX_MICROS, out)
        return out

    # --- what a host asks ---------------------------------------------------------------------
    def next_processing_timer(self) -> Optional[int]:
        return self.next_wake_up(PROCESSING_TIME)

    def next_wake_up(self, domain: str) -> Optional[int]:
        """The earliest queued wake-up's time in `domain` (reading the restored slots that
        may hold an earlier one than those read)."""
        queue, slots = self.timers[domain], self.slots[domain]
        while slots and (queue.first() is None or min(slots) * SLOT_US <= queue.first()):
            self._read_slot(domain, min(slots))
        return queue.first()

    def hold(self) -> int:
        """The earliest watermark hold that still stands (stale entries are dropped)."""
        holds, kernel, store = self.holds, self.kernel, self.store
        times, at = holds.times, holds.at
        if times and not store.states and isinstance(store, InMemoryStates):
            holds.clear()   # no window state left, so no hold stands (e.g. batch's end)
        while times:
            hold = times[0]
            bucket = at[hold]
            while bucket:   # any one current entry holds at this time; drop stale ones
                key, window = bucket[-2], bucket[-1]
                if not store.loaded(key):
                    store.ensure((key,))
                if kernel.is_current_hold(store.states.get(key), hold, window):
                    return hold
                del bucket[-2:]
            holds.pop_first()
        return MAX_MICROS

    # --- state ---------------------------------------------------------------------------------
    def save(self) -> Dict[str, Any]:
        """Everything the host keeps, for a checkpoint: the keys' states, the clocks, wake-ups
        and holds, and the counters."""
        return dict(states=self.store.states, queues=self.save_queues(), counters=self.counters)

    def load(self, saved: Dict[str, Any]) -> None:
        """Put back what `save` gave."""
        self.store.states = saved["states"]
        self.restore_queues(saved["queues"])
        self.kernel.counters = saved["counters"]

    def save_queues(self, key_form: Callable[[Any], Any] = _same) -> Dict[str, Any]:
        """The clocks, wake-ups and holds as plain data naming keys and windows (not records),
        for a store that keeps states apart (`restore_queues`); keys as `key_form` gives them.
        A time's wake-ups are grouped by window (fixed and sliding windows' keys share a few),
        each (key, window) once. Entries that no longer stand are left out where the key's
        state is at hand: a session's every merged-away window left one, and a host that
        saves its queues every step (Spark's micro-batches) would carry them all until their
        time. Restored wake-ups at a time no record left since (the kernel's `moved`) still
        stand, and are saved as they came. Wake-ups are saved by slot (time // `SLOT_US`),
        each slot pickled; a restored slot this step never read is saved as its bytes, with
        the step's new wake-ups in it appended (`appended`): its entries that a step moved or
        merged away stay until their time, as an in-memory queue keeps them. With a
        `slot_store` the new wake-ups go to the store, which keeps them after what its slots
        hold, and the saved queues hold its entries: call this once a step."""
        k, kernel = self.kernel.k, self.kernel
        states, loaded, key_of = self.store.states, self.store.loaded, self._key_of
        timers = {}
        for domain, queue in self.timers.items():
            due = _DUE[domain]
            restored, moved, unread = self.restored[domain], kernel.moved[domain], self.slots[domain]
            saved = []
            for time, entries in queue.at.items():
                groups = restored.get(time, ())
                by_window: Dict[Any, Dict[Any, None]] = {}   # window -> saved keys
                checked = time in moved
                for window, keys in groups:
                    for saved_key in keys:
                        if checked:
                            key = key_of(saved_key)
                            if loaded(key):
                                ks = states.get(key)
                                rec = ks.get(window) if ks else None
                                if rec is None or due(rec) != time:
                                    continue
                        by_window.setdefault(window, {})[saved_key] = None
                for i in range(0, len(entries), 2):
                    key, rec = entries[i], entries[i + 1]
                    # a record the kernel dropped (expired, merged away) has no wake-ups
                    if due(rec) == time:
                        by_window.setdefault(rec.window, {})[key_form(key)] = None
                kept = [(w, list(keys)) for w, keys in by_window.items()]
                if kept:
                    saved.append((time, kept))
            timers[domain] = self.slot_store.save(domain, unread, slotted(saved))
        holds = []
        for time, entries in self.holds.at.items():
            kept = []
            for i in range(0, len(entries), 2):
                key, window = entries[i], entries[i + 1]
                if not loaded(key) or kernel.is_current_hold(states.get(key), time, window):
                    kept += (key_form(key), window)
            if kept:
                holds.append((time, kept))
        return dict(wm=k.wm, pt=k.pt, settled_wm=k.settled_wm, step=k.step, out_wm=self.out_wm,
                    timers=timers, holds=holds)

    def restore_queues(self, saved: Dict[str, Any], key_of: Callable[[Any], Any] = _same) -> None:
        """Put back what `save_queues` gave (keys as `key_of` makes them of their saved form)."""
        k = self.kernel.k
        k.wm, k.pt, k.settled_wm, k.step = saved["wm"], saved["pt"], saved["settled_wm"], saved["step"]
        self.out_wm = saved["out_wm"]
        self._key_of = key_of
        for domain, slots in saved["timers"].items():
            self.slots[domain].update(slots)
        for time, entries in saved["holds"]:
            self.holds.extend(time, [key_of(x) if i % 2 == 0 else x for i, x in enumerate(entries)])
        self._direct = False

    # --- internals -----------------------------------------------------------------------------
    def _read_slot(self, domain: str, slot: int) -> None:
        """Queue a restored slot's wake-ups (their records found when due, by `_resolve`)."""
        queue, restored = self.timers[domain], self.restored[domain]
        data = self.slot_store.read(domain, slot, self.slots[domain].pop(slot))
        for time, by_window in slot_entries(data):
            queue.extend(time, ())
            restored.setdefault(time, []).extend(by_window)

    def _drain(self) -> None:
        """Queue the wake-ups and holds the kernel asked for."""
        k = self.kernel
        for domain, at in k.timer_requests.items():
            if at:
                queue = self.timers[domain]
                for time, entries in at.items():
                    queue.extend(time, entries)
                at.clear()
        if k.hold_requests:
            holds = self.holds
            for hold, key, window in k.hold_requests:
                holds.extend(hold, (key, window))
            k.hold_requests.clear()

    def _fire(self, domain: str, now: int, out: list) -> None:
        """The wake-ups due by `now`, in time order. The kernel only asks for wake-ups later
        than the clock it was shown, so nothing requested while firing is due now; the loop
        still takes late additions in order."""
        kernel, queue = self.kernel, self.timers[domain]
        restored, moved, key_of = self.restored[domain], kernel.moved[domain], self._key_of
        due = _DUE[domain]
        unread = self.slots[domain]
        if unread:
            for slot in [slot for slot in unread if slot * SLOT_US <= now]:
                self._read_slot(domain, slot)
        times = queue.times
        while times and times[0] <= now:
            time = times[0]
            entries = queue.pop_first()
            moved.discard(time)
            groups = restored.pop(time, None)
            prefix = 0
            if groups:   # the restored ones first, as they were queued before
                restored_entries = [x for window, keys in groups for key in keys
                                    for x in (key_of(key), window)]
                prefix = len(restored_entries)
                entries = restored_entries + entries
            entries = self._resolve(entries, prefix, due, time)
            self.firing = time
            try:
                kernel.on_timers(self.store.states, domain, time, entries, out)
            except ElementError as e:
                raise self._error(e) from e.cause
            self._drain()

    def _resolve(self, entries: list, restored: int, due: Callable[[Any], Any],
                 time: int) -> list:
        """The entries due at `time` that still stand, with their records: the first
        `restored` items are restored entries (key, window), each made (key, the window's
        record); an entry whose window is gone or whose wake-up (`due` of its record) moved
        is left out, as the kernel would ignore it. Every key due is loaded; only the keys
        with an entry that stands are touched (a slot keeps stale entries until their time)."""
        if self._direct:
            return entries
        store = self.store
        store.ensure(list(dict.fromkeys(entries[0::2])))
        states = store.states
        resolved: list = []
        for i in range(0, len(entries), 2):
            key, rec = entries[i], entries[i + 1]
            if i < restored:
                ks = states.get(key)
                rec = ks.get(rec) if ks else None
            if rec is not None and due(rec) == time:
                resolved += (key, rec)
        for key in dict.fromkeys(resolved[0::2]):
            store.touch(key)
        return resolved

    def _error(self, e: ElementError) -> UserCodeError:
        if e.cause is None:
            return UserCodeError(f"transform {self.label!r}: {e}")
        return user_code_error(self.label, e.element, e.cause)
