"""The DGS runtime (issue 19; Kallas et al., Sec. 3.4, Theorem 3.5, App. D.2): mailboxes
release only real events, in timestamp order across dependent tags, and everything once the
channels end; any valid plan on any transport, with random channel delays, slicing and
watermarks, gives the sequential program's output on the sorted input; a checkpoint (the
state joined at the root) restored in a fresh deployment or a restarted stage gives the
uninterrupted run's output; a failing user function is an error naming the step, the worker
and the event."""
from __future__ import annotations

import itertools
import pickle
import random
import re

import pytest
from hypothesis import given, settings, strategies as st

import pomset as pm
from pomset.runtime.dgs.deployment import DGSDeployment
from pomset.runtime.dgs.mailbox import PARENT, Mailbox
from pomset.traces.dgs import SyncPlan, Worker, optimize
from pomset.traces.dgs.optimizer import _components as components

from test_dgs_consistency import (FRAUD_TRACE, PAIR_TRACE, WINDOW_TRACE, counter, counter_trace,
                                  fraud, pages, pages_trace, pair, window)

INF = 1 << 62


# --- mailboxes ----------------------------------------------------------------------------------

ALPHABET = ["a", "b", "c", "d"]
ANY = "*"   # a request's tag that depends on every tag (as a checkpoint's does)


@st.composite
def mailbox_runs(draw):
    """A mailbox's channels, the events on them (unique keys) and the messages that carry
    them, interleaved at random: events in key order per channel, in chunks, each chunk
    with a low (a heartbeat) no greater than the channel's next key; heartbeats alone too."""
    pairs = [(x, y) for i, x in enumerate(ALPHABET) for y in ALPHABET[i:]]
    dep = draw(st.sets(st.sampled_from(pairs)), label="depends")
    trace = pm.TraceType({t: int for t in ALPHABET}, depends=sorted(dep))
    inputs = draw(st.lists(st.tuples(st.sampled_from(ALPHABET), st.integers(0, 2)), min_size=1,
                           max_size=5, unique=True), label="channels")
    parent = draw(st.booleans(), label="has parent")
    parent_tags = (draw(st.sets(st.sampled_from(ALPHABET + [ANY]), min_size=1),
                        label="ancestors' tags") if parent else None)
    total = draw(st.booleans(), label="total")
    channels = list(inputs) + ([PARENT] if parent else [])
    n = draw(st.integers(0, 30), label="events")
    where = draw(st.lists(st.sampled_from(channels), min_size=n, max_size=n), label="where")
    rnd = draw(st.randoms(use_true_random=False), label="rnd")
    events = {}
    for key, c in enumerate(where):
        tag = rnd.choice(sorted(parent_tags)) if c == PARENT else c[0]
        events.setdefault(c, []).append((key, tag, None if c == PARENT else rnd.randrange(9)))
    queues = []
    for c in channels:
        mine, msgs, i = events.get(c, []), [], 0
        while i < len(mine):
            size = 1 if c == PARENT else rnd.randint(1, 3)
            chunk = mine[i:i + size]
            i += size
            nxt = mine[i][0] if i < len(mine) else n
            low = chunk[-1][0] + 1 if c == PARENT else rnd.randint(chunk[-1][0] + 1, nxt)
            msgs.append((c, chunk, low))
            if rnd.random() < 0.3:   # a heartbeat alone
                msgs.append((c, [], rnd.randint(low, nxt)))
        queues.append(msgs)
    merged = []
    while any(queues):
        q = rnd.choice([q for q in queues if q])
        merged.append(q.pop(0))
    return trace, inputs, parent_tags, total, events, merged


def _drain(mb, total, released):
    """Take everything the mailbox releases now (a join request is handled at once)."""
    while True:
        if total:
            event, _ = mb.release_one()
            if event is None:
                return
            released.append(event)
            continue
        events, request = mb.release()
        released.extend(events)
        if request is not None:
            released.append(request)
        elif not events:
            return


