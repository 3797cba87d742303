"""Typed data traces (Mamouras et al.): trace types and their equivalence, the templates'
consistency (Definition 3.5), semantics-preserving deployment (Theorem 4.3, Corollary 4.4),
the build-time type check, and the paper's Section 2 pipeline."""
from __future__ import annotations

import pickle
import random

import pytest
from hypothesis import example, given, settings, strategies as st

import pomset as pm
from pomset.traces import trace_of
from pomset.traces.edges import EdgeTrace
from pomset.traces.equivalence import equivalent, normal_form
from pomset.runtime.deployment import Deployment
from pomset.traces.templates import TemplateStep

from conftest import runner_flags
from trace_programs import (PERIOD, blocks_form, build, items, keyed_ordered, keyed_unordered,
                            stateless)

P_US = PERIOD * 1_000_000


# --- trace types and equivalence ------------------------------------------------------------

def test_unordered_blocks_are_bags_and_markers_order_them():
    t = pm.U(str, int)
    m1 = pm.Marker(1, P_US)
    assert equivalent(t, [("a", 1), ("b", 2), m1, ("a", 3)], [("b", 2), ("a", 1), m1, ("a", 3)])
    assert not equivalent(t, [("a", 1), m1, ("b", 2)], [("b", 2), m1, ("a", 1)])


def test_ordered_keeps_each_keys_order_but_not_across_keys():
    t = pm.O(str, int)
    assert equivalent(t, [("a", 1), ("b", 2), ("a", 3)], [("b", 2), ("a", 1), ("a", 3)])
    assert not equivalent(t, [("a", 1), ("a", 3)], [("a", 3), ("a", 1)])


def test_general_type_example_3_9_bags_between_markers():
    # the paper's Example 3.9: unordered numbers (sigma) and linearly ordered markers (tau)
    t = pm.TraceType({"sigma": int, "tau": pm.Unit},
                     depends=[("sigma", "tau"), ("tau", "tau")])
    a = [("sigma", 3), ("sigma", 1), ("tau", None), ("sigma", 5)]
    b = [("sigma", 1), ("sigma", 3), ("tau", None), ("sigma", 5)]
    c = [("sigma", 1), ("tau", None), ("sigma", 3), ("sigma", 5)]
    assert equivalent(t, a, b) and not equivalent(t, a, c)


def test_general_type_key_partitioning_example_3_8():
    # Example 3.8: per-key sub-streams, (k, k) dependent only
    t = pm.TraceType({"x": int, "y": int}, depends=[("x", "x"), ("y", "y")])
    assert equivalent(t, [("x", 1), ("y", 1), ("x", 2)], [("y", 1), ("x", 1), ("x", 2)])
    assert not equivalent(t, [("x", 1), ("x", 2)], [("x", 2), ("x", 1)])


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 3)), max_size=8),
       st.randoms(use_true_random=False))
def test_general_equivalence_matches_swapping_independent_neighbours(seq, rnd):
    # the definition: equivalent when reachable by swapping adjacent independent items
    t = pm.TraceType({"a": int, "b": int, "c": int}, depends=[("a", "b"), ("b", "b")])
    swapped = list(seq)
    for _ in range(20):
        if len(swapped) < 2:
            break
        i = rnd.randrange(len(swapped) - 1)
        x, y = swapped[i], swapped[i + 1]
        if not t.depends(x[0], y[0]):
            swapped[i], swapped[i + 1] = y, x
    assert equivalent(t, seq, swapped)
    for i in range(len(seq) - 1):
        x, y = seq[i], seq[i + 1]
        if t.depends(x[0], y[0]) and x != y:
            moved = seq[:i] + [y, x] + seq[i + 2:]
            assert not equivalent(t, seq, moved)


def test_type_fitting():
    assert pm.O(str, int).fits(pm.U(str, int))
    assert not pm.U(str, int).fits(pm.O(str, int))
    assert pm.U(str, bool).fits(pm.U(str, int))          # bool is an int
    assert not pm.U(str, str).fits(pm.U(str, int))


