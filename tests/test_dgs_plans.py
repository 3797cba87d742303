"""Synchronization plans of DGS programs (issue 19; Kallas et al., Def. 3.1-3.2 and App. B):
V1 (types) and V2 (non-ancestors handle independent, disjoint implementation tags) reject
what they should, naming the workers and tags; the paper's Fig. 3 plan for the keyed counter
passes; the greedy optimizer gives, for random trace types, rates and leaf counts, a valid
plan that covers every tag, with lanes only for tags independent of themselves; `describe`
and `to_dot` show every worker and tag."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

import pomset as pm
from pomset.traces.dgs import DGS, Fork, PlanError, StateType, SyncPlan, Worker, optimize

from test_dgs_consistency import counter_fork, counter_join, counter_trace, counter_update


# --- programs -----------------------------------------------------------------------------------

def counter(keys=(1, 2)):
    return DGS(init=dict, update=counter_update, fork=counter_fork, join=counter_join,
               trace=counter_trace(keys), label="Counter")


PAIR_TRACE = pm.TraceType({"x": int, "y": int, "s": int},
                          depends=[("s", "x"), ("s", "y"), ("s", "s")])


def pair_program():
    """Two state types: a pair forked into its components (Def. 2.1 (4)-(7))."""
    def update(s, tag, v, emit):
        a, b = s
        if tag == "x":
            return (a + v, b)
        if tag == "y":
            return (a, b + v)
        emit((a, b))
        return s
    return DGS(init=lambda: (0, 0), update=update, trace=PAIR_TRACE, label="Pair",
               states=[StateType("pair"),
                       StateType("left", tags={"x"}, update=lambda a, t, v, e: a + v),
                       StateType("right", tags={"y"}, update=lambda b, t, v, e: b + v),
                       StateType("other")],
               forks=[Fork(lambda s, l, r: s, lambda a, b: (a, b), "pair", "left", "right"),
                      Fork(lambda a, l, r: (a, 0), lambda a, b: a + b, "left", "left", "left")])


# --- V1 -----------------------------------------------------------------------------------------

def test_v1_rejects_a_worker_whose_state_type_cannot_handle_its_tags():
    prog = pair_program()
    plan = SyncPlan(Worker("root", [("s", 0)], children=[
        Worker("L", [("x", 0), ("y", 0)], state="left"),   # a left state cannot process y
        Worker("R", [], state="right")]))
    with pytest.raises(PlanError, match=r"V1: worker 'L' handles tags \[\"'y'\"\], which its "
                                        r"state type 'left' cannot process"):
        plan.validate(prog)


def test_v1_rejects_children_without_a_fork_join_between_the_types():
    prog = pair_program()
    plan = SyncPlan(Worker("root", [("s", 0)], children=[
        Worker("R1", [("y", 0)], state="right"), Worker("R2", [("x", 0)], state="left")]))
    with pytest.raises(PlanError, match=r"V1: worker 'root' \(pair\) has children of types "
                                        r"\['right', 'left'\], but the program has no fork/join"):
        plan.validate(prog)
    # a program of one state type and no fork/join at all: no plan may have children
    seq = DGS(init=dict, update=counter_update, trace=counter_trace([1]))
    plan = SyncPlan(Worker("w0", [(("r", 1), 0)], children=[Worker("w1", [(("i", 1), 0)]),
                                                            Worker("w2", [])]))
    with pytest.raises(PlanError, match="V1: worker 'w0'.*no fork/join"):
        plan.validate(seq)


def test_v1_rejects_a_root_not_of_the_initial_type():
    prog = pair_program()
    plan = SyncPlan(Worker("root", [("s", 0), ("x", 0), ("y", 0)], state="other"))
    with pytest.raises(PlanError, match="V1: the root 'root' must have the initial state type "
                                        "'pair'"):
        plan.validate(prog)
    with pytest.raises(PlanError, match="state type 'nope', which the program lacks"):
        SyncPlan(Worker("root", [("s", 0), ("x", 0), ("y", 0)], state="nope")).validate(prog)


def test_a_plan_of_two_state_types_is_valid():
    prog = pair_program()
    plan = SyncPlan(Worker("root", [("s", 0)], children=[
        Worker("L", [("x", 1)], state="left", children=[
            Worker("L1", [("x", 0)], state="left"), Worker("L2", [("x", 2)], state="left")]),
        Worker("R", [("y", 0), ("y", 1)], state="right")]))
    plan.validate(prog)
    assert plan.lanes("x") == 3 and plan.lanes("y") == 2 and plan.lanes("s") == 1


# --- V2 and coverage ----------------------------------------------------------------------------

def test_v2_rejects_non_ancestors_with_dependent_tags_naming_both():
    prog = counter()
    plan = SyncPlan(Worker("top", [(("r", 2), 0), (("i", 2), 0)], children=[
        Worker("left", [(("i", 1), 0)]), Worker("right", [(("r", 1), 0)])]))
    with pytest.raises(PlanError) as info:
        plan.validate(prog)
    message = str(info.value)
    assert message.startswith("V2:")
    for name in ("'left'", "'right'", "('i', 1)", "('r', 1)"):
        assert name in message, message
    # the same tags one level apart are fine: the worker with r(1) above the one with i(1)
    SyncPlan(Worker("top", [(("r", 2), 0), (("i", 2), 0), (("r", 1), 0)], children=[
        Worker("left", [(("i", 1), 0)]), Worker("right", [])])).validate(prog)


def test_v2_rejects_independent_lanes_of_one_tag_only_if_it_depends_on_itself():
    prog = counter()
    plan = SyncPlan(Worker("top", [(("i", 1), 0), (("i", 2), 0), (("r", 2), 0), (("r", 1), 0)],
                           children=[Worker("a", [(("r", 1), 1)]), Worker("b", [])]))
    with pytest.raises(PlanError, match=r"tag \('r', 1\) depends on itself, so its events keep "
                                        r"one lane; worker 'a' has lane 1"):
        plan.validate(prog)
    # increments are independent of themselves: their lanes may sit side by side
    SyncPlan(Worker("top", [(("i", 2), 0), (("r", 2), 0), (("r", 1), 0)], children=[
        Worker("a", [(("i", 1), 1)]), Worker("b", [(("i", 1), 0)])])).validate(prog)


def test_an_implementation_tag_handled_twice_is_refused():
    with pytest.raises(PlanError, match=r"implementation tag \(\('i', 1\), 0\) is handled by "
                                        r"both 'a' and 'b'"):
        SyncPlan(Worker("top", [(("r", 1), 0)], children=[
            Worker("a", [(("i", 1), 0)]), Worker("b", [(("i", 1), 0)])]))


def test_a_tag_no_worker_handles_is_refused():
    prog = counter()
    plan = SyncPlan(Worker("w", [(("i", 1), 0), (("r", 1), 0), (("i", 2), 0)]))
    with pytest.raises(PlanError, match=r"no worker handles tag \('r', 2\) \(lanes \[0\]\)"):
        plan.validate(prog)
    # a lane left out in the middle
    plan = SyncPlan(Worker("w", [(t, 0) for t in prog.trace.tags] + [(("i", 1), 2)]))
    with pytest.raises(PlanError, match=r"no worker handles tag \('i', 1\) \(lanes \[1\]\)"):
        plan.validate(prog)
    # a tag outside the alphabet
    plan = SyncPlan(Worker("w", [(t, 0) for t in prog.trace.tags] + [(("i", 9), 0)]))
    with pytest.raises(PlanError, match=r"handles tag \('i', 9\), which is not in the alphabet"):
        plan.validate(prog)


def test_malformed_workers_are_refused():
    with pytest.raises(PlanError, match="has 1 children"):
        Worker("w", [], children=[Worker("c")])
    with pytest.raises(TypeError, match="implementation tag is"):
        Worker("w", ["i"])
    with pytest.raises(TypeError, match="implementation tag is"):
        Worker("w", [("i", -1)])
    with pytest.raises(PlanError, match="worker names repeat"):
        SyncPlan(Worker("w", [], children=[Worker("x"), Worker("x")]))


def fig3_plan():
    """The paper's Fig. 3 shape for two keys: the keys split at the root; key 1's read-resets
    at w1, above two leaves with a lane of its increments each; key 2's events at leaf w2."""
    i1, r1, i2, r2 = ("i", 1), ("r", 1), ("i", 2), ("r", 2)
    return SyncPlan(Worker("w0", [], children=[
        Worker("w1", [(r1, 0)], children=[Worker("w3", [(i1, 0)]), Worker("w4", [(i1, 1)])]),
        Worker("w2", [(r2, 0), (i2, 0)])]))


