"""The runtime's timer service (`pomset.runtime.timers`) with timers set and cleared by id
(`KeyedTimers`), against a model of what a timer is: set, reset and clear in both time
domains fire the last time set exactly once, in time order; the hold is the earliest hold of
the timers pending; saving and restoring through slots mid-way changes nothing."""
import pickle

from hypothesis import given, settings, strategies as st

from pomset.runtime.timers import (SLOT_US, InMemoryStore, KeyedTimers, TimerService,
                                   unslotted)
from pomset.triggers.definitions import EVENT_TIME, PROCESSING_TIME
from pomset.windowing import MAX_MICROS

DOMAINS = (EVENT_TIME, PROCESSING_TIME)
# a few times spread over several slots, with ties
TIMES = st.integers(0, 24).map(lambda i: i * SLOT_US // 4)
IDS = [(group, name) for group in ("w1", "w2") for name in ("t", "u")]   # (group, name)
OPS = st.lists(st.one_of(
    st.tuples(st.just("set"), st.sampled_from("abc"), st.sampled_from(IDS),
              st.sampled_from(DOMAINS), TIMES, st.one_of(st.none(), TIMES)),
    st.tuples(st.just("clear"), st.sampled_from("abc"), st.sampled_from(IDS)),
    st.tuples(st.just("advance"), st.sampled_from(DOMAINS), TIMES),
    st.tuples(st.just("save"),)), max_size=40)


class _Host:
    """A client of the service: its keys' timer tables in a keyed store in memory."""

    def __init__(self) -> None:
        self.store = InMemoryStore()
        self.keyed = KeyedTimers(self._table)
        self.timers = TimerService(self.keyed, self.store)

    def _table(self, key, group, create):
        groups = self.store.states.get(key)
        if groups is None:
            if not create:
                return None
            groups = self.store.states[key] = {}
        table = groups.get(group)
        if table is None and create:
            table = groups[group] = {}
        return table

    def fire(self, domain, now):
        fired = []
        for time, entries in self.timers.due(domain, now):
            for i in range(0, len(entries), 2):
                key, tid = entries[i], entries[i + 1]
                if self.keyed.take(domain, key, tid, time) is not None:
                    fired.append((time, key, tid))
        return fired

    def reloaded(self) -> "_Host":
        """This host's state through bytes, in a fresh host (its timers in saved slots)."""
        states, queues = pickle.loads(pickle.dumps((self.store.states, self.timers.save())))
        for domain in DOMAINS:
            assert all(time // SLOT_US == slot for slot, data in queues["timers"][domain].items()
                       for time, _ in unslotted({slot: data}))
        host = _Host()
        host.store.states = states
        host.timers.restore(queues)
        return host


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_the_last_time_set_fires_once_in_time_order_and_holds_are_the_earliest(ops):
    host, model = _Host(), {}   # model: (key, name) -> (domain, time, hold)
    clocks = dict.fromkeys(DOMAINS, 0)
    for op in ops:
        if op[0] == "set":
            _, key, name, domain, time, hold = op
            host.keyed.set(host.timers, key, name, domain, time, hold)
            model[key, name] = (domain, time, hold)
        elif op[0] == "clear":
            _, key, name = op
            host.keyed.clear(key, name)
            model.pop((key, name), None)
        elif op[0] == "advance":
            _, domain, time = op
            clocks[domain] = max(clocks[domain], time)
            fired = host.fire(domain, clocks[domain])
            due = sorted((t, k, n) for (k, n), (d, t, _) in model.items()
                         if d == domain and t <= clocks[domain])
            assert [t for t, _, _ in fired] == sorted(t for t, _, _ in fired)   # in time order
            assert sorted(fired) == due   # each the last time set, once
            for _, k, n in due:
                del model[k, n]
        else:
            host = host.reloaded()
        holds = [h for _, _, h in model.values() if h is not None]
        assert host.timers.hold() == min(holds, default=MAX_MICROS)
    for domain in DOMAINS:   # at the end of time, what is still set fires, and only that
        fired = host.fire(domain, MAX_MICROS)
        assert sorted(fired) == sorted((t, k, n) for (k, n), (d, t, _) in model.items()
                                       if d == domain)
    assert host.timers.hold() == MAX_MICROS


def test_a_restored_service_reads_only_the_slots_that_may_be_due():
    """Timers saved in three slots: a clock that reaches the first reads it alone; the
    others stay as saved, a new timer in one of them appended to its bytes unread."""
    host = _Host()
    for i, name in enumerate("abc"):
        host.keyed.set(host.timers, "k", ("w", name), EVENT_TIME, (2 * i + 1) * SLOT_US, None)
    host = host.reloaded()
    assert host.fire(EVENT_TIME, SLOT_US) == [(SLOT_US, "k", ("w", "a"))]
    assert sorted(host.timers.slots[EVENT_TIME]) == [3, 5]
    before = host.timers.slots[EVENT_TIME][5]
    host.keyed.set(host.timers, "j", ("w", "d"), EVENT_TIME, 5 * SLOT_US + 1, None)
    after = host.timers.save()["timers"][EVENT_TIME]
    assert after[3] is host.timers.slots[EVENT_TIME][3]
    assert after[5].startswith(before) and len(after[5]) > len(before)
    host = host.reloaded()
    assert host.fire(EVENT_TIME, MAX_MICROS) == [
        (3 * SLOT_US, "k", ("w", "b")), (5 * SLOT_US, "k", ("w", "c")),
        (5 * SLOT_US + 1, "j", ("w", "d"))]
