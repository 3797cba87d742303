"""The one timer service of the runtime, and the keyed store its clients keep their keys'
state in. The GroupAlsoByWindow kernel's host (`kernel_host`) and the stateful DoFn host
(`stateful_dofn`) are its clients; each runner adapts the store and the saved slots once.

A timer is an entry (key, ref) due at a time in one of two time domains, `EVENT_TIME` (the
input watermark) and `PROCESSING_TIME` (the processing clock); `ref` is the client's (the
kernel's window record, a DoFn's (window, (timer name, tag))). What a timer is set to lives in
the key's state, where the client keeps it, so setting a timer again or clearing it leaves its
queued entry behind: the entry is checked when due (`TimerClient.resolve`) and skipped if it no
longer stands (lazy invalidation). A hold is likewise an entry (key, ref) at the time it holds
the output watermark back to; the earliest that stands is the service's `hold`.

Queues keep entries by time: a heap of distinct times and, per time, their entries in request
order, flat (key, ref, key, ref, ...), so windows sharing an end share a heap entry. Saved,
the entries name keys and refs as the client saves them, grouped per time by ref, and are cut
into slots of `SLOT_US` by time, each pickled on its own (`slotted`): a restored service reads
a slot only once its time may be due, and appends a step's new entries to a slot it did not
read without reading it, so a step's work on timers follows what it fires and sets. A
`SlotStore` keeps the slots where the runner stores by key (Spark's state variables): the
saved queues then name each slot's entry there."""
from __future__ import annotations

import heapq
import io
import pickle
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Optional, Protocol,
                    Sequence, Set, Tuple)

from ..triggers.definitions import EVENT_TIME, PROCESSING_TIME
from ..windowing import MAX_MICROS

SLOT_US = 60_000_000   # the span of time one saved slot of timers covers
DOMAINS = (EVENT_TIME, PROCESSING_TIME)


def _same(key: Any) -> Any:
    return key


# --- the keyed store --------------------------------------------------------------------------

class KeyedStore(Protocol):
    """Where a client keeps its keys' states between steps. `states` is the working dict
    (key -> state) the client reads and changes."""

    states: Dict[Any, Any]

    def ensure(self, keys: Iterable[Any]) -> None:
        """Make the states of `keys` (those that have one) present in `states`."""

    def touch(self, key: Any) -> None:
        """The key's state may have changed in this step: save it with `save`."""

    def save(self) -> None:
        """Write back what changed in this step (keys left with no state leave the store)."""

    def loaded(self, key: Any) -> bool:
        """Whether `states` tells all about the key now (its state, or none if absent)."""


class InMemoryStore:
    """Keys' states kept in memory (the local runner, a batch task, a checkpoint's host)."""

    def __init__(self) -> None:
        self.states: Dict[Any, Any] = {}

    def ensure(self, keys: Iterable[Any]) -> None:
        pass

    def touch(self, key: Any) -> None:
        pass

    def save(self) -> None:
        pass

    def loaded(self, key: Any) -> bool:
        return True


# --- saved slots ------------------------------------------------------------------------------

