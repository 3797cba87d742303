"""Bundles of elements packed into one row of a streaming query's bus each, so that Spark's
per-row costs (its own rows and back, the stateful steps' pandas frames) are paid per bundle,
not per element.

A pack row has `b`, its payload, `t`, the address of its PCollection and, on the input of a
keyed stateful step, `n`: the bucket its elements' keys hash to (`bucket_of`), all of them
the same. Payloads, by their first byte:

- `E`: elements (and their pickled keys): one pickle of their columns (values, times,
  windows, panes, diffs), one call for the bundle where a row per element took one each;
  panes as `codec.pane_writer` encodes them (a `PaneInfo` pickles and unpickles through
  Python calls, several times slower), each distinct one rebuilt once;
- `C`: a schema'd bundle (`runtime.columnar.Columns`) as Arrow IPC: no Python per row;
- `P`: (key, partial accumulator) elements folded from a task's rows for a grouping
  (`runtime.columnar.Aggregator`, or a lifted combine's `runtime.lifting.PartialFold`),
  which the kernel merges (`KernelHost.partials`);
- `R`: a Kafka sink's records, (key, value, headers) each, encoded in the task that made the
  sink's input (`record_rows`), so that the driver, which writes every micro-batch's records
  in one transaction, only hands them to the producer."""
from __future__ import annotations

import io
import pickle
import zlib
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from ...runtime.columnar import Columns
from ...runtime.lifting import Tallied
from ...windowing import GLOBAL_WINDOW, NO_FIRING, IntervalWindow, WindowedValue
from . import codec

ELEMENTS, COLUMNS, PARTIALS, RECORDS = b"E", b"C", b"P", b"R"
_IPC_AT = 8   # a columnar payload's Arrow IPC starts 8 bytes in, so its buffers stay aligned
_META = b"pomset.columns"
_raw = WindowedValue.raw


def pack_elements(elements: Sequence[WindowedValue], keys: Optional[Sequence[bytes]] = None,
                  kind: bytes = ELEMENTS) -> bytes:
    """Elements (with their pickled keys) as one payload."""
    values, times, starts, ends, others, panes, diffs = codec.element_columns(
        elements, pane=codec.pane_writer())
    return _payload(kind, values, times, starts, ends, others, panes, diffs, keys)


def _payload(kind: bytes, values: list, times: list, starts: list, ends: list,
             others: Optional[list], panes: Optional[list], diffs: Optional[list],
             keys: Optional[Sequence[bytes]]) -> bytes:
    """An `E` or `P` payload of elements as columns (`unpack_elements` reads it): columns
    with nothing in them (no other windows, no panes, every diff 1) left out; `Tallied`
    partials as their accumulators and a column of their rows' times (a pickled object each
    took several times longer)."""
    tallies = None
    if kind == PARTIALS and values and all(type(v[1]) is Tallied for v in values):
        tallies = ([v[1].times for v in values], [v[1].lo for v in values],
                   [v[1].hi for v in values])
        values = [(v[0], v[1].acc) for v in values]
    if diffs is not None and all(d == 1 for d in diffs):
        diffs = None
    if others is not None and not any(others):
        others = None
    if panes is not None and not any(panes):
        panes = None
    try:
        return kind + codec.dumps((values, times, starts, ends, others, panes, diffs,
                                   None if keys is None else list(keys), tallies))
    except codec.UnpicklableError:
        for v in values:   # name the value that does not pickle, not the whole pack
            codec.dumps(v)
        raise


def unpack_elements(payload: bytes) -> Tuple[List[WindowedValue], Optional[List[bytes]]]:
    """The elements of an `E` or `P` payload, and their pickled keys (None if unkeyed)."""
    values, times, starts, ends, others, panes, diffs, keys, tallies = pickle.loads(
        memoryview(payload)[1:])
    if tallies is not None:
        values = [(k, Tallied(acc, t, lo, hi)) for (k, acc), t, lo, hi in zip(values, *tallies)]
    n = len(values)
    intervals: Dict[Tuple[int, int], Any] = {}
    windows = []
    for i, (start, end) in enumerate(zip(starts, ends)):
        if start is None:
            windows.append(GLOBAL_WINDOW if others is None or others[i] is None else others[i])
            continue
        w = intervals.get((start, end))
        if w is None:
            w = intervals[(start, end)] = IntervalWindow.from_micros(start, end)
        windows.append(w)
    if panes is None:
        panes = [NO_FIRING] * n
    else:
        pane = codec.pane_reader()
        panes = [pane(p) for p in panes]
    diffs = [1] * n if diffs is None else diffs
    return [_raw(*e) for e in zip(values, times, windows, panes, diffs)], keys


