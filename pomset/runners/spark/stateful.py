"""Stateful steps of a streaming query hosted in Spark's `transformWithState`: the
GroupAlsoByWindow kernel (`KernelProcessor`) and ParDos with side inputs.

Spark groups a step's rows by a hash bucket of the key, and every micro-batch each bucket also
receives a copy of every marker row of the step's inputs (`codec`): so each bucket is called
once per micro-batch, with its keys' new elements, the watermark of every upstream channel and
the processing clock. Spark's timers have one time domain per operator, which cannot serve
the kernel: it needs both an event-time and a processing-time clock, and a `TestStream`'s own
processing clock besides. Markers carry both in band, as the data-trace model's
synchronization markers do, and the bucket keeps the kernel's wake-ups itself.

State, in Spark state variables, every value pickled as base64 text (`TEXT`). A step keeps its
entries in one map state, `state` (`_Entry`), since Spark sets every state variable up again
in each task of each micro-batch; a grouping kept a key at a time and a stateful ParDo also
have `keys`: shard -> each of the bucket's keys that hash to it, its state saved
(`_ShardedStates`, the runtime's keyed store for Spark), so that a micro-batch reads and
writes a shard per round trip to the state store, not a key, and unpickles only the keys it
touches (of a grouping's, only the windows it reads, `triggers.saved_state`). In `state`: for
a windowed combine under the timed watermark trigger, an entry per window holding the table of
its keys' records (`runtime.timed_combine`); the bucket's `meta`: what its markers said
(`pomset.runtime.markers.Channels`), the output watermark, and the host's clocks and timer
service's saved form (`runtime.timers`: timers and holds, checked lazily against the key's
state when due), its slots in pages of their own (`_SlotPages`), read only when a micro-batch
may fire them, so that the meta stays small however many windows wait; a side-input step's
waiting elements, a template step's snapshot.

Each micro-batch a bucket moves its processing clock to the latest its markers show, takes its
elements at that time, fires the processing-time wake-ups now due, then moves the watermark
(firing event-time wake-ups in time order), as the local runner does. On a real clock it then
moves its processing clock to the wall clock's time, so that what fell due while the
micro-batch ran fires in it, and a grouping waits for the processing-time wake-ups due within
half a trigger interval (`KernelProcessor._settle`), which the next micro-batch would fire a
whole micro-batch late, loading and saving their keys' state again. It emits its panes and
one marker with its output watermark (the minimum of its input watermark and its holds, never
going back).
"""
from __future__ import annotations

import base64
import pickle
import reprlib
import time
import zlib
from operator import itemgetter
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

import pyarrow as pa
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
# pandas is imported where frames are handled: at each query's start Spark unpickles these
# processors in a Python process of its own that only calls `init` (transformWithState's
# driver worker, one per stateful step), which should not pay for importing pandas

from ...runtime import combine_lifecycle
from ...runtime.collector import collect_rarely
from ...runtime.combine_lifecycle import combine_fns_of, with_own_combine_fns
from ...runtime.elementwise import DoFnRunner
from ...runtime.kernel_host import KernelHost
from ...runtime import timed_combine
from ...runtime.stateful_dofn import StatefulDoFnHost
from ...runtime.timed_combine import TimedCombineHost
from ...runtime.metrics import emitted_key
from ...sdk.errors import CheckpointError
from ...sdk.user_metrics import USER
from ...runtime.markers import ChannelMarker, Channels, Marker, MarkerRange
from ...runtime.side_inputs import SideInputBuffer
from ...runtime.watermarks import output_watermark
from ...triggers.saved_state import state_from_bytes, state_to_bytes
from ...windowing import MAX_MICROS, MIN_MICROS, now_micros
from . import codec, packs

# Spark hands pandas frames over with nullable int columns as floats, which cannot hold every
# µs time exactly: the plan fills those nulls with 0 before the stateful step (no element has a
# null time or diff; a window start equal to its end stands for "no interval window").
FILLED = ("ts", "ws", "we", "d", "n")
# a stateful step's input rows also carry the partition of the task that made them
TASK = "task"