# --- consistency (Definition 3.5): equivalent inputs give equivalent outputs -------------------

def _step(template, in_type, sort=None):
    node_label = "op"
    step = TemplateStep(template, EdgeTrace(in_type, P_US, "source", "declared"), sort=sort)
    step.output_trace = EdgeTrace(template.output_type(in_type, node_label), P_US, node_label,
                                  "test")
    return step


def _run_sequence(step, seq, n=1, rng=None):
    """Feed a sequence of items ((key, value), ts) and Markers to a deployment; the output
    trace as items and markers, as emitted."""
    d = Deployment(step, "op", parallelism=n, rng=rng)
    out = []
    for x in seq:
        if isinstance(x, pm.Marker):
            out += [item for _, item in d.advance(x.micros)]
            out.append(x)
        else:
            out += [item for _, item in d.receive([(x[1] * 1_000_000, x[0])])]
    out += [item for _, item in d.finish()]
    return out


def _blocks(data, markers):
    """Items in arrival order with markers where their timestamps require (every item before
    the marker just above its timestamp)."""
    data = sorted(data, key=lambda x: x[1] // PERIOD)
    seq, b = [], None
    for x in data:
        blk = x[1] // PERIOD + 1
        while b is not None and b < blk:
            seq.append(pm.Marker(b, b * P_US))
            b += 1
        b = blk if b is None else b
        seq.append(x)
    for _ in range(markers):
        if b is not None:
            seq.append(pm.Marker(b, b * P_US))
            b += 1
    return seq


def _equivalent_arrival(seq, ordered, rnd):
    """Another arrival order of the same trace: within each block, the items shuffled (keeping
    each key's order when `ordered`)."""
    out, block = [], []

    def flush():
        if not ordered:
            rnd.shuffle(block)
            out.extend(block)
            return
        by_key = {}
        for x in block:
            by_key.setdefault(x[0][0], []).append(x)
        lanes = [k for k, xs in by_key.items() for _ in xs]
        rnd.shuffle(lanes)
        pos = {k: 0 for k in by_key}
        for k in lanes:
            out.append(by_key[k][pos[k]])
            pos[k] += 1
    for x in seq:
        if isinstance(x, pm.Marker):
            flush()
            block = []
            out.append(x)
        else:
            block.append(x)
    flush()
    return out


TEMPLATES = [("stateless", stateless, pm.U(int, int), False),
             ("keyed_ordered", keyed_ordered, pm.O(int, int), True),
             ("keyed_unordered", keyed_unordered, pm.U(int, int), False)]


@pytest.mark.parametrize("name,program,in_type,ordered", TEMPLATES, ids=[t[0] for t in TEMPLATES])
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), data_seed=st.integers(0, 10**6), n=st.integers(0, 40),
       markers=st.integers(0, 3), rnd=st.randoms(use_true_random=False))
def test_templates_are_consistent(name, program, in_type, ordered, seed, data_seed, n, markers,
                                  rnd):
    template = program(seed)
    step = _step(template, in_type)
    u = _blocks(items(data_seed, n), markers)
    v = _equivalent_arrival(u, ordered, rnd)
    assert normal_form(in_type, [x if isinstance(x, pm.Marker) else x[0] for x in u]) == \
        normal_form(in_type, [x if isinstance(x, pm.Marker) else x[0] for x in v])
    out_type = step.output_trace.type
    assert equivalent(out_type, _run_sequence(step, u), _run_sequence(step, v))


def test_consistency_is_not_vacuous_an_ordered_program_sees_each_keys_order():
    # the property above would hold for a constant function; an ordered program does depend
    # on a key's order, which is what its O input type protects
    step = _step(keyed_ordered(1), pm.O(int, int))
    u = [((0, v), 1) for v in range(1, 8)]
    a, b = _run_sequence(step, u), _run_sequence(step, list(reversed(u)))
    assert not equivalent(pm.O(int, int), a, b)


