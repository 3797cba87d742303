"""The schedulers of the ordered-parallel core (Prasaad et al., Sec. 6), against the paper's
definitions: QST's thresholds, LP's latest operator with work, ET's estimated time, CT's
current throughput; and the board the workers ask: no operator ever gets more workers than
its most, every item is run once, in its operator's order when one worker at a time runs it."""
from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

import pomset as pm
from pomset.runtime.ordered.schedule import (CT, ET, LP, POLICIES, QST, Board, Operator,
                                             Shuffled, policy_named)
from pomset.sdk.errors import OptionsError
from pomset.sdk.options import SCHEDULES


def _noop(items):
    return 0


op_st = st.tuples(st.integers(0, 50), st.integers(0, 3), st.integers(1, 4),
                  st.floats(1e-7, 1e-3), st.integers(0, 5000), st.integers(0, 5000),
                  st.floats(0, 0.01))


@st.composite
def boards(draw, policy):
    """A board of 1-6 operators in a DAG (outputs only go downstream), each with work,
    workers, most workers, cost, measured totals and window time drawn at random."""
    board = Board(policy)
    specs = draw(st.lists(op_st, min_size=1, max_size=6))
    ops = []
    for i, (queued, workers, limit, cost, received, emitted, window) in enumerate(specs):
        op = board.add(Operator(f"o{i}", i, limit, _noop))
        for _ in range(queued):
            op.items.append((None, 1))
        op.queued = queued
        op.workers = min(workers, limit)
        op.cost, op.received, op.emitted, op.window_time = cost, received, emitted, window
        ops.append(op)
    for i, op in enumerate(ops):
        op.outputs = draw(st.lists(st.sampled_from(ops[i + 1:]), unique=True)) \
            if i + 1 < len(ops) else []
    board.ingress = draw(st.integers(0, 10_000))
    board.roots = draw(st.integers(1, 50))
    board.in_flight = draw(st.integers(1, 16))
    return board


def _ready(board):
    return [op for op in board.operators if op.items and op.workers < op.limit]


def _cs(board, op):
    return op.emitted / board.ingress if board.ingress and op.received else 1.0


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_lp_picks_the_latest_operator_with_work(data):
    board = data.draw(boards(LP()))
    ready = _ready(board)
    if ready:
        assert LP().pick(board, ready) is max(ready, key=lambda op: op.order)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_qst_picks_the_earliest_operator_under_its_output_threshold(data):
    board = data.draw(boards(QST()))
    ready = _ready(board)
    if not ready:
        return
    # every operator measured and none emitting: the thresholds are all zero
    total = sum(_cs(board, op) for op in board.operators) or 1.0
    capacity = max(board.in_flight * board.ingress / board.roots, 1.0)
    under = [op for op in ready if not op.outputs or sum(o.queued for o in op.outputs)
             < capacity * _cs(board, op) / total]
    assert QST().pick(board, ready) is (under[0] if under else None)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_et_picks_the_longest_estimated_time_with_one_more_worker(data):
    board = data.draw(boards(ET()))
    ready = _ready(board)
    if ready:
        best = max(op.queued * op.cost / (op.workers + 1) for op in ready)
        assert ET().pick(board, ready).queued * ET().pick(board, ready).cost \
            / (ET().pick(board, ready).workers + 1) == best


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_ct_picks_the_lowest_current_throughput(data):
    board = data.draw(boards(CT()))
    ready = _ready(board)
    if ready:
        def n(op):
            arriving = op.received / board.ingress if board.ingress and op.received else 1.0
            return (op.window_time + op.workers * board.slice) / (op.cost * arriving)
        assert n(CT().pick(board, ready)) == min(n(op) for op in ready)


def test_take_gives_a_slice_of_the_chosen_operators_items_in_order():
    board = Board(LP(), slice_seconds=0.001)
    first = board.add(Operator("first", 0, 2, _noop))
    last = board.add(Operator("last", 1, 1, _noop))
    for i in range(10):
        board.put(first, i, 100)
    last.cost = first.cost = 1e-6            # a slice is 1000 elements: ten items of 100
    board.put(last, "x", 5000)               # bigger than a slice: still taken, alone
    op, items, size = board.take()
    assert (op, items, size) == (last, ["x"], 5000)
    assert last.workers == 1
    op, items, size = board.take()           # `last` is at its most: `first` is next
    assert (op, items, size) == (first, list(range(10)), 1000)
    board.done(first, 1000, 500, 0.002)
    assert first.selectivity() == 0.5 and first.cost == pytest.approx(2e-6)


@pytest.mark.parametrize("policy", ["qst", "lp", "et", "ct", "random"])
def test_urgent_work_is_taken_before_the_policy_picks(policy):
    """Work a running operator waits for (a grouping's buckets, while the release folds it)
    goes to the next free worker, whatever the policy would pick among the others."""
    board = Board(policy_named(policy))
    first = board.add(Operator("first", 0, 2, _noop))
    buckets = board.add(Operator("buckets", 1, 2, _noop, urgent=True))
    last = board.add(Operator("last", 2, 1, _noop))
    for op in (first, last):
        board.put(op, "x", 100)
    board.put(buckets, "job", 1)
    assert board.take()[0] is buckets
    assert board.take()[0] is not buckets


@settings(max_examples=20, deadline=None)
@given(policy=st.sampled_from(["qst", "lp", "et", "ct", "random"]), seed=st.integers(0, 99),
       items=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 50)), max_size=60))
def test_workers_never_exceed_an_operators_most_and_run_every_item_once(policy, seed, items):
    """Three workers serve a board of a stateful operator (one worker at most: its items
    must run in order) and two stateless ones while items arrive."""
    board = Board(policy_named(policy, seed), slice_seconds=0.0005)
    running = {0: 0, 1: 0, 2: 0}
    most = {0: 0, 1: 0, 2: 0}
    ran = {0: [], 1: [], 2: []}
    lock = threading.Lock()

    def runner(k):
        def run(batch):
            with lock:
                running[k] += 1
                most[k] = max(most[k], running[k])
            time.sleep(0.0002)
            with lock:
                running[k] -= 1
                ran[k].extend(batch)
            return len(batch)
        return run

    ops = [board.add(Operator("stateful", 2, 1, runner(0))),
           board.add(Operator("a", 0, 3, runner(1))),
           board.add(Operator("b", 1, 3, runner(2)))]
    ops[1].outputs, ops[2].outputs = [ops[2]], [ops[0]]
    workers = [threading.Thread(target=board.serve) for _ in range(3)]
    for w in workers:
        w.start()
    want = {0: [], 1: [], 2: []}
    for n, (k, size) in enumerate(items):
        board.put(ops[k], n, size)
        want[k].append(n)
    deadline = time.monotonic() + 10
    while any(op.items or op.workers for op in ops) and time.monotonic() < deadline:
        time.sleep(0.001)
    board.close()
    for w in workers:
        w.join()
    assert most[0] <= 1 and most[1] <= 3 and most[2] <= 3
    assert ran[0] == want[0]                               # one at a time: in order
    assert sorted(ran[1]) == want[1] and sorted(ran[2]) == want[2]


def test_the_flag_names_every_policy_and_rejects_others_in_one_line():
    assert set(SCHEDULES) == set(POLICIES) | {"random"}
    assert pm.PipelineOptions([]).schedule == "ct"
    assert isinstance(policy_named("random", 3), Shuffled)
    with pytest.raises(OptionsError, match="schedule") as e:
        pm.PipelineOptions(["--schedule=fifo"])
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="qst"):
        policy_named("fifo")