@settings(max_examples=300, deadline=None)
@given(run=mailbox_runs())
def test_a_mailbox_releases_real_events_in_dependence_order_and_all_at_the_end(run):
    trace, inputs, parent_tags, total, events, merged = run

    def depends(a, b):
        return a == ANY or b == ANY or trace.depends(a, b)
    mb = Mailbox({it: it[0] for it in inputs}, None if parent_tags is None else
                 frozenset(parent_tags), depends, total)
    channel_of = {e[0]: c for c, evs in events.items() for e in evs}
    real = {e[0]: e for evs in events.values() for e in evs}
    released = []
    for channel, chunk, low in merged:
        mb.put(channel, list(chunk), low)
        _drain(mb, total, released)
        # frontier: every event below it has been handed over
        front = mb.frontier()
        handed = {e[0] for e in released}
        assert all(k in handed for k in real if k < front), (front, sorted(handed))
    for c in mb.buf:
        mb.put(c, [], INF)
    _drain(mb, total, released)
    # only real events, each once (heartbeats never come out), and all of them
    assert sorted(e[0] for e in released) == sorted(real)
    assert all(real[e[0]] == e for e in released)
    assert mb.pending() == 0
    position = {e[0]: i for i, e in enumerate(released)}
    for x in released:
        for y in real.values():
            if y[0] < x[0] and (total or channel_of[y[0]] == channel_of[x[0]]
                                or depends(x[1], y[1])):
                assert position[y[0]] < position[x[0]], (
                    f"{x} was handed over before the earlier dependent {y}: {released}")


def test_a_mailbox_holds_an_event_until_a_dependent_channel_passes_it():
    trace = pm.TraceType({"v": int, "b": int}, depends=[("b", "v"), ("b", "b")])
    mb = Mailbox({("v", 0): "v", ("b", 0): "b"}, None, trace.depends, total=False)
    mb.put(("v", 0), [(1, "v", 10), (4, "v", 11)], 5)
    assert mb.release() == ([], None)          # b's channel may still bring key 0
    mb.put(("b", 0), [], 3)                    # a heartbeat: no barrier below 3
    assert mb.release() == ([(1, "v", 10)], None)
    mb.put(("b", 0), [(3, "b", 0)], 6)
    assert mb.release() == ([(3, "b", 0), (4, "v", 11)], None)
    assert mb.frontier() == 5 and mb.pending() == 0
    with pytest.raises(ValueError, match="a channel's keys must increase"):
        mb.put(("v", 0), [(2, "v", 1)], 7)


def test_a_mailbox_read_ahead_of_its_releases_drops_what_it_handed_over():
    """A leaf's channel read two chunks ahead of its parent's progress is never empty: the
    mailbox still hands every event over once, in order, and keeps no more than it holds."""
    trace = pm.TraceType({"v": int, "b": int}, depends=[("b", "v"), ("b", "b")])
    mb = Mailbox({("v", 0): "v"}, frozenset({"b"}), trace.depends, total=False)
    released, longest, chunk = [], 0, 5000
    for i in range(40):
        mb.put(("v", 0), [(k, "v", k) for k in range(i * chunk, (i + 1) * chunk)],
               (i + 1) * chunk)
        mb.put(PARENT, [], max(0, (i - 1) * chunk))   # the parent is two chunks behind
        released += mb.release()[0]
        longest = max(longest, len(mb.buf[("v", 0)]))
    mb.put(PARENT, [], 1 << 126)
    released += mb.release()[0]
    assert [e[0] for e in released] == list(range(40 * chunk))
    assert longest <= 4 * chunk and mb.pending() == 0


# --- programs and plans for Theorem 3.5 ---------------------------------------------------------

def random_plan(program, trace, rnd, max_depth=3):
    """A random valid plan: tags independent of themselves on 1-3 lanes; each worker keeps
    some implementation tags and splits the rest, by connected components of the dependence
    graph, between two children of the types of one of its forks (a component no child type
    can process stays); a child may get no tags at all. The root always splits (where the
    program has a fork from its type)."""
    lanes = {t: 1 if trace.depends(t, t) else rnd.randint(1, 3) for t in trace.tags}
    impl = [(t, lane) for t in sorted(trace.tags, key=repr) for lane in range(lanes[t])]
    names = itertools.count()

    def build(its, stype, depth):
        name = f"w{next(names)}"
        forks = [f for f in program.fork_joins if f.parent == stype]
        if depth >= max_depth or not forks or (depth and rnd.random() < 0.3):
            return Worker(name, its, state=stype)
        f = rnd.choice(forks)
        own = [it for it in its if rnd.random() < 0.25]
        left, right = [], []
        lt, rt = program.state_types[f.left], program.state_types[f.right]
        for comp in components({it: 0 for it in its if it not in own}, trace):
            sides = [side for side, st_ in ((left, lt), (right, rt))
                     if all(st_.handles(t) for t, _ in comp)]
            (rnd.choice(sides) if sides else own).extend(comp)
        return Worker(name, own, state=stype,
                      children=[build(left, f.left, depth + 1), build(right, f.right, depth + 1)])
    return SyncPlan(build(impl, program.initial_type, 0))