def _with_nulls(frame: Any) -> Any:
    """Bus rows passed through as they came: their nulls back in place of the filled zeros."""
    import pandas as pd
    frame = frame.astype({c: "Int32" if c in ("d", "n") else "Int64" for c in FILLED})
    no_interval = frame["ws"] == frame["we"]
    frame.loc[no_interval, ["ws", "we"]] = pd.NA
    marker = frame["m"].notna()
    frame.loc[marker, ["ts", "d"]] = pd.NA
    return frame


class _Meta(Channels):
    """A bucket's channels (`Channels`: upstream watermarks, clock, marker range), its input
    and output watermarks and, for a grouping, its pending wake-ups and holds."""

    def __init__(self) -> None:
        super().__init__()
        self.wm = MIN_MICROS
        self.out_wm = MIN_MICROS
        # a grouping's or stateful ParDo's saved clocks and timers (`save_queues`)
        self.queues: Optional[Dict[str, Any]] = None


class _Host(StatefulProcessor):
    """A stateful node hosted per bucket on the bus (see `streaming`): each micro-batch it takes
    its inputs' rows (elements by input, and markers), updates its meta, and emits its outputs
    with one marker of its own each, and every other row as it came (an input's row that a
    later stage also reads once: from the bucket its key sent it to, or from bucket 0)."""

    def __init__(self, label: str, ins: List[str], channels: List[List[str]],
                 outs: Dict[Optional[str], str], retained: List[str], out_channel: str) -> None:
        self.label, self.channels, self.outs = label, channels, outs
        self.inputs: Dict[str, List[int]] = {}
        for index, address in enumerate(ins):
            self.inputs.setdefault(address, []).append(index)
        self.retained = set(retained)
        self.out_channel = out_channel
        self.labels: Dict[int, int] = {}   # the grouping value of each bucket -> the bucket
        # the element-wise stage after this step, run on its rows in the same task: a
        # function of an iterator of bus row batches or {address: `packs.Bus`} (its outputs)
        self.after: Optional[Callable[[Iterator[Any]], Iterator[pa.RecordBatch]]] = None

    def init(self, handle: StatefulProcessorHandle) -> None:
        collect_rarely()
        self.entries = handle.getMapState("state", "k string", TEXT)
        self.meta = _Entry(self.entries, "meta")

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        """`rows`: pandas frames of the bucket's bus rows; yields frames of bus rows: what the
        step emits, or with `after` (the element-wise stage after this step, fused into it),
        what that stage makes of it, a few batches to a frame (`frames`)."""
        import pandas as pd
        schema = codec.KEYED_STREAM_ARROW
        made = (pa.RecordBatch.from_pandas(x, schema=schema, preserve_index=False)
                if isinstance(x, pd.DataFrame) else x for x in self._produce(key, rows))
        try:
            if self.after is None:
                yield from frames(b for item in made for b in (
                    [codec.made_by(self.label, "its output", packs.bus_rows, bus, address)
                     for address, bus in item.items()]
                    if isinstance(item, dict) else [item]))
            else:
                yield from frames(self.after(made))
        except codec.UnpicklableError as e:   # its state (`_stored`)
            raise codec.unpicklable(self.label, "", e) from None

    def _produce(self, key: Any, rows: Iterator[Any]) -> Iterator[Any]:
        """The step over the bucket's rows: the rows it passes on (pandas frames, as they
        came), its outputs with their marker ({address: `packs.Bus`}), and its counts (a
        bus row batch)."""
        bucket = self.labels[int(key[0])]
        taken: List[Tuple[int, int, bytes]] = []   # (task upstream, input index, pack)
        markers: List[Tuple[int, Marker]] = []
        names = codec.KEYED_STREAM_ARROW.names
        for frame in rows:
            kept = []
            for i, (t, m, b, task) in enumerate(zip(frame["t"].tolist(), frame["m"].tolist(),
                                                    frame["b"].tolist(), frame[TASK].tolist())):
                indices = self.inputs.get(t)
                own = indices is not None and indices[0] == 0 and m is None and self.routed(t)
                if indices is None or (t in self.retained and (own or bucket == 0)):
                    kept.append(i)
                if indices is None:
                    continue
                if m is not None:
                    marker = codec.loads(m)
                    markers += [(index, marker) for index in indices]
                    continue
                for index in indices:
                    if index == 0 and not own and bucket != 0:
                        continue   # a main element sent to every bucket (also a side input)
                    taken.append((task, index, b))
            if kept:
                yield _with_nulls(frame.iloc[kept][names])
        inputs: Dict[int, packs.Bus] = {}
        # the packs of the tasks upstream one task after another, each task's in its order: a
        # Kafka partition two tasks read (`stream_sources.spread`) in its order
        for _, index, b in sorted(taken, key=itemgetter(0)):
            into = inputs.get(index)
            if into is None:
                into = inputs[index] = packs.Bus()
            into.add_pack(b)
        meta = _loaded(self.meta) or _Meta()
        outputs = self.step(meta, inputs, markers)
        self.meta.update((_stored(meta),))
        progress = ChannelMarker(f"{self.out_channel}#{bucket}", meta.out_wm, meta.clock)
        mark = [progress, *codec.range_markers(self.marker_range(meta))]
        made = {}
        for tag, address in self.outs.items():
            bus = made[address] = packs.Bus()
            bus.elements, bus.markers = outputs.get(tag, []), list(mark)
        yield made
        counts = self.counts()
        counts.update((emitted_key(tag), len(out)) for tag, out in outputs.items() if out)
        if any(counts.values()):
            yield packs.counts_row(self.label, counts)

    def counts(self) -> Dict[str, int]:
        """What the last micro-batch counted (late and dropped elements), for the metrics."""
        return {}

    def marker_range(self, meta: _Meta) -> MarkerRange:
        """The marker range this host sends on downstream: that of the typed edges upstream."""
        return meta.range

    def routed(self, address: str) -> bool:
        """Whether the main input's elements at `address` are sent to one bucket (by key)."""
        return True

    def step(self, meta: _Meta, inputs: Dict[int, packs.Bus],
             markers: List[Tuple[int, Marker]]) -> Dict[Optional[str], list]:
        """The outputs by tag of one micro-batch (its inputs by index), updating `meta`."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class KernelProcessor(_Host):
    """One grouping's kernel per bucket of keys, its state in Spark state variables: a
    windowed combine under the timed watermark trigger held a window at a time
    (`runtime.timed_combine`), any other grouping as `KernelHost` keeps it, a key at a time."""

    def __init__(self, label: str, strategy: Any, transform: Any, ins: List[str],
                 channels: List[List[str]], outs: Dict[Optional[str], str], retained: List[str],
                 out_channel: str, real_clock: bool, late_tag: Optional[str] = None,
                 settle_s: float = 0.0) -> None:
        super().__init__(label, ins, channels, outs, retained, out_channel)
        self.strategy, self.transform, self.late_tag = strategy, transform, late_tag
        self.real_clock, self.settle_us = real_clock, int(settle_s * 1e6)
        self.by_window = timed_combine.fits(strategy, transform.reducer(), late_tag is not None)
        self.combine_fns: List[Any] = []

    def init(self, handle: StatefulProcessorHandle) -> None:
        super().init(handle)
        if not self.by_window:   # read whole when a micro-batch needs most shards: alone
            self.keys = handle.getMapState("keys", "shard int", TEXT)
        mine = with_own_combine_fns(self.transform)   # this task's copies, set up for it
        self.reducer, self.combine_fns = mine.reducer, combine_fns_of(mine)
        combine_lifecycle.acquire(self.combine_fns)

    def close(self) -> None:
        combine_lifecycle.release(self.combine_fns)

    def step(self, meta: _Meta, inputs: Dict[int, packs.Bus],
             markers: List[Tuple[int, Marker]]) -> Dict[Optional[str], list]:
        """One micro-batch as one step of the grouping's host, its state loaded from and
        saved to this bucket's state variables: partial accumulators folded upstream
        (`packs.PARTIALS`) merge as combiner lifting does, elements add one by one. On a
        real clock the step ends at the wall clock's time, so a processing-time pane that
        fell due while the micro-batch ran fires in it rather than a micro-batch later."""
        saved = meta.queues
        meta.observe(markers)
        main = inputs.get(0) or packs.Bus()
        out: list = []
        if self.by_window:
            host: Any = TimedCombineHost(self.strategy, self.reducer(), self.label,
                                         _WindowTables(self.entries))
            if saved is not None:
                host.restore_meta(saved)
            host.processing_time(meta.clock, out)
            if main.partials:
                host.partials(main.partials, out)
            if main.elements:
                host.elements(main.elements, out)
            save = host.save_meta
        else:
            states = _ShardedStates(self.keys, state_to_bytes, state_from_bytes)
            host = KernelHost(self.strategy, self.reducer(), self.label, states,
                              keep_late=self.late_tag is not None,
                              slot_store=_SlotPages(self.entries))
            if saved is not None:
                host.restore_queues(saved, key_of=states.key)
            host.processing_time(meta.clock, out)
            if main.partials:
                host.partials(main.partials, out,
                              keys=[states.key(kb) for kb in set(main.partial_keys)])
            if main.elements:
                host.elements(main.elements, out, keys=[states.key(kb) for kb in set(main.keys)])
            save = lambda: host.save_queues(key_form=states.kb_of.__getitem__)   # noqa: E731
        self.host = host
        host.watermark(meta.input_watermark(0, self.channels[0]), out)
        if self.real_clock:   # what fell due while the micro-batch ran fires in it
            host.processing_time(now_micros(), out)
            self._settle(host, out)
        meta.wm, meta.out_wm = host.input_watermark, host.output_watermark()
        host.end_step()
        meta.queues = save()
        if self.late_tag is None:
            return {None: out}
        return {None: out, self.late_tag: host.take_late()}

    def _settle(self, host: Any, out: list) -> None:
        """Fire the processing-time wake-ups falling due within `settle_us` of now, waiting
        for them, rather than leaving them to the next micro-batch, which would also load and
        save their keys' state again."""
        due = host.next_processing_timer()
        if due is None or due - now_micros() > self.settle_us:
            return
        time.sleep(max(0, due - now_micros()) / 1e6)
        host.processing_time(max(due, now_micros()), out)

    def counts(self) -> Dict[str, int]:
        c = self.host.counters
        return {"late": c.late, "dropped": c.dropped_expired + c.dropped_closed}


