"""The consistency check of a DGS program (Def. 2.3), as users run it in their tests:
hypothesis generates states and events and reports the first violation of

- C1: an update commutes with a join: join(update(s1, e), s2) = update(join(s1, s2), e),
  with the same outputs (and on the right: join(s1, update(s2, e)));
- C2: a join undoes a fork: join(fork(s, pred1, pred2)) = s;
- C3: independent events commute: update(update(s, e1), e2) = update(update(s, e2), e1),
  with the same outputs (as multisets);

as a minimal counterexample (hypothesis shrinks it), naming the condition. States are those
a program reaches: its initial state updated with generated events, forked for the other state
types; predicates are generated pairs of independent tag sets. If these hold, every valid plan
gives the sequential program's output (Theorem 2.4)."""
from __future__ import annotations

import copy
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..types import TraceType, Unit
from .program import DGS


class ConsistencyError(AssertionError):
    """A program broke a consistency condition: `condition` is C1, C2 or C3; the message
    gives the minimal counterexample."""

    def __init__(self, condition: str, message: str) -> None:
        super().__init__(f"{condition}: {message}")
        self.condition = condition


class _Violation(AssertionError):
    def __init__(self, condition: str, message: str) -> None:
        super().__init__(message)
        self.condition = condition


def check_consistency(program: DGS, trace: Optional[TraceType] = None, *,
                      values: Optional[Dict[Any, Any]] = None, max_examples: int = 200,
                      max_events: int = 8, equal: Optional[Callable[[Any, Any], bool]] = None,
                      seed: Optional[int] = 0) -> None:
    """Check C1-C3 on generated states and events; raise ConsistencyError with the first
    violation's minimal counterexample. `values` maps tags to hypothesis strategies for their
    values (default: from the trace type's value types); `equal` compares states (default
    `==`); `seed` makes the run repeatable (None: hypothesis picks)."""
    try:
        from hypothesis import HealthCheck, given, seed as fix_seed, settings, strategies as st
    except ImportError as exc:   # the checker is for tests: hypothesis is a test dependency
        raise ImportError("check_consistency needs hypothesis: pip install hypothesis") from exc
    t = program.trace_type(trace)
    eq = equal or (lambda a, b: a == b)
    tags = sorted(t.tags, key=repr)
    given_values = values or {}
    unknown = set(given_values) - set(tags)
    if unknown:
        raise ValueError(f"values names tags {sorted(map(repr, unknown))} that are not in the "
                         f"alphabet {[repr(x) for x in tags]}")
    strategies = {tag: given_values[tag] if tag in given_values else _strategy(st, t.tags[tag])
                  for tag in tags}
    gen = _Generator(program, t, tags, strategies, st, max_events)
    config = settings(max_examples=max_examples, database=None, deadline=None,
                      report_multiple_bugs=False,
                      suppress_health_check=list(HealthCheck))

    def run(check: Callable[[Any], None], condition: str) -> None:
        test = config(given(st.data())(check))
        if seed is not None:   # repeatable, and another seed tries other cases
            test = fix_seed(seed)(test)
        try:
            test()
        except _Violation as v:
            raise ConsistencyError(v.condition, str(v)) from None
        except Exception as exc:   # the program's own function failed on a generated case
            notes = "\n".join(getattr(exc, "__notes__", []))
            raise ConsistencyError(condition, f"checking it, the program raised "
                                              f"{type(exc).__name__}: {exc}\n{notes}") from exc

    if program.fork_joins:
        run(lambda data: gen.c2(data, eq), "C2")
        run(lambda data: gen.c1(data, eq), "C1")
    run(lambda data: gen.c3(data, eq), "C3")


def _strategy(st: Any, tp: Any) -> Any:
    if tp is Unit or tp is None or tp is type(None):
        return st.none()
    if isinstance(tp, type) and tp is not object:
        try:
            return st.from_type(tp)
        except Exception:   # a type hypothesis cannot build: the user passes values=
            pass
    return st.integers(-100, 100)