def make_program(name, size):
    """(program, trace) of one of the paper's examples; `size` keys or pages where it has."""
    if name == "counter":
        return counter(keys=range(size)), counter_trace(list(range(size)))
    if name == "pages":
        return pages(pages=range(size)), pages_trace(list(range(size)))
    return {"window": (window(), WINDOW_TRACE), "fraud": (fraud(), FRAUD_TRACE),
            "pair": (pair(), PAIR_TRACE)}[name]


def sequential(program, arrivals):
    """The sequential program on the input sorted by timestamp (ties in arrival order)."""
    state, out = program.init(), []
    update = program.update_of(program.initial_type)
    for ts, (tag, value) in sorted(arrivals, key=lambda a: a[0]):
        emitted = []
        state = update(state, tag, value, emitted.append)
        out.extend((ts, o) for o in emitted)
    return out


def feed(deployment, arrivals, watermarks, rnd):
    """Move the watermark through `watermarks`, adding before each move the arrivals below it
    and, at random, some later ones (so none is late: each is at or above the watermark when
    added); the outputs, the arrivals in the order they were added, and those left."""
    added, left, out = [], list(arrivals), []
    for wm in watermarks:
        now = [a for a in left if a[0] < wm or rnd.random() < 0.2]
        for ts, item, _ in now:
            deployment.add(ts, item)
        added += now
        left = [a for a in left if a not in now]
        out += deployment.advance(wm)
    return out, added, left


@st.composite
def runs(draw):
    name = draw(st.sampled_from(["counter", "window", "fraud", "pages", "pair"]), label="program")
    program, trace = make_program(name, draw(st.integers(1, 4), label="keys"))
    rnd = draw(st.randoms(use_true_random=False), label="rnd")
    if name != "pair" and draw(st.booleans(), label="optimizer"):
        tags = sorted(trace.tags, key=repr)
        rates = {t: rnd.choice([0, 1, 10, 100]) for t in tags}
        plan = optimize(program, draw(st.integers(2, 5), label="leaves"), rates)
    else:
        plan = random_plan(program, trace, rnd)
    plan.validate(program)
    tags = sorted(trace.tags, key=repr)
    n = draw(st.integers(0, 60), label="n")
    items = draw(st.lists(st.tuples(st.integers(0, 20), st.sampled_from(tags),
                                    st.integers(0, 60)), min_size=n, max_size=n), label="items")
    # unique arrivals (an item's identity is its place in the list), timestamps with ties
    arrivals = [(ts, (tag, value), i) for i, (ts, tag, value) in enumerate(items)]
    watermarks = sorted(set(draw(st.lists(st.integers(1, 22), max_size=5), label="watermarks")))
    return dict(program=program, trace=trace, plan=plan, arrivals=arrivals,
                watermarks=watermarks, slice_size=draw(st.integers(1, 12), label="slice"),
                seed=draw(st.integers(0, 2 ** 32 - 1), label="seed"))


def deploy(run, mode="simulated", seed=None, slice_size=None):
    d = DGSDeployment(run["program"], run["trace"], leaves=len(run["plan"].leaves), mode=mode,
                      rng=random.Random(run["seed"] if seed is None else seed),
                      slice_size=slice_size or run["slice_size"])
    d.plan = run["plan"]
    d.min_parallel = 0   # start the workers however small the input
    return d


def _items(arrivals):
    """(ts, item) pairs from (ts, item, id) arrivals: the id only keeps equal items apart."""
    return [(ts, item) for ts, item, _ in arrivals]


def run_deployment(d, run, rnd):
    outs, added, left = feed(d, run["arrivals"], run["watermarks"], rnd)
    for a in left:
        d.add(a[0], a[1])
        added.append(a)
    outs += d.finish()
    return outs, added


@settings(max_examples=400, deadline=None)
@given(run=runs())
def test_theorem_3_5_any_valid_plan_with_random_delays_gives_the_sequential_output(run):
    d = deploy(run)
    outs, added = run_deployment(d, run, random.Random(run["seed"]))
    assert outs == sequential(run["program"], _items(added)), run["plan"].describe()


@settings(max_examples=25, deadline=None)
@given(run=runs())
def test_theorem_3_5_on_threads(run):
    d = deploy(run, "threads")
    outs, added = run_deployment(d, run, random.Random(run["seed"]))
    assert outs == sequential(run["program"], _items(added)), run["plan"].describe()