# --- deployment (Theorem 4.3, Corollary 4.4) ----------------------------------------------

def _run(seed, data, parallel, shuffle_seed=None, runner="local"):
    flags = ["--quiet"] + runner_flags(runner)
    if shuffle_seed is not None:
        flags.append(f"--shuffle_merges={shuffle_seed}")
    p = pm.Pipeline(argv=flags)
    last = build(p, seed, data, parallel)
    result = p.run()
    return last.trace.type, result.collect(last)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), data_seed=st.integers(0, 10**6), n=st.integers(0, 60),
       shuffle=st.integers(0, 10**6))
@example(seed=130294, data_seed=787803, n=10, shuffle=834715)   # stateless markers after RR
@example(seed=52, data_seed=52, n=51, shuffle=0)                 # a Sort that ties
def test_any_parallel_deployment_equals_the_sequential_one(seed, data_seed, n, shuffle):
    data = items(data_seed, n)
    out_type, sequential = _run(seed, data, parallel=False)
    _, parallel = _run(seed, data, parallel=True, shuffle_seed=shuffle)
    assert blocks_form(out_type, parallel) == blocks_form(out_type, sequential)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), data_seed=st.integers(0, 10**6), n=st.integers(0, 60),
       shuffle=st.integers(0, 10**6))
@example(seed=130294, data_seed=787803, n=10, shuffle=834715)
def test_instances_in_worker_processes_give_the_same_output(seed, data_seed, n, shuffle):
    """With --worker_mode=processes a template step's instances run in the worker processes
    (instance i in process i % workers): the same output, merged the same way, as in one."""
    data = items(data_seed, n)
    out_type, here = _run(seed, data, parallel=True, shuffle_seed=shuffle)
    _, there = _run(seed, data, parallel=True, shuffle_seed=shuffle, runner="local-processes")
    assert there == here
    _, sequential = _run(seed, data, parallel=False)
    assert blocks_form(out_type, there) == blocks_form(out_type, sequential)


def _template_stages(executor):
    """A keyed ordered step of 3 instances over typed input, as the local runner's stages on
    `executor`; (the step's stage, its output's record)."""
    from pomset.runners.local.stages import stage_for
    from pomset.runtime.fusion import Fusion
    from pomset.runtime.plan import lower
    p = pm.Pipeline(argv=["--quiet"])
    src = (p | pm.Create([pm.TimestampedValue(kv, ts) for kv, ts in items(4, 120)])
           | pm.Typed(pm.U(int, int), period=PERIOD))
    out = src | pm.Sort(lambda v: v) | "KO" >> keyed_ordered(9).with_parallelism(3)
    executor.record[id(out)] = []
    executor.times[id(out)] = []
    plan = lower(p)
    fusion = Fusion(plan.nodes)
    stages = [stage_for(n, executor, fusion) for n in plan]
    executor.wire(stages)
    step = next(s for s in stages if s.label == "KO")
    return stages, step, executor.record[id(out)]


@pytest.mark.parametrize("before,after", [("processes", "sequential"), ("sequential", "processes")])
def test_a_checkpoint_of_instances_in_worker_processes_restores_in_one_and_back(before, after):
    """A step's instances checkpointed in worker processes restore in this process, and the
    other way round: the output is the uninterrupted run's."""
    from pomset.runners.local.executor import SequentialExecutor
    from pomset.runners.local.parallel import ParallelExecutor
    from pomset.windowing import MAX_MICROS

    def executor(kind):
        return (ParallelExecutor({}, 2, "processes") if kind == "processes"
                else SequentialExecutor({}))

    def feed(stages, elements, wm=MAX_MICROS):
        stages[1].receive(0, elements)   # the source's elements, to Typed
        for stage in stages[1:]:
            stage.in_wms = [wm] * len(stage.in_wms)
            stage.advance()

    elements = list(pm.Create([pm.TimestampedValue(kv, ts) for kv, ts in items(4, 120)])
                    .bundles(1000))[0]
    cut = 40 * 10**6
    early = [wv for wv in elements if wv.ts < cut]
    late = [wv for wv in elements if wv.ts >= cut]
    stages, _, whole = _template_stages(executor("sequential"))
    feed(stages, elements)

    first_ex = executor(before)
    stages, step, got = _template_stages(first_ex)
    feed(stages, early, cut)
    saved = pickle.loads(pickle.dumps([s.snapshot() for s in stages]))
    first_ex.shutdown()
    assert got and any(saved[-1]["deployment"]["states"])   # markers passed, keys kept state
    second_ex = executor(after)
    stages, step, rest = _template_stages(second_ex)
    for stage, state in zip(stages, saved):
        stage.restore(state)
    feed(stages, late)
    second_ex.shutdown()
    assert [wv.value for wv in got + rest] == [wv.value for wv in whole]


