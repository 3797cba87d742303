"""Elements as Arrow rows, the form a PCollection takes in a Spark DataFrame:
`v` (the pickled value), `ts` (event time, µs), the window as `ws`/`we` (start and end µs of
an interval window, so Spark can compute fixed and sliding windows itself) or `wx` (any other
window, pickled; all three null for the global window), `p` (the pane: null for none, else 19
bytes), `d` (the diff); a keyed form adds `k`, the pickled key Spark groups by, and a tagged
form `t`, the output tag of a multi-output step. A streaming query's rows (`STREAM`) carry
`t`, `m`, `b` and `n` on every row: a marker row has `m`, a pickled
`pomset.runtime.markers.Marker` (a channel's watermark and clock, or a typed edge's marker
range, carried downstream); a pack row has `b`, a bundle of elements, and `n`, its bucket
(`packs`); every other column of theirs is null.

Values pickle with the standard pickler; what refers to `__main__` (classes defined in the
pipeline's script) or cannot be pickled by reference (lambdas) is pickled by value with
cloudpickle, so Python workers, whose `__main__` differs, can read it."""
from __future__ import annotations

import pickle
import reprlib
import struct
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, TypeVar

import pyarrow as pa
from pyspark import cloudpickle

from ...runtime.markers import MarkerRange
from ...sdk.errors import UserCodeError
from ...windowing import (GLOBAL_WINDOW, NO_FIRING, IntervalWindow, PaneInfo, PaneTiming,
                          WindowedValue)

ELEMENT = "v binary, ts long, ws long, we long, wx binary, p binary, d int"
KEYED = "k binary, " + ELEMENT
TAGGED = ELEMENT + ", t string"

_ARROW = [pa.field("v", pa.binary()), pa.field("ts", pa.int64()), pa.field("ws", pa.int64()),
          pa.field("we", pa.int64()), pa.field("wx", pa.binary()), pa.field("p", pa.binary()),
          pa.field("d", pa.int32())]
ELEMENT_ARROW = pa.schema(_ARROW)
KEYED_ARROW = pa.schema([pa.field("k", pa.binary())] + _ARROW)
TAGGED_ARROW = pa.schema(_ARROW + [pa.field("t", pa.string())])
STREAM = TAGGED + ", m binary, b binary, n int"
KEYED_STREAM = "k binary, " + STREAM
STREAM_ARROW = pa.schema(_ARROW + [pa.field("t", pa.string()), pa.field("m", pa.binary()),
                                   pa.field("b", pa.binary()), pa.field("n", pa.int32())])
KEYED_STREAM_ARROW = pa.schema([pa.field("k", pa.binary())] + list(STREAM_ARROW))
ARROW = {ELEMENT: ELEMENT_ARROW, KEYED: KEYED_ARROW, TAGGED: TAGGED_ARROW}

raw = WindowedValue.raw
T = TypeVar("T")


class UnpicklableError(ValueError):
    """A value that cannot be pickled to go between Spark's tasks (nested too deeply, or
    holding a lock, a generator, a connection); the message shows the value and says why. The
    step that made it names itself around it (`unpicklable`)."""


def dumps(obj: Any) -> bytes:
    """Bytes a Python worker can load: by reference where that works there, else by value;
    `UnpicklableError` when neither works."""
    try:
        data = pickle.dumps(obj, protocol=5)
    except Exception:
        return _by_value(obj)
    if b"__main__" in data:
        return _by_value(obj)
    return data


def _by_value(obj: Any) -> bytes:
    try:
        return cloudpickle.dumps(obj, protocol=5)
    except Exception as e:
        raise cannot_pickle(reprlib.repr(obj), e) from None


def cannot_pickle(what: str, e: Exception) -> UnpicklableError:
    """The error for `what` (a value, shortened), whose pickling raised `e`, saying why."""
    if isinstance(e, RecursionError) or "recursion" in str(e):
        why = "it is nested too deeply (past Python's recursion limit)"
    else:
        why = f"{type(e).__name__}: {e}"
    return UnpicklableError(f"{what} cannot be pickled: {why}")


def unpicklable(step: str, what: str, e: UnpicklableError) -> UserCodeError:
    """The error of step `step` whose `what` (its output, an accumulator; "" when `e` says)
    could not be pickled."""
    return UserCodeError(f"step {step!r}: {what}{' ' if what else ''}{e} (what Spark passes "
                         f"between tasks or keeps as state must pickle)")


