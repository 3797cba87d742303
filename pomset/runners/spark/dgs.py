"""A DGS step in a Spark batch plan, its synchronization plan deployed as the paper's Sec. 3
runs it: the stretches between synchronizing events run as parallel tasks over forked states,
joined at each synchronizing event.

- The plan is the program's own, else the optimizer's (`optimize`) with a leaf per core of
  Spark's default parallelism, from the program's `rates` or else each tag's count in the
  input (one aggregate job, which also gives every tag's pickled form).
- The events' total order is (timestamp, ordinal), the ordinal being the Spark partition an
  event was read in, then its place in that partition: the order the local runner receives
  them in where Spark keeps it, so ties in time break alike. A `Create`'s partitions are
  slices of its elements in order, and a file's lines stay in order in its task; the files of
  a multi-file read, the inputs of a Flatten and the output of a grouping come in Spark's
  partition order instead.
- Each event goes to the worker of its implementation tag, a tag's lanes dealt by ordinal
  (`ordinal % lanes`). The events of non-leaf workers, the synchronizing events, are few: they
  come to the driver, in order. Every leaf event is numbered with its stretch (how many
  synchronizing events of the leaf's ancestors come before it) and shuffled once into a
  partition of its leaf's own, sorted by stretch and cached.
- Then, round by round, each leaf whose forked state the driver holds runs its next stretch as
  the task of its partition, one job a round (the states travel in the tasks' closure, the
  events sorted in the task); the tasks return their end states and keep their outputs on
  the executors, each round's rows cached. On the
  driver, a synchronizing event whose owner's leaves have all run up to it joins their states
  up to its owner with the program's fork/join pairs, runs the owner's update and forks the
  new state back down. A plan with no synchronizing event runs in one round, one job.

The output is the rounds' cached outputs and the driver's, unioned (never collected), each at
its event's timestamp in the global window. Spark streaming does not run a DGS step
(`runner.py` refuses it before Spark starts)."""
from __future__ import annotations

import io
import pickle
from functools import reduce
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...runtime.collector import collect_rarely
from ...runtime.dgs.worker import DGSUserError
from ...runtime.plan import PlanNode, TranslatorTable, kinds
from ...sdk.errors import UserCodeError
from ...traces.dgs.optimizer import optimize
from ...windowing import GLOBAL_WINDOW, NO_FIRING, WindowedValue
from . import codec
from .batch import BATCH_ROWS
from .packs import bucket_labels

#: an event: its time, ordinal, pickled tag and pickled (tag, value) item
EVENTS = "ts long, o long, k binary, v binary"
_EVENTS_ARROW = pa.schema([pa.field("ts", pa.int64()), pa.field("o", pa.int64()),
                           pa.field("k", pa.binary()), pa.field("v", pa.binary())])
#: a leaf's event: its leaf's grouping label, its group (stretch * workers + leaf), the event
STAGED = "lbl long, g long, ts long, o long, v binary"
_STAGED_ARROW = pa.schema([pa.field("lbl", pa.int64()), pa.field("g", pa.int64()),
                           pa.field("ts", pa.int64()), pa.field("o", pa.int64()),
                           pa.field("v", pa.binary())])
#: what a stretch's task gives: output elements, then a row with its group and end state
ROUND = codec.ELEMENT + ", g long, s binary"
_ROUND_ARROW = pa.schema(list(codec.ELEMENT_ARROW) + [pa.field("g", pa.int64()),
                                                       pa.field("s", pa.binary())])
#: an ordinal is its partition's index shifted by this many bits, plus its place there
_PLACE_BITS = 33


def register(table: TranslatorTable) -> None:
    """Add the DGS translator to a Spark batch table."""
    table.register(kinds.DGS, translate)


def translate(node: PlanNode, batch: Any) -> Dict[Optional[str], Any]:
    """The DataFrame of a DGS step's outputs, in the element encoding."""
    return {None: _Deployment(batch, node).run()}