@pytest.mark.parametrize("parallelism", [1, 2, 3, 4])
def test_each_parallelism_with_shuffled_input_and_merges_gives_the_sequential_output(parallelism):
    data = items(11, 300)
    out_type, expected = _run(5, data, parallel=False)

    def pipeline(shuffle_seed, order_seed):
        p = pm.Pipeline(argv=["--quiet", f"--shuffle_merges={shuffle_seed}", "--bundle_size=7"])
        shuffled = list(data)
        random.Random(order_seed).shuffle(shuffled)
        src = (p | pm.Create([pm.TimestampedValue(kv, ts) for kv, ts in shuffled])
               | pm.Typed(pm.U(int, int), period=PERIOD))
        a = src | "A" >> stateless(1).with_parallelism(parallelism)
        b = (a | "B" >> pm.Sort(lambda v: v, parallelism=parallelism)
             | "C" >> keyed_ordered(2).with_parallelism(parallelism))
        c = b | "D" >> keyed_unordered(3).with_parallelism(parallelism)
        return p, c
    p1, c1 = pipeline(0, 0)
    reference = blocks_form(c1.trace.type, p1.run().collect(c1))
    for s in range(1, 4):
        p, c = pipeline(s, s)
        assert blocks_form(c.trace.type, p.run().collect(c)) == reference
    assert reference != blocks_form(c1.trace.type, [])


# --- the type check --------------------------------------------------------------------------

def _typed_source(p, t=None, period=PERIOD):
    return (p | pm.Create([pm.TimestampedValue(kv, ts) for kv, ts in items(1, 20)])
            | pm.Typed(t or pm.U(int, int), period=period))


def test_ordered_operator_on_unordered_input_is_rejected_naming_everything():
    p = pm.Pipeline(argv=["--quiet"])
    parsed = _typed_source(p) | "Parse" >> stateless(1).with_parallelism(2)
    with pytest.raises(pm.PipelineConstructionError) as e:
        parsed | "Interpolate" >> keyed_ordered(1)
    msg = str(e.value)
    assert "OpKeyedOrdered 'Interpolate' needs O(int, int)" in msg
    assert "got U(int, int) from 'Parse' (the output of OpStateless)" in msg
    assert "Fix: insert `| pm.Sort(order=...)` before it" in msg


def test_auto_sort_inserts_the_sort_and_says_so():
    p = pm.Pipeline(argv=["--quiet", "--auto_sort"])
    parsed = _typed_source(p) | "Parse" >> stateless(1)
    with pytest.warns(pm.SortInserted, match="inserted pm.Sort.* before 'Interpolate'"):
        out = parsed | "Interpolate" >> keyed_ordered(1)
    assert [n.label for n in p.nodes][-2:] == ["Interpolate/Sort(...)", "Interpolate"]
    assert p.run().collect(out)


def test_auto_sort_needs_the_operators_order():
    p = pm.Pipeline(argv=["--quiet", "--auto_sort"])
    parsed = _typed_source(p) | "Parse" >> stateless(1)
    op = pm.OpKeyedOrdered(on_item=lambda s, k, v, emit: s)
    with pytest.raises(pm.PipelineConstructionError, match="pass order= to the operator"):
        parsed | op


