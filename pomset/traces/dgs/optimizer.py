"""The greedy plan optimizer of the paper's Appendix B: it maximizes the events processed by
leaves (which never wait). Over the graph of implementation tags with an edge between
dependent ones, it takes the tags of lowest rate into the current worker until the rest
falls apart into at least two components, splits the components into two groups of about
equal rate, and recurses on each with its share of the leaves. A tag independent of itself
is dealt to as many lanes as there are leaves, so its events spread over them."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .plans import ImplTag, SyncPlan, Worker
from .program import DGS
from ..types import TraceType


def optimize(program: DGS, leaves: int, rates: Optional[Dict[Any, float]] = None,
             trace: Optional[TraceType] = None) -> SyncPlan:
    """A valid plan with at most `leaves` leaves for the program, from each tag's rate
    (events per second, or counts; tags left out have rate 0). Without forks, or with one
    leaf, the plan is one worker: the sequential program."""
    t = program.trace_type(trace)
    if not isinstance(leaves, int) or leaves < 1:
        raise ValueError(f"leaves must be an int >= 1, got {leaves!r}")
    unknown = set(rates or {}) - set(t.tags)
    if unknown:
        raise ValueError(f"rates name tags {sorted(map(repr, unknown))} that are not in the "
                         f"alphabet {sorted(map(repr, t.tags))}")
    rates = {tag: float((rates or {}).get(tag, 0.0)) for tag in t.tags}
    state = program.initial_type
    if leaves == 1 or program.fork_join(state, state, state) is None:
        return SyncPlan(Worker("w0", [(tag, 0) for tag in t.tags]))
    impl: Dict[ImplTag, float] = {}
    for tag, rate in rates.items():
        n = 1 if t.depends(tag, tag) else leaves
        for lane in range(n):
            impl[(tag, lane)] = rate / n
    names = iter(range(1 << 30))
    return SyncPlan(_build(impl, leaves, t, names))


def _build(impl: Dict[ImplTag, float], leaves: int, t: TraceType, names: Any) -> Worker:
    name = f"w{next(names)}"
    if leaves <= 1:
        return Worker(name, sorted(impl, key=_order))
    own: List[ImplTag] = []
    rest = dict(impl)
    comps = _components(rest, t)
    while len(comps) < 2 and rest:
        lowest = min(rest, key=lambda it: (rest[it], _order(it)))
        own.append(lowest)
        del rest[lowest]
        comps = _components(rest, t)
    if len(comps) < 2:
        return Worker(name, sorted(own + list(rest), key=_order))
    left, right = _halves(comps, rest)
    total = sum(rest.values()) or 1.0
    share = sum(rest[it] for it in left) / total if sum(rest.values()) else len(left) / len(rest)
    n_left = min(leaves - 1, max(1, round(leaves * share)))
    return Worker(name, sorted(own, key=_order),
                  children=[_build({it: rest[it] for it in left}, n_left, t, names),
                            _build({it: rest[it] for it in right}, leaves - n_left, t, names)])


def _order(it: ImplTag) -> Tuple[str, int]:
    return (repr(it[0]), it[1])


def _components(impl: Dict[ImplTag, float], t: TraceType) -> List[List[ImplTag]]:
    """The connected components of the dependence graph over these implementation tags."""
    todo = sorted(impl, key=_order)
    seen, comps = set(), []
    for start in todo:
        if start in seen:
            continue
        comp, stack = [], [start]
        seen.add(start)
        while stack:
            it = stack.pop()
            comp.append(it)
            for other in todo:
                if other not in seen and t.depends(it[0], other[0]):
                    seen.add(other)
                    stack.append(other)
        comps.append(comp)
    return comps


def _halves(comps: List[List[ImplTag]], rates: Dict[ImplTag, float]
            ) -> Tuple[List[ImplTag], List[ImplTag]]:
    """Two groups of components of about equal rate (largest first, to the lighter group)."""
    def weight(c: List[ImplTag]) -> float:
        return sum(rates[it] for it in c)
    groups: Tuple[List[ImplTag], List[ImplTag]] = ([], [])
    sums = [0.0, 0.0]
    for comp in sorted(comps, key=lambda c: (-weight(c), _order(c[0]))):
        g = 0 if (sums[0], len(groups[0])) <= (sums[1], len(groups[1])) else 1
        groups[g].extend(comp)
        sums[g] += weight(comp)
    return groups