class StatefulDoFnProcessor(_Host):
    """A stateful ParDo per bucket of keys: the runtime's stateful DoFn host, its keys' cells
    and timer settings kept a key at a time in shards (`_ShardedStates`) and its timers in
    slot pages (`_SlotPages`), as a grouping keeps its kernel's: a micro-batch reads and
    writes the keys it touches and the slots it may fire, not the bucket's whole state."""

    def __init__(self, label: str, transform: Any, allowed_lateness_us: int, ins: List[str],
                 channels: List[List[str]], outs: Dict[Optional[str], str], retained: List[str],
                 out_channel: str, real_clock: bool) -> None:
        super().__init__(label, ins, channels, outs, retained, out_channel)
        self.transform, self.lateness, self.real_clock = transform, allowed_lateness_us, real_clock

    def init(self, handle: StatefulProcessorHandle) -> None:
        super().init(handle)
        self.keys = handle.getMapState("keys", "shard int", TEXT)
        self.host = StatefulDoFnHost(self.transform, list(self.outs), self.label, self.lateness)
        self.host.runner.setup()

    def step(self, meta: _Meta, inputs: Dict[int, packs.Bus],
             markers: List[Tuple[int, Marker]]) -> Dict[Optional[str], list]:
        host = self.host
        states = _ShardedStates(self.keys, _pickled, _unpickled)
        host.reset(states, _SlotPages(self.entries))
        if meta.queues is not None:
            host.restore_queues(meta.queues, key_of=states.key)
        meta.observe(markers)
        outs: Dict[Optional[str], list] = {tag: [] for tag in self.outs}
        host.processing_time(meta.clock, outs)
        main = inputs.get(0)
        if main is not None and main.elements:
            host.elements(main.elements, outs, keys=[states.key(kb) for kb in set(main.keys)])
        host.watermark(meta.input_watermark(0, self.channels[0]), outs)
        if self.real_clock:   # what fell due while the micro-batch ran fires in it
            host.processing_time(now_micros(), outs)
        meta.wm, meta.out_wm = host.wm, host.output_watermark()
        host.end_step()
        meta.queues = host.save_queues(key_form=states.kb_of.__getitem__)
        return outs

    def counts(self) -> Dict[str, Any]:
        """The elements dropped (their window had expired) and the user metrics the DoFn
        updated in the last micro-batch."""
        out: Dict[str, Any] = {"dropped": self.host.dropped}
        self.host.dropped = 0
        if self.host.runner.metrics:
            out[USER] = self.host.runner.metrics.take()
        return out

    def close(self) -> None:
        self.host.runner.teardown()