# --- threads and processes ----------------------------------------------------------------------

def fixed_run(name, size, plan_of, n=400, seed=3):
    program, trace = make_program(name, size)
    rnd = random.Random(seed)
    tags = sorted(trace.tags, key=repr)
    weights = [20 if (isinstance(t, tuple) and t[0] in ("i", "v")) or t in ("v", "tx", "x", "y")
               else 1 for t in tags]
    arrivals = [(rnd.randrange(200), (rnd.choices(tags, weights)[0], rnd.randrange(60)), i)
                for i in range(n)]
    return dict(program=program, trace=trace, plan=plan_of(program, trace), arrivals=arrivals,
                watermarks=[50, 51, 120, 190], slice_size=17, seed=seed)


def hand_pair_plan(program, trace):
    return SyncPlan(Worker("root", [("s", 0)], state="pair", children=[
        Worker("L", [("x", 2)], state="left", children=[
            Worker("L1", [("x", 0)], state="left"), Worker("L2", [("x", 1)], state="left")]),
        Worker("R", [("y", 0), ("y", 1)], state="right")]))


FIXED = {
    "counter": ("counter", 3, lambda p, t: optimize(p, 3, {tag: 10 for tag in t.tags})),
    "window": ("window", 1, lambda p, t: optimize(p, 3, {"v": 100, "b": 1})),
    "fraud": ("fraud", 1, lambda p, t: optimize(p, 2, {"tx": 100, "rule": 1})),
    "pages": ("pages", 3, lambda p, t: random_plan(p, t, random.Random(7))),
    "pair": ("pair", 1, hand_pair_plan),
}


@pytest.mark.parametrize("mode", ["threads", "processes"])
@pytest.mark.parametrize("example", sorted(FIXED))
def test_threads_and_processes_give_the_sequential_output(example, mode):
    run = fixed_run(*FIXED[example])
    assert len(run["plan"].workers) > 1
    outs, added = run_deployment(deploy(run, mode), run, random.Random(1))
    expected = sequential(run["program"], _items(added))
    assert outs == expected and len(expected) > 5


# --- checkpoints (App. D.2) ---------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(run=runs(), cut=st.integers(0, 5), data=st.data())
def test_a_restored_checkpoint_gives_the_uninterrupted_output(run, cut, data):
    """Snapshot after some watermark moves, pickle it, restore it in a fresh deployment (on
    another seed, slicing or transport) and feed it the rest: the outputs before plus those
    after are the uninterrupted run's; the snapshotted deployment goes on unchanged too."""
    rnd_seed = run["seed"]
    first = deploy(run)
    before, added, left = feed(first, run["arrivals"], run["watermarks"][:cut],
                               random.Random(rnd_seed))
    saved = pickle.dumps(first.snapshot())
    # the rest: more watermarks, then the end
    rest_wms = run["watermarks"][cut:]
    mode = data.draw(st.sampled_from(["simulated", "inline"]), label="restored mode")
    second = deploy(run, mode, seed=data.draw(st.integers(0, 99), label="seed after"),
                    slice_size=data.draw(st.integers(1, 12), label="slice after"))
    second.restore(pickle.loads(saved))
    rnd_after = random.Random(rnd_seed + 1)
    after, added_after, left_after = feed(second, left, rest_wms, rnd_after)
    for a in left_after:
        second.add(a[0], a[1])
    after += second.finish()
    everything = added + added_after + left_after
    expected = sequential(run["program"], _items(everything))
    assert before + after == expected
    # the first deployment, going on after its snapshot with the same input, agrees
    rnd_after = random.Random(rnd_seed + 1)
    again, _, left_again = feed(first, left, rest_wms, rnd_after)
    for a in left_again:
        first.add(a[0], a[1])
    assert before + again + first.finish() == expected


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_a_checkpoint_restores_across_transports(mode):
    run = fixed_run(*FIXED["counter"])
    first = deploy(run, mode)
    before, added, left = feed(first, run["arrivals"], run["watermarks"][:2],
                               random.Random(1))
    saved = pickle.loads(pickle.dumps(first.snapshot()))
    first.close()
    second = deploy(run, "processes" if mode == "threads" else "threads")
    second.restore(saved)
    after, added_after, left_after = feed(second, left, run["watermarks"][2:],
                                          random.Random(2))
    for a in left_after:
        second.add(a[0], a[1])
    after += second.finish()
    assert before + after == sequential(run["program"], _items(added + added_after + left_after))
    assert len(before) > 0 and len(after) > 0


