"""Elements as Arrow rows, the form a PCollection takes in a Spark DataFrame:
`v` (the pickled value), `ts` (event time, µs), `w` (the pickled window, null for the global
window), `p` (the pickled PaneInfo, null for none), `d` (the diff); a keyed form adds `k`, the
pickled key Spark groups by, and a tagged form `t`, the output tag of a multi-output step.

Values pickle with the standard pickler; what refers to `__main__` (classes defined in the
pipeline's script) or cannot be pickled by reference (lambdas) is pickled by value with
cloudpickle, so Python workers, whose `__main__` differs, can read it."""
from __future__ import annotations

import pickle
from typing import Any, Dict, Iterable, List, Optional, Sequence

import pyarrow as pa
from pyspark import cloudpickle

from ...windowing import GLOBAL_WINDOW, NO_FIRING, WindowedValue

ELEMENT = "v binary, ts long, w binary, p binary, d int"
KEYED = "k binary, " + ELEMENT
TAGGED = ELEMENT + ", t string"

_ARROW = [pa.field("v", pa.binary()), pa.field("ts", pa.int64()), pa.field("w", pa.binary()),
          pa.field("p", pa.binary()), pa.field("d", pa.int32())]
ELEMENT_ARROW = pa.schema(_ARROW)
KEYED_ARROW = pa.schema([pa.field("k", pa.binary())] + _ARROW)
TAGGED_ARROW = pa.schema(_ARROW + [pa.field("t", pa.string())])

raw = WindowedValue.raw


def dumps(obj: Any) -> bytes:
    """Bytes a Python worker can load: by reference where that works there, else by value."""
    try:
        data = pickle.dumps(obj, protocol=5)
    except Exception:
        return cloudpickle.dumps(obj, protocol=5)
    if b"__main__" in data:
        return cloudpickle.dumps(obj, protocol=5)
    return data


loads = pickle.loads


class _Memo(dict):
    """Pickled bytes of shared objects (windows, panes) by identity, within one batch."""

    def bytes_of(self, obj: Any) -> bytes:
        b = self.get(id(obj))
        if b is None:
            b = self[id(obj)] = dumps(obj)
        return b


def encode(elements: Sequence[WindowedValue], keys: Optional[Sequence[bytes]] = None,
           tags: Optional[Sequence[Optional[str]]] = None) -> pa.RecordBatch:
    """Elements as a record batch (with their pickled keys, or their output tags)."""
    memo = _Memo()
    w_of, p_of = memo.bytes_of, memo.bytes_of
    vs, tss, ws, ps, ds = [], [], [], [], []
    for wv in elements:
        vs.append(dumps(wv.value))
        tss.append(wv.ts)
        ws.append(None if wv.window is GLOBAL_WINDOW else w_of(wv.window))
        ps.append(None if wv.pane is NO_FIRING else p_of(wv.pane))
        ds.append(wv.diff)
    arrays = [pa.array(vs, pa.binary()), pa.array(tss, pa.int64()), pa.array(ws, pa.binary()),
              pa.array(ps, pa.binary()), pa.array(ds, pa.int32())]
    if keys is not None:
        return pa.RecordBatch.from_arrays([pa.array(keys, pa.binary())] + arrays, schema=KEYED_ARROW)
    if tags is not None:
        return pa.RecordBatch.from_arrays(arrays + [pa.array(tags, pa.string())], schema=TAGGED_ARROW)
    return pa.RecordBatch.from_arrays(arrays, schema=ELEMENT_ARROW)


def decode(batch: Any) -> List[WindowedValue]:
    """The elements of a record batch or table with the element columns."""
    cache: Dict[Optional[bytes], Any] = {None: None}

    def shared(b: Optional[bytes], default: Any) -> Any:
        if b is None:
            return default
        obj = cache.get(b)
        if obj is None:
            obj = cache[b] = loads(b)
        return obj
    vs = batch.column("v").to_pylist()
    tss = batch.column("ts").to_pylist()
    ws = batch.column("w").to_pylist()
    ps = batch.column("p").to_pylist()
    ds = batch.column("d").to_pylist()
    return [raw(loads(v), ts, shared(w, GLOBAL_WINDOW), shared(p, NO_FIRING), d)
            for v, ts, w, p, d in zip(vs, tss, ws, ps, ds)]


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