def test_the_papers_fig3_plan_for_the_keyed_counter_is_valid():
    prog = counter()
    plan = fig3_plan()
    plan.validate(prog)
    assert [plan.workers[i].name for i in plan.leaves] == ["w3", "w4", "w2"]
    assert plan.ancestors(plan.index[id(plan.workers[3])]) == [1, 0]
    assert plan.lanes(("i", 1)) == 2 and plan.lanes(("r", 1)) == 1
    SyncPlan(Worker("w0", [(t, 0) for t in prog.trace.tags])).validate(prog)   # sequential
    # a plan given to the program is checked when it is applied
    DGS(init=dict, update=counter_update, fork=counter_fork, join=counter_join,
        trace=counter_trace([1, 2]), plan=plan)


def test_a_program_applied_with_an_invalid_plan_is_refused_at_construction():
    bad = SyncPlan(Worker("top", [(("r", 2), 0), (("i", 2), 0)], children=[
        Worker("left", [(("i", 1), 0)]), Worker("right", [(("r", 1), 0)])]))
    prog = DGS(init=dict, update=counter_update, fork=counter_fork, join=counter_join,
               trace=counter_trace([1, 2]), plan=bad)
    p = pm.Pipeline(argv=["--quiet"])
    src = p | pm.Create([pm.TimestampedValue((("i", 1), 0), 0)]) | pm.Typed(
        counter_trace([1, 2]), period=10)
    with pytest.raises(PlanError, match="V2"):
        src | prog