def slotted(timers: Iterable[Tuple[int, list]]) -> Dict[int, bytes]:
    """Saved timers, [(time, [(ref, [key, ...]), ...]), ...], in their saved form: by slot
    (time // `SLOT_US`), each slot's pickled. A slot's bytes may be several such pickles one
    after another (`appended`)."""
    by_slot: Dict[int, list] = {}
    for time, by_ref in timers:
        by_slot.setdefault(time // SLOT_US, []).append((time, by_ref))
    return {slot: pickle.dumps(times, protocol=pickle.HIGHEST_PROTOCOL)
            for slot, times in by_slot.items()}


def appended(slots: Dict[int, bytes], more: Dict[int, bytes]) -> Dict[int, bytes]:
    """`slots` with the slots of `more` after them, each slot's pickles one after another:
    what a slot held is kept as its bytes, neither read nor pickled again."""
    return {**slots, **{slot: slots[slot] + data if slot in slots else data
                        for slot, data in more.items()}}


def slot_entries(data: bytes) -> Iterator[Tuple[int, list]]:
    """A saved slot's timers, (time, [(ref, [key, ...]), ...]), from each of its pickles."""
    f = io.BytesIO(data)
    while f.tell() < len(data):
        yield from pickle.load(f)


def unslotted(slots: Dict[int, bytes]) -> List[Tuple[int, list]]:
    """The timers of `slotted`'s form, as one list."""
    return [entry for slot in sorted(slots) for entry in slot_entries(slots[slot])]


class SlotStore(Protocol):
    """Where saved slots live outside the saved queues (Spark's state variables), so that a
    step reads and writes only the slots it touches: the saved queues then hold, per slot, the
    store's entry for it (whatever `save` returned), not its bytes."""

    def read(self, domain: str, slot: int, entry: Any) -> bytes:
        """The slot's timers in `slotted`'s form, taken out of the store: what stays queued
        is saved again with `save`."""

    def save(self, domain: str, unread: Dict[int, Any], new: Dict[int, bytes]) -> Dict[int, Any]:
        """Keep `new` (slot -> pickled timers) after what the slots not read hold (`unread`:
        slot -> entry); returns every slot's entry now."""


class PickledSlots:
    """Saved slots kept in the saved queues themselves, as their bytes (the local runner, a
    checkpoint): a slot's entry is its timers pickled, new ones appended (`appended`)."""

    def read(self, domain: str, slot: int, entry: bytes) -> bytes:
        return entry

    def save(self, domain: str, unread: Dict[int, bytes],
             new: Dict[int, bytes]) -> Dict[int, bytes]:
        return appended(unread, new)


# --- the service ------------------------------------------------------------------------------

class TimerClient(Protocol):
    """What the service asks the client whose timers it keeps (their settings live in the
    client's keys' states)."""

    def saved_ref(self, domain: str, key: Any, ref: Any, time: int) -> Any:
        """A live entry's ref as saved, or None if it no longer stands at `time`."""

    def resolve(self, domain: str, key: Any, saved: Any, time: int) -> Any:
        """A restored entry's live ref (its key's state loaded), or None if it no longer
        stands at `time`."""

    def holds(self, key: Any, ref: Any, time: int) -> bool:
        """Whether the entry still holds the output watermark at `time` (its key loaded)."""


class TimeQueue:
    """Entries by time: a heap of the distinct times and, per time, its entries in request
    order, flat (a, b, a, b, ...: no tuple per entry)."""

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


class TimerService:
    """The timers and holds of one client over its keyed store `store` (see the module
    docstring). `moved[domain]`, the client's, names the times whose restored entries may no
    longer stand, which saving checks; others are saved as they came until due."""

    def __init__(self, client: TimerClient, store: KeyedStore,
                 slot_store: Optional[SlotStore] = None,
                 moved: Optional[Dict[str, Set[int]]] = None) -> None:
        self.client, self.store = client, store
        self.slot_store: SlotStore = slot_store if slot_store is not None else PickledSlots()
        self.moved = moved if moved is not None else {EVENT_TIME: set(), PROCESSING_TIME: set()}
        self.queues = {EVENT_TIME: TimeQueue(), PROCESSING_TIME: TimeQueue()}
        # per domain and time the restored entries as saved, [(ref, [saved key, ...]), ...],
        # until due; a restored time is in its queue too, with no entries of its own
        self.restored: Dict[str, Dict[int, list]] = {EVENT_TIME: {}, PROCESSING_TIME: {}}
        # per domain, the restored slots not read yet: slot -> the slot store's entry
        self.slots: Dict[str, Dict[int, Any]] = {EVENT_TIME: {}, PROCESSING_TIME: {}}
        self.holds = TimeQueue()   # flat (key, ref) entries
        self.key_of: Callable[[Any], Any] = _same
        # the time of the timers now firing: a partitioned host orders outputs by it
        self.firing: Any = None
        # whether every queued entry is live and states need no loading, so due entries go
        # to the client as they are
        self.direct = isinstance(store, InMemoryStore)

    def clear(self) -> None:
        """No timers and no holds."""
        for domain in DOMAINS:
            self.queues[domain].clear()
            self.restored[domain].clear()
            self.slots[domain].clear()
        self.holds.clear()

    # --- registering ------------------------------------------------------------------------
    def add(self, domain: str, time: int, entries: Sequence[Any]) -> None:
        """Timers (key, ref, key, ref, ...) due at `time` in `domain`."""
        self.queues[domain].extend(time, entries)

    def add_all(self, domain: str, at: Dict[int, list]) -> None:
        """Timers by time (time -> key, ref, key, ref, ...) in `domain`."""
        queue = self.queues[domain]
        for time, entries in at.items():
            queue.extend(time, entries)

    def add_holds(self, requests: Iterable[Tuple[int, Any, Any]]) -> None:
        """Holds (time, key, ref), as `add_hold` each."""
        holds = self.holds
        for time, key, ref in requests:
            holds.extend(time, (key, ref))

    def add_hold(self, time: int, key: Any, ref: Any) -> None:
        """Hold the output watermark at `time` while the client says (key, ref) holds."""
        self.holds.extend(time, (key, ref))

    # --- asking -----------------------------------------------------------------------------
    def next(self, domain: str) -> Optional[int]:
        """The earliest queued time in `domain` (reading the restored slots that may hold an
        earlier one than those read); the entry may no longer stand."""
        queue, slots = self.queues[domain], self.slots[domain]
        while slots and (queue.first() is None or min(slots) * SLOT_US <= queue.first()):
            self._read_slot(domain, min(slots))
        return queue.first()

    def next_standing(self, domain: str) -> Optional[int]:
        """`next`, dropping first the times whose live entries all no longer stand (a time
        with restored entries counts as standing: they are checked when due)."""
        queue, client = self.queues[domain], self.client
        while True:
            time = self.next(domain)
            if time is None or time in self.restored[domain]:
                return time
            bucket = queue.at[time]
            if any(client.saved_ref(domain, bucket[i], bucket[i + 1], time) is not None
                   for i in range(0, len(bucket), 2)):
                return time
            queue.pop_first()

    def hold(self) -> int:
        """The earliest hold that still stands (MAX when none; stale entries are dropped)."""
        holds, client, store = self.holds, self.client, self.store
        times, at = holds.times, holds.at
        if times and not store.states and isinstance(store, InMemoryStore):
            holds.clear()   # no state left, so no hold stands (e.g. batch's end)
        while times:
            hold = times[0]
            bucket = at[hold]
            while bucket:   # any one current entry holds at this time; drop stale ones
                key, ref = bucket[-2], bucket[-1]
                if not store.loaded(key):
                    store.ensure((key,))
                if client.holds(key, ref, hold):
                    return hold
                del bucket[-2:]
            holds.pop_first()
        return MAX_MICROS

    def due(self, domain: str, now: int) -> Iterator[Tuple[int, list]]:
        """The times due by `now` in time order, each with its entries that stand (flat key,
        ref; restored ones resolved, their keys loaded and touched). Timers added while the
        caller fires one time are taken in order, if due."""
        queue = self.queues[domain]
        restored, moved, key_of = self.restored[domain], self.moved[domain], self.key_of
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
                restored_entries = [x for ref, keys in groups for key in keys
                                    for x in (key_of(key), ref)]
                prefix = len(restored_entries)
                entries = restored_entries + entries
            if not self.direct:
                entries = self._resolve(domain, entries, prefix, time)
            self.firing = time
            yield time, entries

    def _resolve(self, domain: str, entries: list, restored: int, time: int) -> list:
        """The entries that still stand at `time`, with live refs: the first `restored` items
        are restored. Every key due is loaded; only keys with an entry that stands are
        touched (a slot keeps stale entries until their time)."""
        store, client = self.store, self.client
        store.ensure(list(dict.fromkeys(entries[0::2])))
        resolved: list = []
        for i in range(0, len(entries), 2):
            key, ref = entries[i], entries[i + 1]
            if i < restored:
                ref = client.resolve(domain, key, ref, time)
            elif client.saved_ref(domain, key, ref, time) is None:
                continue
            if ref is not None:
                resolved += (key, ref)
        for key in dict.fromkeys(resolved[0::2]):
            store.touch(key)
        return resolved

    def _read_slot(self, domain: str, slot: int) -> None:
        """Queue a restored slot's timers (resolved when due)."""
        queue, restored = self.queues[domain], self.restored[domain]
        data = self.slot_store.read(domain, slot, self.slots[domain].pop(slot))
        for time, by_ref in slot_entries(data):
            queue.extend(time, ())
            restored.setdefault(time, []).extend(by_ref)

    # --- saved form -------------------------------------------------------------------------
    def save(self, key_form: Callable[[Any], Any] = _same) -> Dict[str, Any]:
        """The timers and holds as plain data naming keys (as `key_form` gives them) and refs
        as saved: per domain its slots (`slotted`, through the slot store), each (key, ref)
        once per time, and the holds that stand. Entries that no longer stand are left out
        where the key's state is at hand; a restored slot never read is saved as it was, the
        step's new timers in it appended. With a slot store, call this once a step."""
        store, client = self.store, self.client
        loaded = store.loaded
        key_of = self.key_of
        timers = {}
        for domain, queue in self.queues.items():
            restored, moved, unread = self.restored[domain], self.moved[domain], self.slots[domain]
            saved = []
            for time, entries in queue.at.items():
                by_ref: Dict[Any, Dict[Any, None]] = {}   # saved ref -> saved keys
                checked = time in moved
                for ref, keys in restored.get(time, ()):
                    for saved_key in keys:
                        if checked:
                            key = key_of(saved_key)
                            if loaded(key) and client.resolve(domain, key, ref, time) is None:
                                continue
                        by_ref.setdefault(ref, {})[saved_key] = None
                for i in range(0, len(entries), 2):
                    key, ref = entries[i], entries[i + 1]
                    ref = client.saved_ref(domain, key, ref, time)
                    if ref is not None:
                        by_ref.setdefault(ref, {})[key_form(key)] = None
                kept = [(ref, list(keys)) for ref, keys in by_ref.items()]
                if kept:
                    saved.append((time, kept))
            timers[domain] = self.slot_store.save(domain, unread, slotted(saved))
        holds = []
        for time, entries in self.holds.at.items():
            kept = []
            for i in range(0, len(entries), 2):
                key, ref = entries[i], entries[i + 1]
                if not loaded(key) or client.holds(key, ref, time):
                    kept += (key_form(key), ref)
            if kept:
                holds.append((time, kept))
        return dict(timers=timers, holds=holds)

    def restore(self, saved: Dict[str, Any], key_of: Callable[[Any], Any] = _same) -> None:
        """Put back what `save` gave (keys as `key_of` makes them of their saved form)."""
        self.key_of = key_of
        for domain, slots in saved["timers"].items():
            self.slots[domain].update(slots)
        for time, entries in saved["holds"]:
            self.holds.extend(time, [key_of(x) if i % 2 == 0 else x for i, x in enumerate(entries)])
        self.direct = False


class KeyedTimers:
    """Timers set and cleared by id (a `TimerService` client). An id is (group, name): a key's
    timers are kept in its state a group at a time, `table(key, group, create)` giving the
    group's table name -> (domain, time, hold) (None if the key has no such group and not
    `create`). Each set is queued in the service and checked against the table when due."""

    def __init__(self, table: Callable[[Any, Any, bool],
                                       Optional[Dict[Any, Tuple[str, int, Any]]]]) -> None:
        self.table = table

    def set(self, service: TimerService, key: Any, tid: Tuple[Any, Any], domain: str,
            time: int, hold: Optional[int]) -> None:
        """Set (or move) the key's timer `tid` to `time` in `domain`, holding the output
        watermark at `hold` (None: no hold) until it fires or is cleared."""
        table = self.table(key, tid[0], True)
        name = tid[1]
        old = table.get(name)
        table[name] = (domain, time, hold)
        if old is None or old[0] != domain or old[1] != time:
            service.add(domain, time, (key, tid))
        if hold is not None and (old is None or old[2] != hold):
            service.add_hold(hold, key, tid)

    def clear(self, key: Any, tid: Tuple[Any, Any]) -> None:
        """The key's timer `tid` set no more (its queued entry is skipped when due)."""
        table = self.table(key, tid[0], False)
        if table:
            table.pop(tid[1], None)

    def take(self, domain: str, key: Any, tid: Tuple[Any, Any],
             time: int) -> Optional[Tuple[str, int, Any]]:
        """A due entry's setting, taken out of its table (it fires), or None if the timer no
        longer stands at `time`."""
        table = self.table(key, tid[0], False)
        setting = table.get(tid[1]) if table else None
        if setting is None or setting[0] != domain or setting[1] != time:
            return None
        del table[tid[1]]
        return setting

    def stands(self, domain: str, key: Any, tid: Tuple[Any, Any], time: int) -> bool:
        table = self.table(key, tid[0], False)
        setting = table.get(tid[1]) if table else None
        return setting is not None and setting[0] == domain and setting[1] == time

    def saved_ref(self, domain: str, key: Any, ref: Any, time: int) -> Any:
        return ref if self.stands(domain, key, ref, time) else None

    def resolve(self, domain: str, key: Any, saved: Any, time: int) -> Any:
        return saved if self.stands(domain, key, saved, time) else None

    def holds(self, key: Any, ref: Any, time: int) -> bool:
        table = self.table(key, ref[0], False)
        setting = table.get(ref[1]) if table else None
        return setting is not None and setting[2] == time