class SideInputProcessor(_Host):
    """A ParDo with side inputs, per bucket of its main input: side elements (sent to every
    bucket) are kept per side window; a main element waits until the side windows it reads
    are complete (each side input's watermark past their end), as on the local runner."""

    def __init__(self, label: str, transform: Any, sides: List[Any],
                 outs: Dict[Optional[str], str], ins: List[str], channels: List[List[str]],
                 retained: List[str], out_channel: str, schema: Optional[Any]) -> None:
        super().__init__(label, ins, channels, outs, retained, out_channel)
        self.transform, self.sides, self.schema = transform, sides, schema

    def routed(self, address: str) -> bool:
        return len(self.inputs[address]) == 1

    def init(self, handle: StatefulProcessorHandle) -> None:
        super().init(handle)
        self.data = _Entry(self.entries, "data")
        self.runner = DoFnRunner(self.transform, list(self.outs), self.label, self.schema)
        self.runner.setup()

    def step(self, meta: _Meta, inputs: Dict[int, packs.Bus],
             markers: List[Tuple[int, Marker]]) -> Dict[Optional[str], list]:
        buffer = SideInputBuffer(self.transform, self.sides)
        saved = _loaded(self.data)
        if saved is not None:
            buffer.restore(saved)
        for j in range(len(self.sides)):
            buffer.add_side(j, _elements(inputs, j + 1))
        meta.observe(markers)
        side_wms = [meta.input_watermark(j + 1, self.channels[j + 1]) for j in range(len(self.sides))]
        meta.wm = max(meta.wm, meta.input_watermark(0, self.channels[0]))
        ready = buffer.ready(_elements(inputs, 0), side_wms)
        outputs: Dict[Optional[str], list] = {}
        if ready:
            outputs = self.runner.process(ready, True, buffer.args)
        self.data.update((_stored(buffer.state()),))
        # as the local runner: the minimum over all inputs and the elements still waiting
        meta.out_wm = output_watermark(meta.out_wm, [meta.wm] + side_wms + [buffer.hold()])
        return outputs

    def counts(self) -> Dict[str, Any]:
        """The user metrics the DoFn updated in the last micro-batch."""
        return {USER: self.runner.metrics.take()} if self.runner.metrics else {}

    def close(self) -> None:
        self.runner.teardown()