# --- the optimizer (App. B) ---------------------------------------------------------------------

TAG_NAMES = ["a", "b", ("k", 1), ("k", 2), 7, "c d"]


@st.composite
def trace_types(draw):
    n = draw(st.integers(1, len(TAG_NAMES)))
    tags = TAG_NAMES[:n]
    pairs = [(tags[i], tags[j]) for i in range(n) for j in range(i, n)]
    dep = draw(st.sets(st.sampled_from(pairs)))
    return pm.TraceType({t: int for t in tags}, depends=sorted(dep, key=repr))


def sum_program(trace, forks=True):
    kw = dict(fork=lambda s, l, r: (s, 0), join=lambda a, b: a + b) if forks else {}
    return DGS(init=int, update=lambda s, t, v, e: s + v, trace=trace, **kw)


@settings(max_examples=150, deadline=None)
@given(trace=trace_types(), leaves=st.integers(1, 5), data=st.data())
def test_the_optimizer_gives_a_valid_covering_plan(trace, leaves, data):
    tags = sorted(trace.tags, key=repr)
    rates = data.draw(st.dictionaries(st.sampled_from(tags), st.integers(0, 1000)), label="rates")
    prog = sum_program(trace)
    plan = optimize(prog, leaves, rates)
    plan.validate(prog)
    assert 1 <= len(plan.leaves) <= leaves
    assert all(len(w.children) in (0, 2) for w in plan.workers)
    for tag in tags:
        n = plan.lanes(tag)
        assert all((tag, lane) in plan.owner for lane in range(n))
        if trace.depends(tag, tag):
            assert n == 1, (tag, plan.describe())
    assert set(plan.owner) == {(t, lane) for t in tags for lane in range(plan.lanes(t))}
    # the same for the plan as text: every worker and implementation tag is shown
    text = plan.describe()
    for w in plan.workers:
        assert w.name in text
    # one leaf, or no fork/join: the sequential plan
    assert len(optimize(prog, 1, rates).workers) == 1
    assert len(optimize(sum_program(trace, forks=False), leaves, rates).workers) == 1