def test_untyped_input_is_rejected_with_how_to_declare():
    p = pm.Pipeline(argv=["--quiet"])
    src = p | pm.Create([1, 2])
    with pytest.raises(pm.PipelineConstructionError, match="has no trace type: declare one"):
        src | stateless(1)


def test_declared_type_must_fit_the_edge():
    p = pm.Pipeline(argv=["--quiet"])
    parsed = _typed_source(p) | stateless(1)
    with pytest.raises(pm.PipelineConstructionError, match="declares O.*to order it, use pm.Sort"):
        parsed | pm.Typed(pm.O(int, int))
    with pytest.raises(pm.PipelineConstructionError, match="give the marker period"):
        p | "bare" >> pm.Create([1]) | pm.Typed(pm.U(pm.Unit, int))


def test_merge_needs_aligned_markers_and_is_ordered_only_for_one_hash_split():
    p = pm.Pipeline(argv=["--quiet"])
    a = _typed_source(p)
    b = p | "other" >> pm.Create([]) | "T2" >> pm.Typed(pm.U(int, int), period=5)
    with pytest.raises(pm.PipelineConstructionError, match="markers do not align"):
        (a, b) | pm.Merge()
    ordered = a | pm.Sort(lambda v: v)
    parts = ordered | pm.Hash(3)
    assert all(pc.trace.type == pm.O(int, int) for pc in parts)
    assert (tuple(parts) | "M1" >> pm.Merge()).trace.type == pm.O(int, int)
    assert (tuple(parts[:2]) + (ordered,) | "M2" >> pm.Merge()).trace.type == pm.U(int, int)