FRAME_BYTES = 64 << 20   # well within the 2 GiB a frame's binary column holds as Arrow


def frames(batches: Iterable[pa.RecordBatch], limit: int = FRAME_BYTES) -> Iterator[Any]:
    """Bus row batches as the pandas frames `transformWithState` takes, in order: together, a
    frame per `limit` bytes of them, the empty ones left out. PySpark converts each frame to
    Arrow column by column, a millisecond or more a frame however few its rows, and a step
    makes about ten batches, several of them empty."""
    held: List[pa.RecordBatch] = []
    size = 0
    for b in batches:
        if not b.num_rows:
            continue
        held.append(b)
        size += b.nbytes
        if size >= limit:
            yield _frame(held)
            held, size = [], 0
    if held:
        yield _frame(held)


def _frame(batches: List[pa.RecordBatch]) -> Any:
    import pandas as pd
    # int columns with nulls stay exact integers in pandas (not floats)
    nullable = {pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype()}
    return pa.Table.from_batches(batches).to_pandas(types_mapper=nullable.get)


# A state value's column: base64 text, not binary. Spark hands a binary value back to Python
# pickled through a Java string a byte at a time (razorvine's `bytearray` form, widened to UTF-16
# by any byte over 127); ASCII text it copies.
TEXT = "v string"