def test_the_optimizer_splits_independent_keys_and_deals_lanes():
    prog = counter(keys=[0, 1, 2])
    rates = {("i", k): 100 for k in range(3)} | {("r", k): 5 for k in range(3)}
    plan = optimize(prog, 4, rates)
    plan.validate(prog)
    # the keys are independent: the root's children split them; the increments, of the
    # highest rate, are dealt to 4 lanes, each at a leaf (which never waits), below r(k)
    assert len(plan.leaves) == 4 and not plan.workers[0].tags
    for k in range(3):
        r = plan.owner[(("r", k), 0)]
        for lane in range(4):
            i = plan.owner[(("i", k), lane)]
            assert plan.workers[i].is_leaf and (i == r or r in plan.ancestors(i))
    # event windowing: the barriers at the root, the values' lanes at the leaves
    ew = sum_program(pm.TraceType({"v": int, "b": int}, depends=[("b", "v"), ("b", "b")]))
    plan = optimize(ew, 3, {"v": 1000, "b": 1})
    plan.validate(ew)
    assert plan.workers[0].tags == (("b", 0),) and len(plan.leaves) == 3
    assert sorted(it for i in plan.leaves for it in plan.workers[i].tags) == [
        ("v", 0), ("v", 1), ("v", 2)]


def test_the_optimizer_refuses_bad_arguments():
    prog = counter()
    with pytest.raises(ValueError, match="leaves must be an int >= 1"):
        optimize(prog, 0)
    with pytest.raises(ValueError, match="rates name tags"):
        optimize(prog, 2, {"nope": 3})


# --- describe and to_dot ------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(trace=trace_types(), leaves=st.integers(1, 5))
def test_describe_and_to_dot_show_every_worker_and_tag(trace, leaves):
    prog = sum_program(trace)
    plan = optimize(prog, leaves, {t: 1 for t in trace.tags})
    text, dot = plan.describe(), plan.to_dot()
    lines = text.splitlines()
    assert len(lines) == len(plan.workers)
    for i, w in enumerate(plan.workers):
        assert lines[i].strip().startswith(w.name)
        assert f'w{i} [label="{w.name}' in dot
        for tag, lane in w.tags:
            shown = repr(tag) if lane == 0 else f"{tag!r}#{lane}"
            assert shown in lines[i]
            assert shown.replace('"', '\\"') in dot
    edges = re.findall(r"w(\d+) -> w(\d+);", dot)
    assert sorted((int(a), int(b)) for a, b in edges) == sorted(
        (p, i) for i, p in enumerate(plan.parent) if p is not None)
    assert dot.startswith("digraph plan {") and dot.endswith("}")


def test_describe_of_the_fig3_plan():
    assert fig3_plan().describe() == "\n".join([
        "w0: - (joins its children)",
        "  w1: ('r', 1) (joins its children)",
        "    w3: ('i', 1) (leaf)",
        "    w4: ('i', 1)#1 (leaf)",
        "  w2: ('r', 2), ('i', 2) (leaf)"])
    plan = SyncPlan(Worker("root", [("s", 0)], children=[
        Worker("L", [("x", 0)], state="left"), Worker("R", [("y", 0)], state="right")]))
    assert "L [left]: 'x' (leaf)" in plan.describe()
    assert "SyncPlan(" in repr(plan) and "root" in repr(plan)