def test_a_sort_that_ties_still_gives_one_order_whatever_the_deployment():
    data = [pm.TimestampedValue(("k", (t // 3, v)), t // 3) for t, v in enumerate(range(30, 0, -1))]

    def first_per_time(state, key, value, emit):
        if state != value[0]:
            emit(key, value)
        return value[0]
    outs = set()
    for par, seed in [(1, None), (4, 1), (4, 2), (3, 3)]:
        flags = ["--quiet", "--bundle_size=4"] + ([f"--shuffle_merges={seed}"] if seed else [])
        p = pm.Pipeline(argv=flags)
        src = p | pm.Create(data) | pm.Typed(pm.U(str, tuple), period=5)
        spread = src | pm.OpStateless(on_item=lambda k, v, emit: emit(k, v), parallelism=par)
        firsts = (spread | pm.Sort(lambda v: v[0], parallelism=par)
                  | pm.OpKeyedOrdered(on_item=first_per_time, parallelism=par))
        outs.add(tuple(w.value for w in p.run().collect(firsts)))
    assert len(outs) == 1


def test_round_robin_deals_from_the_first_output():
    p = pm.Pipeline(argv=["--quiet"])
    parts = (p | pm.Create([pm.TimestampedValue(("k", i), i) for i in range(5)])
             | pm.Typed(pm.U(str, int), period=10) | pm.RoundRobin(2))
    result = p.run()
    assert [[w.value[1] for w in result.collect(pc)] for pc in parts] == [[0, 2, 4], [1, 3]]


def test_templates_take_no_retractions():
    p = pm.Pipeline(argv=["--quiet"])
    src = _typed_source(p)
    sums = (src | pm.WindowInto(pm.FixedWindows(10), trigger=pm.AfterWatermark(
        early=pm.AfterCount(1)), accumulation_mode=pm.AccumulationMode.RETRACTING)
        | pm.CombinePerKey(sum))
    with pytest.raises(pm.PipelineConstructionError, match="may carry retractions"):
        sums | keyed_unordered(1)


def test_ordered_operator_must_keep_the_key():
    p = pm.Pipeline(argv=["--quiet"])
    src = _typed_source(p) | pm.Sort(lambda v: v)
    src | "Bad" >> pm.OpKeyedOrdered(on_item=lambda s, k, v, emit: emit(k + 1, v))
    with pytest.raises(pm.UserCodeError, match="'Bad' emitted key .* outputs keep the input key"):
        p.run()


def test_items_that_do_not_fit_the_declared_type_fail_naming_the_step():
    p = pm.Pipeline(argv=["--quiet"])
    src = (p | pm.Create([pm.TimestampedValue(("a", "x"), 1)])
           | pm.Typed(pm.U(str, int), period=1))
    src | "Op" >> pm.OpStateless(on_item=lambda k, v, emit: None)
    with pytest.raises(pm.UserCodeError, match=r"'Op': input item \('a', 'x'\) is not of type U\(str, int\)"):
        p.run()


# --- markers, streaming and the rest of the model ---------------------------------------------

def _max_per_marker():
    return pm.OpKeyedUnordered(in_=lambda k, v: v, id=lambda: float("-inf"), combine=max,
                               initial_state=lambda: float("-inf"), update_state=max,
                               on_marker=lambda s, k, m, emit: emit(k, (s, int(m.timestamp))))


def test_streaming_markers_follow_the_watermark_and_match_batch():
    events = [(("a", 3), 1), (("a", 5), 12), (("b", 4), 14), (("a", 2), 25)]
    stream = pm.TestStream().add_elements([pm.TimestampedValue(kv, t) for kv, t in events[:2]])
    stream = (stream.advance_processing_time(5).advance_watermark_to(10)
              .add_elements([pm.TimestampedValue(kv, t) for kv, t in events[2:]])
              .advance_processing_time(5).advance_watermark_to(30).advance_watermark_to_infinity())
    with pm.Pipeline(argv=["--quiet"]) as p:
        out = p | stream | pm.Typed(pm.U(str, int), period=10) | _max_per_marker()
    got = p.result.collect(out)
    with pm.Pipeline(argv=["--quiet"]) as q:
        batch = (q | pm.Create([pm.TimestampedValue(kv, t) for kv, t in events])
                 | pm.Typed(pm.U(str, int), period=10) | _max_per_marker())
    assert sorted((w.value, w.ts) for w in got) == sorted((w.value, w.ts) for w in q.result.collect(batch))
    assert sorted(w.value for w in got) == [("a", (3, 10)), ("a", (5, 20)), ("a", (5, 30)),
                                            ("b", (4, 20)), ("b", (4, 30))]
    # the first marker's outputs appeared when the watermark passed 10, before later data
    assert [w.value for w in got][:1] == [("a", (3, 10))]


def test_template_feeds_and_follows_windowed_groupings():
    data = [pm.TimestampedValue(("k", v), t) for v, t in [(1, 1), (2, 3), (3, 11), (4, 12), (5, 25)]]
    with pm.Pipeline(argv=["--quiet"]) as p:
        src = p | pm.Create(data) | pm.Typed(pm.U(str, int), period=10)
        doubled = src | pm.OpStateless(on_item=lambda k, v, emit: emit(k, 2 * v),
                                       out=pm.U(str, int))
        sums = (doubled | pm.WindowInto(pm.FixedWindows(10)) | pm.CombinePerKey(sum)).keep()
        assert repr(trace_of(sums).type) == "U(str, Any)"
        running = sums | _max_per_marker()
    assert sorted(w.value for w in p.result.collect(sums)) == [("k", 6), ("k", 10), ("k", 14)]
    assert sorted(w.value for w in p.result.collect(running)) == [
        ("k", (6, 10)), ("k", (14, 20)), ("k", (14, 30))]


def test_late_items_join_the_open_block_and_are_counted():
    stream = (pm.TestStream().add_elements([pm.TimestampedValue(("a", 1), 1)])
              .advance_watermark_to(20)
              .add_elements([pm.TimestampedValue(("a", 9), 2)])
              .advance_watermark_to_infinity())
    with pm.Pipeline(argv=["--quiet"]) as p:
        out = p | stream | pm.Typed(pm.U(str, int), period=10) | "Max" >> _max_per_marker()
    assert sorted(w.value for w in p.result.collect(out)) == [("a", (1, 10)), ("a", (1, 20)),
                                                             ("a", (9, 30))]
    assert p.result.metrics()["Max"]["late"] == 1


def test_deployment_snapshot_restores_mid_stream():
    step = _step(keyed_unordered(4), pm.U(int, int))
    data = [((k, v), t * 1_000_000) for (k, v), t in items(3, 80)]
    whole = Deployment(step, "op", parallelism=3)
    whole.receive([(t, kv) for kv, t in data[:40]])
    whole.advance(30 * 1_000_000)
    snap = pickle.dumps(whole.snapshot())
    expected = whole.receive([(t, kv) for kv, t in data[40:]]) + whole.finish()
    resumed = Deployment(step, "op", parallelism=3)
    resumed.restore(pickle.loads(snap))
    assert resumed.receive([(t, kv) for kv, t in data[40:]]) + resumed.finish() == expected
    assert expected


# --- the paper's Section 2: a parallel Map before a linear interpolation ---------------------

def _readings():
    """One sensor, one reading per second with gaps, values from a walk."""
    r = random.Random(3)
    out, v = [], 20.0
    for t in range(0, 200):
        v += r.uniform(-1, 1)
        if r.random() < 0.6:
            out.append({"id": "s1", "scalar": round(v, 2), "ts": t, "meta": "x" * 5})
    return out


def _interpolate(state, key, value, emit):
    scalar, ts = value
    if state is not None:
        x, t0 = state
        for i in range(1, ts - t0):
            emit(key, (round(x + i * (scalar - x) / (ts - t0), 6), t0 + i))
    emit(key, value)
    return value


def _expected_interpolation(readings):
    out, prev = [], None
    for m in sorted(readings, key=lambda m: m["ts"]):
        cur = (m["scalar"], m["ts"])
        if prev is not None:
            for i in range(1, cur[1] - prev[1]):
                out.append((round(prev[0] + i * (cur[0] - prev[0]) / (cur[1] - prev[1]), 6),
                            prev[1] + i))
        out.append(cur)
        prev = cur
    return out


def _parse(m):
    return (m["id"], (m["scalar"], m["ts"]))


def test_section_2_untyped_parallel_map_gives_wrong_interpolation():
    readings = _readings()
    expected = _expected_interpolation(readings)
    # untyped: the Map runs as two instances (a split, two Maps, a merge: Storm's parallel
    # Map), and the interpolation trusts the edge to be in timestamp order
    p = pm.Pipeline(argv=["--quiet", "--bundle_size=16"])
    src = p | pm.Create([pm.TimestampedValue(m, m["ts"]) for m in readings])
    halves = src | pm.Partition(lambda m, n: m["ts"] % n, 2)
    mapped = [h | f"Map{i}" >> pm.Map(_parse) for i, h in enumerate(halves)]
    claimed = mapped | pm.Flatten() | pm.Typed(pm.O(str, tuple), period=10)
    li = claimed | "LI" >> pm.OpKeyedOrdered(initial_state=lambda: None, on_item=_interpolate)
    got = [w.value[1] for w in p.run().collect(li)]
    assert got != expected


def test_section_2_typed_pipeline_is_rejected_until_sorted_then_right():
    readings = _readings()
    expected = _expected_interpolation(readings)

    def pipeline(sort, parallelism):
        p = pm.Pipeline(argv=["--quiet", "--bundle_size=16", "--shuffle_merges=5"])
        src = (p | pm.Create([pm.TimestampedValue(m, m["ts"]) for m in readings])
               | pm.Typed(pm.U(pm.Unit, dict), period=10))
        parsed = src | "Map" >> pm.OpStateless(
            on_item=lambda k, m, emit: emit(*_parse(m)), parallelism=parallelism)
        if sort:
            parsed = parsed | pm.Sort(lambda v: v[1], parallelism=parallelism)
        li = parsed | "LI" >> pm.OpKeyedOrdered(initial_state=lambda: None,
                                                on_item=_interpolate, parallelism=parallelism)
        return p, li
    with pytest.raises(pm.PipelineConstructionError, match="OpKeyedOrdered 'LI' needs O"):
        pipeline(sort=False, parallelism=2)
    for parallelism in (1, 2, 4):
        p, li = pipeline(sort=True, parallelism=parallelism)
        assert [w.value[1] for w in p.run().collect(li)] == expected


# --- on Spark ----------------------------------------------------------------------------------

@pytest.fixture
def by_value(spark_session):
    """Spark's workers cannot import this test module: ship its functions by value."""
    import sys
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.mark.parametrize("seed,data_seed,n,runner", [
    (3, 3, 150, "spark"), (17, 17, 150, "spark"), (29, 29, 150, "spark"), (41, 41, 150, "spark"),
    (130294, 787803, 40, "spark"), (3, 3, 150, "spark-streaming"),
    (130294, 787803, 40, "spark-streaming")])
def test_spark_deployment_equals_the_sequential_one(spark_session, seed, data_seed, n, runner):
    data = items(data_seed, n)
    out_type, sequential = _run(seed, data, parallel=False)
    _, on_spark = _run(seed, data, parallel=True, runner=runner)
    assert blocks_form(out_type, on_spark) == blocks_form(out_type, sequential)
    assert sequential


def test_spark_section_2_pipeline_sorted_is_right(by_value):
    readings = _readings()
    p = pm.Pipeline(argv=["--quiet", "--runner=spark"])
    src = (p | pm.Create([pm.TimestampedValue(m, m["ts"]) for m in readings])
           | pm.Typed(pm.U(pm.Unit, dict), period=10))
    parsed = src | "Map" >> pm.OpStateless(on_item=lambda k, m, emit: emit(*_parse(m)),
                                           parallelism=3)
    li = (parsed | pm.Sort(lambda v: v[1], parallelism=3)
          | "LI" >> pm.OpKeyedOrdered(initial_state=lambda: None, on_item=_interpolate,
                                      parallelism=3))
    got = sorted(p.run().collect(li), key=lambda w: w.value[1][1])
    assert [w.value[1] for w in got] == _expected_interpolation(readings)


def test_spark_refuses_an_order_it_cannot_keep(spark_session):
    p = pm.Pipeline(argv=["--quiet", "--runner=spark"])
    src = (p | pm.Create([pm.TimestampedValue(("a", 1), 1)])
           | pm.Typed(pm.O(str, int), period=10))
    src | "LI" >> pm.OpKeyedOrdered(on_item=lambda s, k, v, emit: s)
    with pytest.raises(pm.PipelineConstructionError, match="cannot run 'LI' as written.*pm.Sort"):
        p.run()


def test_ordered_after_ordered_keeps_order_and_markers_on_every_runner(spark_session):
    # an ordered operator straight after another (same keys, no Sort between): Spark runs it
    # over the first one's output partitions in order; every runner passes the first one's
    # markers on, so the second emits at each of them
    data = items(8, 200)

    def pipeline(runner, par, seed=None):
        flags = ["--quiet"] + runner_flags(runner) + ([f"--shuffle_merges={seed}"] if seed else [])
        p = pm.Pipeline(argv=flags)
        src = (p | pm.Create([pm.TimestampedValue(kv, ts) for kv, ts in data])
               | pm.Typed(pm.U(int, int), period=PERIOD))
        first = src | pm.Sort(lambda v: v) | "KO1" >> keyed_ordered(5).with_parallelism(par)
        second = first | "KO2" >> keyed_ordered(6).with_parallelism(par)
        return p.run().collect(second), second.trace.type
    expected, t = pipeline("local", 1)
    for runner, par, seed in [("local", 3, 4), ("spark", 3, None)]:
        got, _ = pipeline(runner, par, seed)
        assert blocks_form(t, got) == blocks_form(t, expected)
    with pytest.raises(pm.PipelineConstructionError, match="cannot run 'KO2'"):
        pipeline("spark-streaming", 2)