def _text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _data(text: str) -> bytes:
    return base64.b64decode(text)


def _stored(value: Any) -> str:
    """A state value as kept: pickled, as text; `codec.UnpicklableError` when it cannot be."""
    try:
        data = pickle.dumps(value, protocol=5)
    except Exception as e:
        raise codec.cannot_pickle(f"its state {reprlib.repr(value)}", e) from None
    return _text(data)


def _restored(text: str) -> Any:
    return pickle.loads(_data(text))


def _pickled(value: Any) -> bytes:
    return pickle.dumps(value, protocol=5)


def _unpickled(data: bytes) -> Any:
    return pickle.loads(data)


def _loaded(state: Any) -> Any:
    """The object pickled in a value state, or None: one round trip to the state store."""
    row = state.get()
    return None if row is None else _restored(row[0])


def _elements(inputs: Dict[int, packs.Bus], index: int) -> list:
    """The elements of input `index` in a micro-batch."""
    bus = inputs.get(index)
    return bus.all_elements() if bus is not None else []


class _Entry:
    """One entry of a stateful step's `state` map state, used as a value state: a step keeps
    everything in that one state variable (a grouping's key shards, read whole at times, in
    one more), since Spark sets every state variable up again in each task of each
    micro-batch, with code generation and an analyzer pass."""

    def __init__(self, entries: Any, name: str) -> None:
        self.map, self.key = entries, (name,)

    def get(self) -> Any:
        return self.map.getValue(self.key)

    def update(self, row: Tuple[str]) -> None:
        self.map.updateValue(self.key, row)


class _WindowTables:
    """A bucket's windows' tables in its `state` map state, one entry per window (keyed by
    the pickled window), one round trip each."""

    def __init__(self, entries: Any) -> None:
        self.map = entries

    def load(self, window: Any) -> Dict[Any, list]:
        row = self.map.getValue(_window_key(window))
        return {} if row is None else _restored(row[0])

    def save(self, tables: Dict[Any, Dict[Any, list]]) -> None:
        for window, table in tables.items():
            if table:
                self.map.updateValue(_window_key(window), (_stored(table),))
            else:
                self.map.removeKey(_window_key(window))


def _window_key(window: Any) -> Tuple[str]:
    return ("w" + _text(codec.dumps(window)),)