def pack_columns(c: Columns) -> bytes:
    """A columnar bundle as one payload (Arrow IPC, its shape in the schema's metadata)."""
    table = c.table.replace_schema_metadata({_META: pickle.dumps(
        (c.pane, c.keys, c.values, c.pairs), protocol=5)})
    sink = io.BytesIO()
    sink.write(COLUMNS.ljust(_IPC_AT, b"\0"))
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def unpack_columns(payload: bytes) -> Columns:
    table = pa.ipc.open_stream(pa.py_buffer(payload)[_IPC_AT:]).read_all()
    pane, keys, values, pairs = pickle.loads(table.schema.metadata[_META])
    return Columns(table.replace_schema_metadata(None), pane, keys, values, pairs)


# the version of how a checkpoint's keyed state was placed: `bucket_of`, `bucket_labels`, and
# the form a grouping keeps its state in (`stateful.KernelProcessor`: 4, a window at a time;
# 5, a shard's keys' states pickled one by one; 6, a grouping's wake-up slots in a map state
# of their own; 7, state values kept as base64 text, `stateful.TEXT`; 8, a step's entries in
# one map state, the wake-up slots a page of them to an entry, `stateful._SlotPages`; 9, a
# stateful ParDo's keys in shards and its timers in slot pages, as a grouping's; 10, a timed
# combine's records with the trigger driver's slots first, `runtime.timed_combine`)
ROUTING = 10


def bucket_of(kb: bytes, buckets: int) -> int:
    """The bucket of a stateful step's keys a key pickled as `kb` belongs to: stable on every
    machine, and independent of the state shard within the bucket (`stateful._shard`)."""
    return (zlib.crc32(kb) * 0x9E3779B1 & 0xFFFFFFFF) * buckets >> 32