def _dgs_stages(executor, program, trace, items):
    """Create -> Typed -> the DGS step, as the local runner's stages on `executor`; the
    stages and the DGS step's output record."""
    from pomset.runners.local.stages import stage_for
    from pomset.runtime.fusion import Fusion
    from pomset.runtime.plan import lower
    p = pm.Pipeline(argv=["--quiet"])
    out = (p | pm.Create([pm.TimestampedValue(item, ts) for ts, item in items])
           | pm.Typed(trace, period=10) | "Counter" >> program)
    executor.record[id(out)] = []
    executor.times[id(out)] = []
    plan = lower(p)
    fusion = Fusion(plan.nodes)
    stages = [stage_for(n, executor, fusion) for n in plan]
    executor.wire(stages)
    return stages, executor.record[id(out)]


@pytest.mark.parametrize("before,after", [("processes", "sequential"), ("sequential", "threads")])
def test_the_local_runners_stage_checkpoint_restores_the_dgs_state(before, after):
    """The local runner's DGS stage checkpointed mid-stream (its deployment's joined state
    and the items not yet released) and restored in a fresh stage, on another executor: the
    output is the uninterrupted run's."""
    from pomset.runners.local.executor import SequentialExecutor
    from pomset.runners.local.parallel import ParallelExecutor
    from pomset.windowing import GLOBAL_WINDOW, MAX_MICROS, NO_FIRING, WindowedValue

    def executor(kind):
        return (SequentialExecutor({}) if kind == "sequential"
                else ParallelExecutor({}, 2, kind))

    rnd = random.Random(4)
    keys = [0, 1, 2]
    trace = counter_trace(keys)
    items = [(rnd.randrange(10 ** 6), ((rnd.choice("iiiir"), rnd.choice(keys)), 1))
             for _ in range(300)]
    program = counter(keys=keys)

    def elements(part):
        return [WindowedValue.raw(item, ts, GLOBAL_WINDOW, NO_FIRING, 1) for ts, item in part]

    def run(stages, part, wm):
        stages[1].receive(0, elements(part))
        for stage in stages[1:]:
            stage.in_wms = [wm] * len(stage.in_wms)
            stage.advance()

    ex = executor("sequential")
    stages, whole = _dgs_stages(ex, program, trace, items)
    run(stages, items, MAX_MICROS)
    ex.shutdown()
    cut = 5 * 10 ** 5
    early = [it for it in items if it[0] < cut + 10 ** 5]   # some past the cut stay pending
    late = [it for it in items if it[0] >= cut + 10 ** 5]
    first = executor(before)
    stages, got = _dgs_stages(first, program, trace, items)
    run(stages, early, cut)
    saved = pickle.loads(pickle.dumps([s.snapshot() for s in stages]))
    first.shutdown()
    assert got and saved[-1]["deployment"]["pending"]
    second = executor(after)
    stages, rest = _dgs_stages(second, program, trace, items)
    for stage, state in zip(stages, saved):
        stage.restore(state)
    run(stages, late, MAX_MICROS)
    second.shutdown()
    assert [(wv.ts, wv.value) for wv in got + rest] == [(wv.ts, wv.value) for wv in whole]
    assert len(whole) == sum(1 for _, ((kind, _), _) in items if kind == "r")


# --- pipelines ----------------------------------------------------------------------------------

@pytest.mark.parametrize("flags", [["--workers=1"], ["--workers=3", "--worker_mode=threads"],
                                   ["--workers=3", "--worker_mode=processes",
                                    "--shuffle_merges=5"]])
def test_a_pipeline_gives_the_sequential_output(flags):
    rnd = random.Random(9)
    tags = sorted(FRAUD_TRACE.tags)
    arrivals = [(rnd.randrange(500), (rnd.choice(tags * 10 + ["rule"]), rnd.randrange(60)))
                for _ in range(300)]
    p = pm.Pipeline(argv=flags + ["--quiet"])
    out = (p | pm.Create([pm.TimestampedValue(item, ts) for ts, item in arrivals])
           | pm.Typed(FRAUD_TRACE, period=37) | fraud())
    out.keep()
    got = [(wv.ts, wv.value) for wv in p.run().collect(out)]
    expected = [(ts * 10 ** 6, o) for ts, o in sequential(fraud(), arrivals)]
    assert got == expected and len(expected) > 20


# --- user errors --------------------------------------------------------------------------------