class _ShardedStates:
    """A bucket's keys' states in its `keys` map state, a shard per round trip: shard -> {the
    key pickled: its `KeyState` saved}, a key in shard `_shard(its pickled bytes)`. Keys are
    known by the pickled bytes their rows and the saved queues carry (`key`), so a key always
    finds its shard. A step restores the states of the keys it asks for and saves back those
    it touched: the rest of a shard it reads stays bytes, and so does every window of a
    restored key that the kernel does not read (`triggers.saved_state`), so its object work
    follows the keys and windows a step touches, not the bucket's whole state (which a long
    allowed lateness grows). A key's state goes to bytes by `to_bytes` and back by
    `from_bytes` (a grouping's `KeyState`, a stateful ParDo's cells and timers)."""

    def __init__(self, keys: Any, to_bytes: Callable[[Any], bytes],
                 from_bytes: Callable[[bytes], Any]) -> None:
        self.map, self.to_bytes, self.from_bytes = keys, to_bytes, from_bytes
        self.states: Dict[Any, Any] = {}
        self.kb_of: Dict[Any, bytes] = {}
        self.key_of: Dict[bytes, Any] = {}
        self.shard_of: Dict[Any, int] = {}
        self.shards: Dict[int, Dict[bytes, bytes]] = {}   # the shards read, as bytes per key
        self.present: Set[Any] = set()   # keys whose state, or its absence, `states` shows
        self.dirty: Set[Any] = set()

    def key(self, kb: bytes) -> Any:
        """The key pickled as `kb`."""
        key = self.key_of.get(kb)
        if key is None:
            key = self.key_of[kb] = codec.loads(kb)
            self.kb_of[key] = kb
            self.shard_of[key] = _shard(kb)
        return key

    def ensure(self, keys: Any) -> None:
        present, shard_of, shards = self.present, self.shard_of, self.shards
        wanted = [key for key in keys if key not in present]
        if len({shard_of[key] for key in wanted} - shards.keys()) > LOAD_ALL:
            # the whole map in a few round trips, not one per shard
            for (shard,), row in self.map.iterator():
                shards.setdefault(shard, _restored(row[0]))
            for shard in range(SHARDS):
                shards.setdefault(shard, {})
        states, kb_of = self.states, self.kb_of
        for key in wanted:
            shard = shard_of[key]
            held = shards.get(shard)
            if held is None:
                row = self.map.getValue((shard,))
                held = shards[shard] = {} if row is None else _restored(row[0])
            data = held.get(kb_of[key])
            if data is not None:
                states[key] = self.from_bytes(data)
            present.add(key)

    def touch(self, key: Any) -> None:
        self.dirty.add(key)

    def loaded(self, key: Any) -> bool:
        return key in self.present

    def save(self) -> None:
        states, shards, changed = self.states, self.shards, set()
        for key in self.dirty:
            shard = self.shard_of[key]
            state = states.get(key)
            if state is not None:
                try:
                    shards[shard][self.kb_of[key]] = self.to_bytes(state)
                except Exception as e:
                    raise codec.cannot_pickle(f"its state of key {reprlib.repr(key)}", e) from None
            else:
                shards[shard].pop(self.kb_of[key], None)
            changed.add(shard)
        for shard in changed:
            if shards[shard]:
                self.map.updateValue((shard,), (_stored(shards[shard]),))
            else:
                self.map.removeKey((shard,))
        self.dirty.clear()


PAGE_SLOTS = 16   # timer slots (of `timers.SLOT_US`) to a saved page, `_SlotPages`