def made_by(step: str, what: str, make: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`make(*args, **kwargs)`, which pickles step `step`'s `what`; when that cannot be
    pickled, the error naming the step (`unpicklable`)."""
    try:
        return make(*args, **kwargs)
    except UnpicklableError as e:
        raise unpicklable(step, what, e) from None


loads = pickle.loads


_PANE = struct.Struct("<??bqq")
_TIMINGS = list(PaneTiming)


def pane_bytes(p: PaneInfo) -> bytes:
    return _PANE.pack(p.is_first, p.is_last, _TIMINGS.index(p.timing), p.index,
                      p.nonspeculative_index)


def pane_of(b: bytes) -> PaneInfo:
    first, last, timing, index, nonspec = _PANE.unpack(b)
    return PaneInfo(first, last, _TIMINGS[timing], index, nonspec)


class _Memo(dict):
    """Bytes of shared objects (windows, panes) by identity, within one batch."""

    def __init__(self, to_bytes: Any) -> None:
        super().__init__()
        self.to_bytes = to_bytes

    def bytes_of(self, obj: Any) -> bytes:
        b = self.get(id(obj))
        if b is None:
            b = self[id(obj)] = self.to_bytes(obj)
        return b


def key_writer() -> Callable[[Any], bytes]:
    """Keys as `dumps` bytes, a str key pickled once (equal strs pickle alike, and a grouping
    downstream of a fan-out sees the same few keys over and over): for one task."""
    memo: Dict[str, bytes] = {}

    def write(key: Any) -> bytes:
        if type(key) is not str:
            return dumps(key)
        b = memo.get(key)
        if b is None:
            b = memo[key] = dumps(key)
        return b
    return write


def pane_writer() -> Callable[[PaneInfo], bytes]:
    """Panes as bytes (`pane_bytes`), each distinct pane object encoded once: for one batch."""
    return _Memo(pane_bytes).bytes_of


def pane_reader() -> Callable[[Optional[bytes]], PaneInfo]:
    """The panes of `pane_writer`'s bytes (None: no firing), each distinct one built once:
    for one batch."""
    return _Shared(pane_of, NO_FIRING)


def same(x: Any) -> Any:
    """Its argument, as it is."""
    return x


def element_columns(elements: Sequence[WindowedValue], value: Any = same, window: Any = same,
                    pane: Any = same) -> List[list]:
    """Elements as columns: values, times, interval windows' starts and ends (µs), other
    windows (None: the global window), panes (None: no firing) and diffs; values, other
    windows and panes as `value`, `window` and `pane` make them."""
    vs, tss, wss, wes, wxs, ps, ds = [], [], [], [], [], [], []
    for wv in elements:
        vs.append(value(wv.value))
        tss.append(wv.ts)
        w = wv.window
        if type(w) is IntervalWindow:
            wss.append(w.start_us)
            wes.append(w.max_ts + 1)
            wxs.append(None)
        else:
            wss.append(None)
            wes.append(None)
            wxs.append(None if w is GLOBAL_WINDOW else window(w))
        ps.append(None if wv.pane is NO_FIRING else pane(wv.pane))
        ds.append(wv.diff)
    return [vs, tss, wss, wes, wxs, ps, ds]


def encode(elements: Sequence[WindowedValue], keys: Optional[Sequence[bytes]] = None,
           tags: Optional[Sequence[Optional[str]]] = None) -> pa.RecordBatch:
    """Elements as a record batch (with their pickled keys, or their output tags)."""
    columns = element_columns(elements, dumps, _Memo(dumps).bytes_of, pane_writer())
    arrays = [pa.array(c, f.type) for c, f in zip(columns, _ARROW)]
    if keys is not None:
        return pa.RecordBatch.from_arrays([pa.array(keys, pa.binary())] + arrays, schema=KEYED_ARROW)
    if tags is not None:
        return pa.RecordBatch.from_arrays(arrays + [pa.array(tags, pa.string())], schema=TAGGED_ARROW)
    return pa.RecordBatch.from_arrays(arrays, schema=ELEMENT_ARROW)


class _Shared(dict):
    """Objects read from bytes (`of`), one per distinct bytes within a batch; `default` for
    null."""

    def __init__(self, of: Any, default: Any) -> None:
        super().__init__()
        self.of, self.default = of, default

    def __call__(self, b: Optional[bytes]) -> Any:
        if b is None:
            return self.default
        obj = self.get(b)
        if obj is None:
            obj = self[b] = self.of(b)
        return obj


def decode(batch: Any) -> List[WindowedValue]:
    """The elements of a record batch or table with the element columns."""
    return decode_columns(*(batch.column(c).to_pylist()
                            for c in ("v", "ts", "ws", "we", "wx", "p", "d")))


def decode_columns(*columns: Sequence[Any]) -> List[WindowedValue]:
    """The elements of the element columns, as lists (v, ts, ws, we, wx, p, d)."""
    intervals: Dict[tuple, Any] = {}
    other_window, pane = _Shared(loads, GLOBAL_WINDOW), pane_reader()

    def window(start: Optional[int], end: Optional[int], x: Optional[bytes]) -> Any:
        if start is None:
            return other_window(x)
        w = intervals.get((start, end))
        if w is None:
            w = intervals[(start, end)] = IntervalWindow.from_micros(start, end)
        return w
    return [raw(loads(v), ts, window(ws, we, wx), pane(p), d)
            for v, ts, ws, we, wx, p, d in zip(*columns)]


def batches(elements: Iterable[WindowedValue], size: int) -> Iterable[pa.RecordBatch]:
    """Elements encoded `size` at a time."""
    chunk: List[WindowedValue] = []
    for wv in elements:
        chunk.append(wv)
        if len(chunk) >= size:
            yield encode(chunk)
            chunk = []
    if chunk:
        yield encode(chunk)


COUNTS = "#counts"   # the bus address of rows carrying a stateful step's counts to the driver


def range_markers(r: MarkerRange) -> List[MarkerRange]:
    """The marker rows that carry a typed edge's marker range on: none when it is empty."""
    return [] if r.empty else [r]