class _Deployment:
    """One DGS step on Spark: the plan, the driver's states of its leaves, the rounds."""

    def __init__(self, batch: Any, node: Any) -> None:
        self.batch = batch
        self.spark = batch.spark
        self.node = node
        self.label = node.label
        self.program = node.transform.program
        self.trace = node.transform.trace
        self.states: Dict[int, Any] = {}   # leaf -> its state, while the driver holds it
        self.outputs: List[WindowedValue] = []   # the synchronizing events' outputs

    def run(self) -> Any:
        events = self._events().persist()
        tags = self._tags(events)
        self._choose_plan(tags)
        dealt = self._deal(events, tags)
        sync = self._sync_events(dealt)
        staged = self.batch.persist(self._stage(dealt, sync))
        groups = {r["g"] for r in staged.select("g").distinct().collect()}
        events.unpersist()
        self.batch.counts[self.label] = {"workers": len(self.plan.workers), "late": 0,
                                         "dropped": 0}
        self._fork(0, self.program.init())
        outs = self._rounds(sync, groups, staged)
        if self.outputs:
            outs.append(self.batch.element_df(self.outputs))
        if not outs:
            return self.batch.empty()
        return reduce(lambda a, b: a.unionAll(b), outs)

    # --- the events, the plan --------------------------------------------------------------
    def _events(self) -> Any:
        """The input as events numbered by ordinal (in the task reading the input, fused with
        the Python steps before it where they run per partition)."""
        source = self.node.inputs[0]
        steps = self.batch.steps(source)
        if steps.grouped:   # a grouped task runs per group: number rows in a task of their own
            self.batch.df(source)
            steps = self.batch.steps(source)
        label, alphabet = self.label, self.trace.tags

        def number(bundles: Iterator[List[WindowedValue]]) -> Iterator[pa.RecordBatch]:
            from pyspark import TaskContext
            ordinal = TaskContext.get().partitionId() << _PLACE_BITS
            dumps = codec.dumps
            for bundle in bundles:
                ts, o, k, v = [], [], [], []
                for wv in bundle:
                    item = wv.value
                    ts.append(wv.ts)
                    o.append(ordinal)
                    ordinal += 1
                    k.append(dumps(_tag(item, alphabet, label)))
                    v.append(dumps(item))
                if ts:
                    yield pa.RecordBatch.from_arrays(
                        [pa.array(ts, pa.int64()), pa.array(o, pa.int64()),
                         pa.array(k, pa.binary()), pa.array(v, pa.binary())],
                        schema=_EVENTS_ARROW)
        return steps.run(number, EVENTS, source.producer.label)

    def _tags(self, events: Any) -> Dict[bytes, Tuple[Any, int]]:
        """Each pickled tag in the input: the tag and its count."""
        return {bytes(r["k"]): (codec.loads(r["k"]), r["count"])
                for r in events.groupBy("k").count().collect()}

    def _choose_plan(self, tags: Dict[bytes, Tuple[Any, int]]) -> None:
        """The program's plan, else the optimizer's from its rates or the tags' counts."""
        program = self.program
        plan = program.plan
        if plan is None:
            rates = program.rates
            if rates is None:
                rates = {}
                for tag, n in tags.values():
                    rates[tag] = rates.get(tag, 0) + n
            plan = optimize(program, self.spark.sparkContext.defaultParallelism, rates,
                            self.trace)
        self.plan = plan
        self.leaves = plan.leaves
        self.under = {i: [j for j in plan.leaves if j == i or i in plan.ancestors(j)]
                      for i in range(len(plan.workers))}   # each worker's leaves

    def _deal(self, events: Any, tags: Dict[bytes, Tuple[Any, int]]) -> Any:
        """The events with the worker `w` of their implementation tag."""
        from pyspark.sql import functions as F
        plan = self.plan
        lanes = self.spark.createDataFrame(
            [(k, [plan.owner[(tag, lane)] for lane in range(plan.lanes(tag))])
             for k, (tag, _) in tags.items()], "k binary, ws array<int>")
        lane = (F.pmod(F.col("o"), F.size("ws")) + 1).cast("int")
        return events.join(F.broadcast(lanes), "k").select(
            "ts", "o", "v", F.element_at("ws", lane).alias("w"))

    def _sync_events(self, dealt: Any) -> List[Tuple[int, int, int, Any, Any]]:
        """The synchronizing events (ts, ordinal, worker, tag, value), in order."""
        from pyspark.sql import functions as F
        owners = [i for i, w in enumerate(self.plan.workers) if not w.is_leaf]
        if not owners:
            return []
        rows = dealt.filter(F.col("w").isin(owners)).select("ts", "o", "w", "v").collect()
        return sorted((r["ts"], r["o"], r["w"], *codec.loads(r["v"])) for r in rows)

    def _stage(self, dealt: Any, sync: list) -> Any:
        """The leaves' events, each with its group (its leaf and stretch) and the grouping
        label that sends its leaf's tasks to a partition of its own."""
        from pyspark.sql import functions as F
        plan, workers = self.plan, len(self.plan.workers)
        labels = self.labels = dict(zip(self.leaves, bucket_labels(len(self.leaves),
                                                                   len(self.leaves))))
        # each leaf's bounds: the synchronizing events of its ancestors, by index and time
        above = {leaf: set(plan.ancestors(leaf)) for leaf in self.leaves}
        self.bounds = {leaf: [j for j, e in enumerate(sync) if e[2] in above[leaf]]
                       for leaf in self.leaves}
        bounds = {leaf: (np.array([sync[j][0] for j in mine], np.int64),
                         np.array([sync[j][1] for j in mine], np.int64))
                  for leaf, mine in self.bounds.items()}

        def stage(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for b in batches:
                ts, o = b.column("ts").to_numpy(), b.column("o").to_numpy()
                w = b.column("w").to_numpy().astype(np.int64)
                stretch = np.zeros(len(w), np.int64)
                lbl = np.zeros(len(w), np.int64)
                for leaf in np.unique(w).tolist():
                    mask = w == leaf
                    stretch[mask] = _stretches(ts[mask], o[mask], *bounds[leaf])
                    lbl[mask] = labels[leaf]
                yield pa.RecordBatch.from_arrays(
                    [pa.array(lbl), pa.array(stretch * workers + w), b.column("ts"),
                     b.column("o"), b.column("v")], schema=_STAGED_ARROW)
        leaves = dealt.filter(F.col("w").isin(self.leaves)) if sync else dealt
        # a partition per leaf; sorted by group, so a round's scan skips the others' batches
        return (leaves.mapInArrow(stage, STAGED).repartition(len(self.leaves), "lbl")
                .sortWithinPartitions("g"))

    # --- the rounds ------------------------------------------------------------------------
    def _rounds(self, sync: list, groups: set, staged: Any) -> List[Any]:
        """Run every stretch and synchronizing event; the rounds' output DataFrames."""
        workers = len(self.plan.workers)
        pos = {leaf: 0 for leaf in self.leaves}   # each leaf's stretch to run or just run
        parked = set()   # leaves that ran stretch pos[leaf], waiting for the event ending it
        outs = []
        done = 0
        while True:
            done += self._settle(sync, groups, pos, parked)
            ready = [leaf for leaf in self.leaves if leaf not in parked]
            if not ready:
                break
            outs.append(self._round(staged, [(leaf, pos[leaf] * workers + leaf)
                                             for leaf in ready]))
            parked.update(ready)
        if done != len(sync):
            raise RuntimeError(f"DGS {self.label!r}: {len(sync) - done} synchronizing events "
                               f"were never reached by their workers' leaves")
        return outs

    def _settle(self, sync: list, groups: set, pos: Dict[int, int], parked: set) -> int:
        """Park the leaves whose next stretch is empty, and handle every synchronizing event
        whose owner's leaves are all parked at it, until none is left to handle; how many
        were handled."""
        workers, bounds = len(self.plan.workers), self.bounds
        handled = 0
        while True:
            for leaf in self.leaves:
                if pos[leaf] * workers + leaf not in groups:
                    parked.add(leaf)
            due = sorted({bounds[leaf][pos[leaf]] for leaf in parked
                          if pos[leaf] < len(bounds[leaf])})
            progress = False
            for j in due:
                under = self.under[sync[j][2]]
                if all(leaf in parked and pos[leaf] < len(bounds[leaf])
                       and bounds[leaf][pos[leaf]] == j for leaf in under):
                    self._synchronize(sync[j])
                    for leaf in under:
                        pos[leaf] += 1
                        parked.discard(leaf)
                    handled += 1
                    progress = True
            if not progress:
                return handled

    def _round(self, staged: Any, todo: List[Tuple[int, int]]) -> Any:
        """One job: each (leaf, group) in `todo` runs its stretch from the leaf's state in the
        task of its leaf's partition (the states travel in the tasks' closure, which PySpark
        broadcasts when large); the end states come back, the outputs stay cached."""
        from pyspark.sql import functions as F
        states = {g: codec.dumps(self.states.pop(leaf)) for leaf, g in todo}
        out = self.batch.persist(staged.filter(F.col("g").isin(list(states)))
                                 .mapInArrow(_stretch_task(self.program, self.plan, states), ROUND))
        workers = len(self.plan.workers)
        for r in out.filter(F.col("s").isNotNull()).select("g", "s").collect():
            self.states[r["g"] % workers] = _load_state(r["s"])
        return out.filter(F.col("s").isNull()).select(*codec.ELEMENT_ARROW.names)

    # --- the driver's part: synchronizing events -------------------------------------------
    def _synchronize(self, event: Tuple[int, int, int, Any, Any]) -> None:
        """Join the states up to the event's worker, update, fork back down."""
        ts, o, w, tag, value = event
        state = self._join(w, (o, tag, value))
        update = self.program.update_of(self.plan.state_type(self.program, w))
        outs: List[Any] = []
        try:
            state = update(state, tag, value, outs.append)
        except Exception as exc:
            raise UserCodeError(str(DGSUserError(self.label, self.plan.workers[w].name,
                                                 (o, tag, value), exc))) from exc
        self.outputs.extend(WindowedValue.raw(out, ts, GLOBAL_WINDOW, NO_FIRING, 1)
                            for out in outs)
        self._fork(w, state)

    def _join(self, i: int, event: Tuple[int, Any, Any]) -> Any:
        """Worker i's state: a leaf's own, else its children's joined (for `event`)."""
        if self.plan.workers[i].is_leaf:
            return self.states.pop(i)
        left, right = (self._join(c, event) for c in self.plan.children(i))
        try:
            return self._fork_join(i).join(left, right)
        except Exception as exc:
            raise UserCodeError(str(DGSUserError(self.label, self.plan.workers[i].name, event,
                                                 exc, "join"))) from exc

    def _fork(self, i: int, state: Any) -> None:
        """Give worker i `state`: a leaf keeps it, any other forks it to its children."""
        plan = self.plan
        if plan.workers[i].is_leaf:
            self.states[i] = state
            return
        kids = plan.children(i)
        try:
            left, right = self._fork_join(i).fork(
                state, *(plan.workers[k].subtree_tags() for k in kids))
        except Exception as exc:
            raise UserCodeError(str(DGSUserError(self.label, plan.workers[i].name, None, exc,
                                                 "fork"))) from exc
        self._fork(kids[0], left)
        self._fork(kids[1], right)

    def _fork_join(self, i: int) -> Any:
        """The fork/join pair between worker i's state type and its children's."""
        plan, program = self.plan, self.program
        return program.fork_join(*(plan.state_type(program, j) for j in [i] + plan.children(i)))


def _load_state(data: bytes) -> Any:
    """A state a task sent back. An object of a class the tasks got by value (one defined in
    the driver's `__main__`) that has `__slots__` comes back with a `__dict__` as well, as
    cloudpickle rebuilds such a class without real slots, and the driver's own class has no
    `__dict__` to fill: such objects are read again with their attributes set one by one."""
    try:
        return codec.loads(data)
    except AttributeError:
        return _SlotsUnpickler(io.BytesIO(data)).load()


class _SlotsUnpickler(pickle._Unpickler):
    """Unpickles an object whose state has a `__dict__` part into one without `__dict__`
    by setting each attribute (see `_load_state`)."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def load_build(self) -> None:
        state, inst = self.stack[-1], self.stack[-2]
        if (isinstance(state, tuple) and len(state) == 2 and state[0]
                and not hasattr(inst, "__dict__")):
            self.stack[-1] = (None, {**state[0], **(state[1] or {})})
        super().load_build()
    dispatch[pickle.BUILD[0]] = load_build


def _tag(item: Any, alphabet: Any, label: str) -> Any:
    """An item's tag, checked against its trace type's alphabet."""
    if type(item) is not tuple or len(item) != 2:
        raise UserCodeError(f"DGS {label!r} takes (tag, value) items, got {item!r}")
    tag = item[0]
    if tag not in alphabet:
        raise UserCodeError(
            f"DGS {label!r}: an event's tag {tag!r} is not in the alphabet of its trace type "
            f"{sorted(map(repr, alphabet))} (item {item!r})")
    return tag


def _stretches(ts: np.ndarray, o: np.ndarray, bts: np.ndarray, bo: np.ndarray) -> np.ndarray:
    """How many of the bounds (bts, bo), sorted, come before each event (ts, o)."""
    lo = np.searchsorted(bts, ts, "left")
    hi = np.searchsorted(bts, ts, "right")
    out = lo.copy()
    for i in np.nonzero(hi > lo)[0].tolist():   # a bound at the event's time: by ordinal
        out[i] = lo[i] + np.searchsorted(bo[lo[i]:hi[i]], o[i], "left")
    return out


def _stretch_task(program: Any, plan: Any, states: Dict[int, bytes]) -> Any:
    """The function of a round's tasks: each group (a leaf's stretch) in the task's rows, its
    events sorted, run from the group's state in `states`; its outputs, then a row with its
    end state."""
    workers = len(plan.workers)
    updates = {leaf: (plan.workers[leaf].name, program.update_of(plan.state_type(program, leaf)))
               for leaf in plan.leaves}
    label = program.label

    def stretch(g: int, events: pa.Table) -> Iterator[pa.RecordBatch]:
        name, update = updates[g % workers]
        state = codec.loads(states[g])
        events = events.sort_by([("ts", "ascending"), ("o", "ascending")])
        raw, loads = WindowedValue.raw, codec.loads
        produced: List[WindowedValue] = []
        outs: List[Any] = []
        emit = outs.append
        for ts, o, v in zip(events.column("ts").to_pylist(), events.column("o").to_pylist(),
                            events.column("v").to_pylist()):
            tag, value = loads(v)
            try:
                state = update(state, tag, value, emit)
            except Exception as exc:
                raise UserCodeError(str(DGSUserError(label, name, (o, tag, value), exc))) from exc
            if outs:
                produced.extend(raw(out, ts, GLOBAL_WINDOW, NO_FIRING, 1) for out in outs)
                outs.clear()
        for b in codec.batches(produced, BATCH_ROWS):
            yield pa.RecordBatch.from_arrays(
                b.columns + [pa.nulls(b.num_rows, pa.int64()), pa.nulls(b.num_rows, pa.binary())],
                schema=_ROUND_ARROW)
        yield pa.RecordBatch.from_pylist([{"g": g, "s": codec.dumps(state)}], schema=_ROUND_ARROW)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        collect_rarely()
        rows = list(batches)
        if not rows:   # a leaf with no stretch in this round
            return
        table = pa.Table.from_batches(rows)
        groups = table.column("g")
        for g in pc.unique(groups).to_pylist():
            yield from stretch(g, table.filter(pc.equal(groups, g)))
    return task