class _SlotPages:
    """A grouping's saved wake-up slots (`KernelHost`'s `SlotStore`) in its `state` map state,
    `PAGE_SLOTS` slots to a page: "domain:page:chunk" -> {slot: its wake-ups pickled}, the
    step's meta keeping how many chunks each slot's page has. A step adds one chunk to each
    page it has new wake-ups for, without reading it; reading a slot that may be due reads its
    page's chunks once, and at the end of the step the page is written back as one chunk of
    what it still holds and what the step added (or removed, when that is nothing). Each
    state request costs Spark some code generation, so the unit is a page, not a slot: a
    micro-batch whose sessions end over an hour of event time (and expire a day later) wrote
    some 150 slot chunks, and read 120 more, per bucket."""

    def __init__(self, entries: Any, page_slots: int = PAGE_SLOTS) -> None:
        self.map, self.size = entries, page_slots
        self.pages: Dict[Tuple[str, int], Dict[int, bytes]] = {}   # the pages read, unread slots
        self.counts: Dict[Tuple[str, int], int] = {}   # their chunks before this step

    def read(self, domain: str, slot: int, chunks: int) -> bytes:
        page = (domain, slot // self.size)
        held = self.pages.get(page)
        if held is None:
            held = self.pages[page] = {}
            self.counts[page] = chunks
            for c in range(chunks):
                row = self.map.getValue(_page_key(domain, page[1], c))
                if row is None:
                    raise CheckpointError(
                        f"the saved {domain}-time wake-ups of slots {page[1] * self.size}-"
                        f"{(page[1] + 1) * self.size - 1} lack chunk {c} of {chunks}: the "
                        f"checkpoint's state is incomplete")
                for s, data in _restored(row[0]).items():
                    held[s] = held.get(s, b"") + data
        data = held.pop(slot, None)
        if data is None:
            raise CheckpointError(f"the saved {domain}-time wake-ups of slot {slot} are missing "
                                  f"from its page's {chunks} chunks: the checkpoint's state is "
                                  f"incomplete")
        return data

    def save(self, domain: str, unread: Dict[int, int], new: Dict[int, bytes]) -> Dict[int, int]:
        size = self.size
        chunks: Dict[int, int] = {}   # page -> its chunks now
        added: Dict[int, Dict[int, bytes]] = {}
        for slot, data in new.items():
            added.setdefault(slot // size, {})[slot] = data
        for (d, page), held in self.pages.items():
            if d != domain:
                continue
            kept = {**held, **{slot: held.get(slot, b"") + data
                               for slot, data in added.pop(page, {}).items()}}
            old = self.counts[d, page]
            if kept:
                self.map.updateValue(_page_key(domain, page, 0), (_stored(kept),))
                chunks[page] = 1
            for c in range(1 if kept else 0, old):
                self.map.removeKey(_page_key(domain, page, c))
        for slot, c in unread.items():
            chunks.setdefault(slot // size, c)
        for page, data in added.items():
            c = chunks.get(page, 0)
            self.map.updateValue(_page_key(domain, page, c), (_stored(data),))
            chunks[page] = c + 1
        return {slot: chunks[slot // size] for slot in [*unread, *new]}


def _page_key(domain: str, page: int, chunk: int) -> Tuple[str]:
    """A wake-up page's chunk's key in the `state` map state."""
    return (f"{domain}:{page}:{chunk}",)


SHARDS = 64
LOAD_ALL = 8   # more missing shards than this are read by iterating over the map


def _shard(kb: bytes) -> int:
    """Which of a bucket's state shards holds the key pickled as `kb` (stable everywhere)."""
    return zlib.crc32(kb) % SHARDS


class TemplateProcessor(_Host):
    """A keyed template step per bucket of keys (each bucket one instance of the step's
    `Deployment`, its state a snapshot in a Spark state variable). Every bucket sees every
    marker, and also the range rows (`MarkerRange`s) that typed declarations,
    template steps and the step's own keying task send to all buckets: so every instance
    passes the markers of the whole input's range, as a single instance would; it sends its
    own range on."""

    def __init__(self, label: str, step: Any, sort: Any, ins: List[str],
                 channels: List[List[str]], out: str, retained: List[str],
                 out_channel: str) -> None:
        super().__init__(label, ins, channels, {None: out}, retained, out_channel)
        self.template_step, self.sort = step, sort
        self.late = 0
        self.span = MarkerRange()

    def init(self, handle: StatefulProcessorHandle) -> None:
        super().init(handle)
        self.deployment = _Entry(self.entries, "deployment")

    def step(self, meta: _Meta, inputs: Dict[int, packs.Bus],
             markers: List[Tuple[int, Marker]]) -> Dict[Optional[str], list]:
        from ...runtime.deployment import Deployment, as_elements, as_items
        d = Deployment(self.template_step, self.label, parallelism=1, sort=self.sort)
        finished = False
        saved = _loaded(self.deployment)
        if saved is not None:
            snapshot, finished = saved
            d.restore(snapshot)
        late = d.late
        meta.observe(markers)
        d.hint([meta.range])
        meta.wm = max(meta.wm, meta.input_watermark(0, self.channels[0]))
        out = d.receive(as_items(_elements(inputs, 0)))
        if meta.wm >= MAX_MICROS and not finished:
            out += d.finish()
            finished = True
        elif not finished:
            out += d.advance(meta.wm)
        self.span = d.span()
        hold = d.hold()
        meta.out_wm = output_watermark(meta.out_wm, [meta.wm] + ([] if hold is None else [hold]))
        self.late = d.late - late
        self.deployment.update((_stored((d.snapshot(), finished)),))
        return {None: as_elements(out)}

    def counts(self) -> Dict[str, int]:
        return {"late": self.late}

    def marker_range(self, meta: _Meta) -> MarkerRange:
        return meta.range | self.span
