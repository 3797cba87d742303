"""The Elastic ScaleGate (STRETCH §6): readers see every tuple once, in timestamp order, never
before it is ready, while sources and readers come and go; and concurrent sources and
readers on threads."""
import threading

import pytest
from hypothesis import given, settings, strategies as st

from pomset.runtime.ordered.scalegate import CLOSED, ScaleGate

# one action: (kind, who, amount)
ACTIONS = st.lists(st.tuples(st.sampled_from(["add", "advance", "get", "add_reader",
                                              "remove_reader", "add_source", "remove_source"]),
                             st.integers(0, 5), st.integers(0, 3)), max_size=80)


@settings(max_examples=300, deadline=None)
@given(ACTIONS)
def test_readers_get_every_ready_tuple_once_in_order(actions):
    gate = ScaleGate(sources=["s0", "s1"], readers=["r0"])
    frontier = {"s0": float("-inf"), "s1": float("-inf")}
    last = dict(frontier)
    added = []            # (ts, order, item) of every tuple added
    got = {"r0": []}
    n = names = 0
    for kind, who, amount in actions:
        sources, readers = sorted(frontier), sorted(got)
        if kind == "add" and sources:
            s = sources[who % len(sources)]
            ts = max(last[s], 0) + amount
            gate.add(s, ts, n, order=(0, n))
            added.append((ts, (0, n), n))
            last[s] = frontier[s] = ts
            n += 1
        elif kind == "advance" and sources:
            s = sources[who % len(sources)]
            ts = max(last[s], 0) + amount
            gate.advance(s, ts)
            last[s] = frontier[s] = max(frontier[s], ts)
        elif kind == "get" and readers:
            r = readers[who % len(readers)]
            item = gate.get(r)
            if item is not None:
                # never before it is ready: below every current source's frontier
                assert item[0] < min(frontier.values(), default=CLOSED)
                got[r].append(item)
        elif kind == "add_reader" and readers:
            like = readers[who % len(readers)]
            names += 1
            new = f"r-new{names}"
            assert gate.add_readers([new], like=like)
            got[new] = []
        elif kind == "remove_reader" and len(readers) > 1:
            r = readers[who % len(readers)]
            if r != "r0":
                assert gate.remove_readers([r])
                del got[r]
        elif kind == "add_source" and sources:
            like = sources[who % len(sources)]
            names += 1
            new = f"s-new{names}"
            assert gate.add_sources([new], like=like)
            frontier[new] = last[new] = frontier[like]
        elif kind == "remove_source" and len(sources) > 1:
            s = sources[who % len(sources)]
            assert gate.remove_sources([s])
            del frontier[s]
    for s in list(frontier):
        gate.close(s)
    for r in got:
        while (item := gate.get(r)) is not None:
            got[r].append(item)
    # the reference reader saw every tuple once, sorted by (ts, order)
    expected = [(ts, item) for ts, _, item in sorted(added)]
    assert got["r0"] == expected
    # a reader that joined like another gets what that one got from then on
    for r in got:
        if r != "r0":
            assert got[r] == expected[len(expected) - len(got[r]):]
            assert all(a[0] <= b[0] for a, b in zip(got[r], got[r][1:]))


def test_ties_leave_in_one_order_whatever_the_interleaving():
    a = ScaleGate(sources=["x", "y"], readers=["r"])
    b = ScaleGate(sources=["x", "y"], readers=["r"])
    a.add("x", 5, "x5")
    a.add("y", 5, "y5")
    b.add("y", 5, "y5")
    b.add("x", 5, "x5")
    for g in (a, b):
        assert g.get("r") is None          # ts 5 is not ready while a source stands at 5
        g.close("x")
        g.close("y")
    assert a.get_many("r") == b.get_many("r") == [(5, "x5"), (5, "y5")]


def test_a_source_may_not_go_back():
    gate = ScaleGate(sources=["s"], readers=["r"])
    gate.add("s", 10, "a")
    with pytest.raises(ValueError, match="must not go back"):
        gate.add("s", 9, "b")
    with pytest.raises(KeyError, match="not a source"):
        gate.add("t", 11, "c")


def test_get_many_stops_before_a_time_and_at_a_limit():
    gate = ScaleGate(sources=["s"], readers=["r"])
    for t in range(10):
        gate.add("s", t, t)
    gate.close("s")
    assert [t for t, _ in gate.get_many("r", before=4)] == [0, 1, 2, 3]
    assert [t for t, _ in gate.get_many("r", limit=2)] == [4, 5]
    assert gate.backlog("r") == 4


def test_concurrent_sources_and_readers_on_threads():
    sources, readers, per = 4, 3, 3000
    gate = ScaleGate(sources=range(sources), readers=range(readers))
    got = {r: [] for r in range(readers)}
    done = threading.Event()

    def produce(s: int) -> None:
        for i in range(per):
            gate.add(s, i * sources + s, (s, i))
        gate.close(s)

    def consume(r: int) -> None:
        while True:
            batch = gate.get_many(r, limit=100)
            got[r].extend(batch)
            if not batch and done.is_set() and gate.backlog(r) == 0:
                return

    threads = [threading.Thread(target=produce, args=(s,)) for s in range(sources)]
    readers_t = [threading.Thread(target=consume, args=(r,)) for r in range(readers)]
    for t in threads + readers_t:
        t.start()
    for t in threads:
        t.join()
    done.set()
    for t in readers_t:
        t.join()
    expected = sorted(((i * sources + s, (s, i)) for s in range(sources) for i in range(per)))
    for r in range(readers):
        assert got[r] == expected
