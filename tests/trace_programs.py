"""Random template programs and random typed pipelines, for the trace property tests: each
program is drawn from a seed, so every runner (and every Spark worker) rebuilds the same."""
from __future__ import annotations

import random
from typing import Any, List, Tuple

import pomset as pm

PERIOD = 10


def stateless(seed: int) -> pm.OpStateless:
    """A random stateless program: each item gives 0-2 items with a derived key and value."""
    r = random.Random(seed)
    a, b, m, copies = r.randint(1, 5), r.randint(0, 9), r.randint(2, 5), r.randint(0, 2)

    def on_item(key: Any, value: int, emit: Any) -> None:
        for i in range((value + copies) % 3):
            emit((key * a + i) % m, value * a + b + i)

    def on_marker(marker: pm.Marker, emit: Any) -> None:
        if marker.index % m == 0:
            emit(-1, marker.index)
    return pm.OpStateless(on_item=on_item, on_marker=on_marker, out=pm.U(int, int))


def keyed_ordered(seed: int) -> pm.OpKeyedOrdered:
    """A random order-sensitive program: a running hash of the key's values."""
    r = random.Random(seed)
    mul, mod, every = r.randint(2, 40), r.choice([97, 101, 1009]), r.randint(1, 3)

    def on_item(state: int, key: Any, value: int, emit: Any) -> int:
        state = (state * mul + value) % mod
        if value % every == 0:
            emit(key, state)
        return state

    def on_marker(state: int, key: Any, marker: pm.Marker, emit: Any) -> int:
        emit(key, -state)
        return (state + marker.index) % mod
    return pm.OpKeyedOrdered(initial_state=lambda: 1, on_item=on_item, on_marker=on_marker,
                             order=lambda v: v, out=pm.O(int, int))


def keyed_unordered(seed: int) -> pm.OpKeyedUnordered:
    """A random program over a commutative monoid (sum, max or sum of squares)."""
    r = random.Random(seed)
    kind, mod = r.choice(["sum", "max", "squares"]), r.randint(5, 50)
    lift = {"sum": lambda k, v: v, "max": lambda k, v: v,
            "squares": lambda k, v: v * v}[kind]
    combine = max if kind == "max" else (lambda x, y: x + y)

    def update_state(state: int, agg: int) -> int:
        return (state * 3 + agg) % 1_000_003

    def on_item(last: int, key: Any, value: int, emit: Any) -> None:
        if value % mod == 0:
            emit(key % 7, last + value)

    def on_marker(state: int, key: Any, marker: pm.Marker, emit: Any) -> None:
        emit(key % 7, state)
    return pm.OpKeyedUnordered(in_=lift, id=lambda: 0, combine=combine,
                               initial_state=lambda: 0, update_state=update_state,
                               on_item=on_item, on_marker=on_marker, out=pm.U(int, int))


def items(seed: int, n: int, keys: int = 6, span: int = 80) -> List[Tuple[Tuple[int, int], int]]:
    """n random ((key, value), timestamp) items in a random order."""
    r = random.Random(seed)
    return [((r.randrange(keys), r.randrange(50)), r.randrange(span)) for _ in range(n)]


def build(p: pm.Pipeline, seed: int, data: list, parallel: bool) -> Any:
    """A random typed pipeline over `data`: a chain of random templates and connectors, with a
    random parallelism (1-4) per template when `parallel`, else 1. Returns its last edge."""
    r = random.Random(seed)
    pc = (p | pm.Create([pm.TimestampedValue(kv, ts) for kv, ts in data])
          | pm.Typed(pm.U(int, int), period=PERIOD))
    for step in range(r.randint(1, 4)):
        kind = r.choice(["stateless", "ordered", "unordered", "hash", "round_robin"])
        par = r.randint(1, 4)
        par = par if parallel else 1
        s = r.randrange(10**6)
        if kind == "stateless":
            pc = pc | f"S{step}" >> stateless(s).with_parallelism(par)
        elif kind == "ordered":
            pc = (pc | f"Sort{step}" >> pm.Sort(lambda v: v, parallelism=par)
                  | f"KO{step}" >> keyed_ordered(s).with_parallelism(par))
        elif kind == "unordered":
            pc = pc | f"KU{step}" >> keyed_unordered(s).with_parallelism(par)
        else:
            n = r.randint(2, 3)
            split = pm.Hash(n) if kind == "hash" else pm.RoundRobin(n)
            parts = pc | f"Split{step}" >> split
            parts = [part | f"B{step}_{i}" >> stateless(s).with_parallelism(par)
                     if kind == "round_robin" else part for i, part in enumerate(parts)]
            pc = tuple(parts) | f"Merge{step}" >> pm.Merge()
    return pc


def blocks_form(trace_type: Any, panes: list) -> Any:
    """The normal form of a collected edge: its elements cut into blocks by timestamp, then
    each block as a multiset (U) or per-key sequences (O)."""
    from pomset.traces.equivalence import normal_form
    from pomset.runtime.deployment import block_of
    seq: list = []
    last = None
    for wv in sorted(panes, key=lambda wv: block_of(wv.ts, PERIOD * 1_000_000)):
        b = block_of(wv.ts, PERIOD * 1_000_000)
        if last is not None and b != last:
            seq.append(pm.Marker(last, 0))
        last = b
        seq.append((wv.value, wv.ts) if not trace_type.keyed else (wv.value[0], (wv.value[1], wv.ts)))
    return normal_form(trace_type, seq)