class _Generator:
    """Draws what each condition needs: reachable states of each type, independent tag sets,
    events within a set."""

    def __init__(self, program: DGS, t: TraceType, tags: List[Any], strategies: Dict[Any, Any],
                 st: Any, max_events: int) -> None:
        self.p = program
        self.t = t
        self.tags = tags
        self.values = strategies
        self.st = st
        self.max_events = max_events

    def events(self, data: Any, tags: List[Any], label: str, most: Optional[int] = None) -> list:
        if not tags:
            return []
        tag_s = self.st.sampled_from(tags)
        event = tag_s.flatmap(lambda tag: self.values[tag].map(lambda v: (tag, v)))
        return data.draw(self.st.lists(event, max_size=most or self.max_events), label=label)

    def event(self, data: Any, tags: List[Any], label: str) -> Tuple[Any, Any]:
        tag = data.draw(self.st.sampled_from(tags), label=f"{label} tag")
        return tag, data.draw(self.values[tag], label=f"{label} value")

    def handled(self, state_type: str) -> List[Any]:
        st = self.p.state_types[state_type]
        return [tag for tag in self.tags if st.handles(tag)]

    def apply(self, state_type: str, state: Any, events: list) -> Tuple[Any, list]:
        update = self.p.update_of(state_type)
        outs: list = []
        for tag, value in events:
            state = update(copy.deepcopy(state), tag, value, outs.append)
        return state, outs

    def preds(self, data: Any, left_type: str, right_type: str) -> Tuple[frozenset, frozenset]:
        """Two independent tag sets within the two state types' tags: each tag, in turn, goes
        to neither, the left, the right or (independent of itself) both, where it is
        independent of the other side's tags so far. (Drawing the left set first, hypothesis
        mostly gives it every tag, leaving the right one empty: pairs such as ({v}, {v}) or
        ({}, {b}) came up a few times in hundreds of examples.)"""
        st = self.st
        handled_left, handled_right = set(self.handled(left_type)), set(self.handled(right_type))
        left: set = set()
        right: set = set()
        for tag in self.tags:
            can_left = tag in handled_left and not any(self.t.depends(tag, b) for b in right)
            can_right = tag in handled_right and not any(self.t.depends(tag, a) for a in left)
            options = ["neither"] + ["left"] * can_left + ["right"] * can_right
            if can_left and can_right and not self.t.depends(tag, tag):
                options.append("both")
            if len(options) == 1:
                continue
            side = data.draw(st.sampled_from(options), label=f"{tag!r} in")
            if side in ("left", "both"):
                left.add(tag)
            if side in ("right", "both"):
                right.add(tag)
        return frozenset(left), frozenset(right)

    def state(self, data: Any, state_type: str, depth: int = 0) -> Any:
        """A state of this type a program reaches."""
        p = self.p
        if state_type == p.initial_type:
            events = self.events(data, self.tags, f"events to a {state_type}")
            return self.apply(state_type, p.init(), events)[0]
        if depth > len(p.state_types):
            raise ValueError(f"no fork reaches state type {state_type!r} from the initial one")
        for f in p.fork_joins:
            if state_type in (f.left, f.right) and f.parent != state_type:
                parent = self.state(data, f.parent, depth + 1)
                pred1, pred2 = self.preds(data, f.left, f.right)
                pair = f.fork(copy.deepcopy(parent), pred1, pred2)
                side = 0 if f.left == state_type else 1
                mine = sorted(pred1 if side == 0 else pred2, key=repr)
                return self.apply(state_type, pair[side],
                                  self.events(data, mine, f"events to a {state_type}"))[0]
        raise ValueError(f"no fork reaches state type {state_type!r} from the initial one")

    def c2(self, data: Any, eq: Callable[[Any, Any], bool]) -> None:
        f = data.draw(self.st.sampled_from(self.p.fork_joins), label="fork")
        s = self.state(data, f.parent)
        pred1, pred2 = self.preds(data, f.left, f.right)
        left, right = f.fork(copy.deepcopy(s), pred1, pred2)
        joined = f.join(left, right)
        if not eq(joined, s):
            raise _Violation("C2", f"join(fork(s, {_set(pred1)}, {_set(pred2)})) != s: "
                                   f"s = {s!r}, fork gave ({left!r}, {right!r}), join gave "
                                   f"{joined!r} ({f!r})")

    def c1(self, data: Any, eq: Callable[[Any, Any], bool]) -> None:
        f = data.draw(self.st.sampled_from(self.p.fork_joins), label="fork")
        s = self.state(data, f.parent)
        pred1, pred2 = self.preds(data, f.left, f.right)
        s1, s2 = f.fork(copy.deepcopy(s), pred1, pred2)
        s1 = self.apply(f.left, s1, self.events(data, sorted(pred1, key=repr), "events to s1"))[0]
        s2 = self.apply(f.right, s2, self.events(data, sorted(pred2, key=repr), "events to s2"))[0]
        for side in (0, 1):   # an event of each side's tags, on that side (not one drawn side)
            mine = sorted(pred1 if side == 0 else pred2, key=repr)
            mine = [tag for tag in mine if self.p.state_types[f.parent].handles(tag)]
            if mine:
                self._c1_side(data, eq, f, s1, s2, side, mine)

    def _c1_side(self, data: Any, eq: Callable[[Any, Any], bool], f: Any, s1: Any, s2: Any,
                 side: int, mine: List[Any]) -> None:
        e = self.event(data, mine, "e on s1" if side == 0 else "e on s2")
        child_type = f.left if side == 0 else f.right
        child = s1 if side == 0 else s2
        moved, out_child = self.apply(child_type, child, [e])
        lhs = f.join(moved, copy.deepcopy(s2)) if side == 0 else f.join(copy.deepcopy(s1), moved)
        rhs, out_parent = self.apply(f.parent, f.join(copy.deepcopy(s1), copy.deepcopy(s2)), [e])
        where = "join(update(s1, e), s2)" if side == 0 else "join(s1, update(s2, e))"
        if not eq(lhs, rhs):
            raise _Violation("C1", f"{where} != update(join(s1, s2), e): s1 = {s1!r}, "
                                   f"s2 = {s2!r}, e = {e!r}; {lhs!r} != {rhs!r} ({f!r})")
        if out_child != out_parent:
            raise _Violation("C1", f"update's outputs differ on a forked state and the joined "
                                   f"one: s1 = {s1!r}, s2 = {s2!r}, e = {e!r}; {out_child!r} "
                                   f"!= {out_parent!r} ({f!r})")

    def c3(self, data: Any, eq: Callable[[Any, Any], bool]) -> None:
        state_type = data.draw(self.st.sampled_from(sorted(self.p.state_types)), label="type")
        s = self.state(data, state_type)
        handled = self.handled(state_type)
        e1 = self.event(data, handled, "e1")
        free = [tag for tag in handled if not self.t.depends(e1[0], tag)]
        if not free:
            return
        e2 = self.event(data, free, "e2")
        a, out_a = self.apply(state_type, s, [e1, e2])
        b, out_b = self.apply(state_type, s, [e2, e1])
        if not eq(a, b):
            raise _Violation("C3", f"independent events {e1!r} and {e2!r} do not commute on "
                                   f"s = {s!r}: {a!r} != {b!r}")
        if sorted(map(repr, out_a)) != sorted(map(repr, out_b)):
            raise _Violation("C3", f"independent events {e1!r} and {e2!r} give different "
                                   f"outputs in the two orders on s = {s!r}: {out_a!r} != "
                                   f"{out_b!r}")


def _set(tags: frozenset) -> str:
    return "{" + ", ".join(sorted(map(repr, tags))) + "}"