def bucket_labels(count: int, partitions: int) -> List[int]:
    """The grouping value standing for each of `count` buckets in a stateful step's shuffle of
    `partitions` partitions: bucket b's lands in partition b % partitions, so buckets spread
    over the tasks (the plain numbers 0 and 1 both hash to partition 1 of 2, which ran every
    bucket in one task)."""
    found: Dict[int, List[int]] = {p: [] for p in range(partitions)}
    missing, value = count, 0
    while missing:
        p = spark_partition(value, partitions)
        if len(found[p]) < len(range(p, count, partitions)):
            found[p].append(value)
            missing -= 1
        value += 1
    return [found[b % partitions][b // partitions] for b in range(count)]


def spark_partition(value: int, partitions: int) -> int:
    """The partition Spark's hash partitioning sends a bigint grouping value to:
    pmod(Murmur3 x86 32-bit hash of the long with seed 42, partitions)."""
    h = 42
    for half in (value & 0xFFFFFFFF, (value >> 32) & 0xFFFFFFFF):
        k = _rotl(half * 0xCC9E2D51 & 0xFFFFFFFF, 15) * 0x1B873593 & 0xFFFFFFFF
        h = (_rotl(h ^ k, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= 8
    h ^= h >> 16
    h = h * 0x85EBCA6B & 0xFFFFFFFF
    h ^= h >> 13
    h = h * 0xC2B2AE35 & 0xFFFFFFFF
    h ^= h >> 16
    return (h - (1 << 32) if h & 0x80000000 else h) % partitions


def _rotl(x: int, r: int) -> int:
    return (x << r | x >> (32 - r)) & 0xFFFFFFFF


class Bus:
    """What one batch of bus rows holds for one address: elements (packs and single rows),
    columnar bundles, partial accumulators with their keys, and markers."""

    def __init__(self) -> None:
        self.elements: List[WindowedValue] = []
        self.keys: List[bytes] = []
        self.columns: List[Columns] = []
        self.partials: List[WindowedValue] = []
        self.partial_keys: List[bytes] = []
        self.records: List[Tuple[Optional[bytes], bytes, list]] = []
        self.markers: List[Any] = []

    def add_pack(self, payload: bytes) -> None:
        kind = payload[:1]
        if kind == COLUMNS:
            self.columns.append(unpack_columns(payload))
            return
        if kind == RECORDS:
            self.records.extend(pickle.loads(memoryview(payload)[1:]))
            return
        elements, keys = unpack_elements(payload)
        if kind == PARTIALS:
            self.partials.extend(elements)
            self.partial_keys.extend(keys)
        else:
            self.elements.extend(elements)
            if keys is not None:
                self.keys.extend(keys)

    def all_elements(self) -> List[WindowedValue]:
        """The elements, columnar bundles turned into elements."""
        return self.elements + [wv for c in self.columns for wv in c.elements()]


def read_bus(batch: Any) -> Bus:
    """A batch of bus rows (all of one address) as their contents."""
    import pyarrow.compute as pc
    out = Bus()
    m, b = batch.column("m"), batch.column("b")
    if m.null_count < len(m):
        out.markers = [codec.loads(x) for x in batch.filter(pc.is_valid(m)).column("m").to_pylist()]
    for payload in b.drop_null().to_pylist():
        out.add_pack(payload)
    return out


def split_stream(batch: Any) -> Tuple[List[WindowedValue], List[Any]]:
    """A streaming batch's elements (columnar bundles as elements) and markers."""
    bus = read_bus(batch)
    return bus.all_elements(), bus.markers


def rows(payloads: Sequence[bytes], markers: Sequence[Any], address: Optional[str],
         buckets: Optional[Sequence[Optional[int]]] = None, keyed: bool = True) -> pa.RecordBatch:
    """Bus rows (`codec.KEYED_STREAM`, or a source's `codec.STREAM` when not `keyed`): the
    packs, each with its bucket, then one row per marker, all at `address`."""
    n = len(payloads) + len(markers)
    schema = codec.KEYED_STREAM_ARROW if keyed else codec.STREAM_ARROW
    nulls = {f.name: pa.nulls(n, f.type) for f in schema}
    nulls["t"] = pa.array([address] * n, pa.string())
    nulls["m"] = pa.array([None] * len(payloads) + [pickle.dumps(x, protocol=5) for x in markers],
                          pa.binary())
    nulls["b"] = pa.array(list(payloads) + [None] * len(markers), pa.binary())
    if buckets is not None:
        nulls["n"] = pa.array(list(buckets) + [None] * len(markers), pa.int32())
    return pa.RecordBatch.from_arrays([nulls[f.name] for f in schema], schema=schema)


def element_rows(elements: Sequence[WindowedValue], markers: Sequence[Any], address: Optional[str],
                 keys: Optional[Sequence[bytes]] = None, buckets: Optional[int] = None,
                 kind: bytes = ELEMENTS, keyed: bool = True) -> pa.RecordBatch:
    """Elements and markers as bus rows: one pack, or with `buckets`, one pack per bucket of
    the elements' `keys`."""
    if not elements:
        return rows([], markers, address, keyed=keyed)
    if buckets is None:
        return rows([pack_elements(elements, keys, kind)], markers, address, keyed=keyed)
    parts = _by_bucket(keys, buckets)
    return rows([pack_elements([elements[i] for i in part], [keys[i] for i in part], kind)
                 for part in parts.values()], markers, address, list(parts), keyed=keyed)


def _by_bucket(keys: Sequence[bytes], buckets: int) -> Dict[int, List[int]]:
    """The positions of pickled keys, by the bucket each belongs to (`bucket_of`)."""
    parts: Dict[int, List[int]] = {}
    for i, kb in enumerate(keys):
        parts.setdefault(bucket_of(kb, buckets), []).append(i)
    return parts


def bus_rows(bus: "Bus", address: str) -> pa.RecordBatch:
    """What a `Bus` holds for `address` (columnar bundles, elements, markers), as bus rows."""
    return rows([pack_columns(c) for c in bus.columns]
                + ([pack_elements(bus.elements)] if bus.elements else []), bus.markers, address)


def record_rows(bus: "Bus", address: str, encode: Callable[[WindowedValue], tuple]) -> pa.RecordBatch:
    """A Kafka sink's records, `encode`d from the elements of its input that `bus` holds, as
    one `R` pack at `address` (with the bus's markers)."""
    records = [encode(wv) for wv in bus.all_elements()]
    return rows([RECORDS + pickle.dumps(records, protocol=5)] if records else [], bus.markers,
                address)


def partial_rows(columns: Tuple[list, list, list, list, list], address: str,
                 buckets: int) -> pa.RecordBatch:
    """Partial accumulators as columns (`Aggregator.partial_columns`: keys, accumulators,
    times, window starts and ends) as bus rows, a `P` pack per bucket of their keys: what
    `element_rows(..., kind=PARTIALS)` makes of them as elements, without making them."""
    keys, accs, times, starts, ends = columns
    kbs = [codec.dumps(k) for k in keys]
    parts = _by_bucket(kbs, buckets)
    return rows([_payload(PARTIALS, [(keys[i], accs[i]) for i in part], [times[i] for i in part],
                          [starts[i] for i in part], [ends[i] for i in part], None, None, None,
                          [kbs[i] for i in part])
                 for part in parts.values()], [], address, list(parts))


def counts_row(label: str, counts: Any, on_bus: bool = True) -> pa.RecordBatch:
    """A row telling the driver that step `label` counted `counts` (a dict) in a micro-batch,
    or a warning for the driver to issue, where the user sees it: a bus row, or
    (`on_bus=False`) a source's row (`codec.STREAM`)."""
    return rows([], [(label, counts)], codec.COUNTS, keyed=on_bus)