def _failing_window(**kw):
    def update(s, tag, value, emit):
        if value == 7:
            raise ZeroDivisionError("seven")
        return s + value if tag == "v" else 0
    return window(update=update, label="Failing", **kw)


@pytest.mark.parametrize("mode", ["inline", "simulated", "threads", "processes"])
def test_a_failing_update_names_the_step_the_worker_and_the_event(mode):
    program = _failing_window()
    plan = optimize(program, 1 if mode == "inline" else 3, {"v": 100, "b": 1})
    d = DGSDeployment(program, WINDOW_TRACE, mode=mode, rng=random.Random(0))
    d.plan = plan
    d.min_parallel = 0
    for ts in range(20):
        d.add(ts, ("v", 7 if ts == 13 else 1))
    with pytest.raises(pm.UserCodeError) as info:
        d.finish()
    d.close()
    message = str(info.value)
    found = re.search(r"DGS 'Failing': update failed in worker '(w\d+)' on event 'v': 7: "
                      r"ZeroDivisionError: seven", message)
    assert found, message
    worker = next(w for w in plan.workers if w.name == found.group(1))
    assert any(tag == "v" for tag, _ in worker.tags)


def test_a_failing_join_or_fork_names_the_worker():
    def bad_join(a, b):
        raise KeyError("joined")
    d = DGSDeployment(window(join=bad_join, label="J"), WINDOW_TRACE, mode="simulated",
                      rng=random.Random(0))
    d.plan = optimize(d.program, 2, {"v": 100, "b": 1})
    for ts in range(5):
        d.add(ts, ("v", 1))
    d.add(5, ("b", 0))
    with pytest.raises(pm.UserCodeError, match=r"DGS 'J': join failed in worker 'w0' on event "
                                               r"'b': 0: KeyError: 'joined'"):
        d.finish()

    def bad_fork(s, left, right):
        raise ValueError("forked")
    d = DGSDeployment(window(fork=bad_fork, label="F"), WINDOW_TRACE, mode="simulated",
                      rng=random.Random(0))
    d.plan = optimize(d.program, 2, {"v": 100, "b": 1})
    d.add(0, ("v", 1))
    with pytest.raises(pm.UserCodeError, match=r"DGS 'F': fork failed in worker 'w0': "
                                               r"ValueError: forked"):
        d.finish()


@pytest.mark.parametrize("flags", [["--workers=1"], ["--workers=2"],
                                   ["--workers=2", "--worker_mode=processes"],
                                   ["--workers=2", "--worker_mode=threads"],
                                   ["--workers=3", "--worker_mode=threads", "--shuffle_merges=4"]])
def test_a_failing_update_in_a_pipeline_is_a_user_code_error(flags):
    p = pm.Pipeline(argv=flags + ["--quiet"])
    (p | pm.Create([pm.TimestampedValue(("v", 7 if i == 6 else 1), i) for i in range(10)])
     | pm.Typed(WINDOW_TRACE, period=10) | "Win" >> _failing_window())
    with pytest.raises(pm.UserCodeError, match=r"DGS 'Win': update failed in worker 'w\d+' on "
                                               r"event 'v': 7: ZeroDivisionError: seven"):
        p.run().wait_until_finish()


def _window_in_processes(update, label):
    program = window(update=update, label=label)
    d = DGSDeployment(program, WINDOW_TRACE, mode="processes")
    d.plan = optimize(program, 3, {"v": 100, "b": 1})
    d.min_parallel = 0
    for ts in range(10):
        d.add(ts, ("v", ts))
    d.add(10, ("b", 0))
    return d


def test_an_output_that_does_not_pickle_is_an_error_in_worker_processes():
    """Not an output dropped with a traceback on stderr (the process queue's default)."""
    def update(s, tag, value, emit):
        if value == 3:
            emit(lambda: "no pickle")
        return s + value if tag == "v" else 0
    d = _window_in_processes(update, "Unpicklable")
    with pytest.raises(pm.UserCodeError, match=r"DGS 'Unpicklable': worker 'w\d' could not send "
                                               r"its outputs to another process: .*pickle"):
        d.finish()
    d.close()


def test_a_worker_process_that_dies_is_an_error_not_a_hang():
    def update(s, tag, value, emit):
        if value == 3:
            import os
            os._exit(3)
        return s + value if tag == "v" else 0
    d = _window_in_processes(update, "Exits")
    with pytest.raises(pm.UserCodeError, match=r"DGS 'Exits': worker 'w\d' \(process \d+\) died "
                                               r"with exit code 3 before it finished its input"):
        d.finish()
    d.close()
