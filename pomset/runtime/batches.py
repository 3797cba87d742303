"""Batched DoFns (`process_batch`): elements in and out of the batch types a DoFn declares.

Semantics, following Beam's, with one extension. Beam calls `process_batch` only on
homogeneous batches: elements sharing timestamp, window and pane, which its outputs then get.
Here a bundle is passed as one batch (all of it: a bundle is small, and a vectorized function
is the faster the larger its batch), and its outputs get their metadata thus:

- the outputs have as many rows as the batch (a 1:1 vectorized map, the common case): output
  row i gets the timestamp, window, pane and diff of input row i;
- otherwise, if the batch was homogeneous (its rows share timestamp, window, pane and diff),
  every output gets the batch's;
- otherwise the outputs are dropped and `process_batch` is called again once per homogeneous
  group of the batch's rows, each group's outputs getting the group's metadata.

So `process_batch` must be a pure function of its batch (it may be called on a row twice),
and a 1:1 function must keep its rows in order. A batch is split before the call by window
when the ParDo reads side inputs (their views are per window), and into homogeneous groups
when `process_batch` asks for `DoFn.TimestampParam`, `WindowParam` or `PaneInfoParam` (which
then hold for every row). Outputs are batches only: no `TaggedOutput`s or
`TimestampedValue`s.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Dict, Hashable, List, Optional, Tuple

from ..sdk.dofn import BATCH_TYPES, BatchTypes, DoFn, context_params, make_invoker
from ..sdk.schema import Row, rows_of
from ..windowing import WindowedValue


def _rows_in(values: List[Any], what: str) -> List[Any]:
    """`values`, checked to be rows (dicts), as a record batch of `what` needs."""
    for v in values:
        if not isinstance(v, Mapping):
            raise TypeError(f"a {what} batch holds rows (dicts or pm.Row), got the element "
                            f"{v!r}; use numpy.ndarray batches for numbers")
    return values


def _record_batch(values: List[Any], schema: Any) -> Any:
    import pyarrow as pa
    return pa.RecordBatch.from_pylist(_rows_in(values, "pyarrow.RecordBatch"), schema=schema)


def _table(values: List[Any], schema: Any) -> Any:
    import pyarrow as pa
    return pa.Table.from_pylist(_rows_in(values, "pyarrow.Table"), schema=schema)


def _data_frame(values: List[Any], schema: Any) -> Any:
    # through Arrow, so that the schema's types reach the DataFrame's dtypes
    import pyarrow as pa
    return pa.RecordBatch.from_pylist(_rows_in(values, "pandas.DataFrame"),
                                      schema=schema).to_pandas()


def _ndarray(values: List[Any], schema: Any) -> Any:
    import numpy as np
    array = np.asarray(values)
    if array.dtype.kind == "O" or array.ndim != 1:
        raise TypeError(f"a numpy.ndarray batch holds numbers, got elements such as "
                        f"{values[0]!r}; use pyarrow.RecordBatch or pandas.DataFrame batches "
                        f"for rows")
    return array


def _data_frame_rows(frame: Any) -> List[Row]:
    """A DataFrame's rows with plain Python values (through Arrow, as columns give them:
    datetimes, not pandas Timestamps; a missing value as None)."""
    import pyarrow as pa
    return rows_of(pa.Table.from_pandas(frame, preserve_index=False))


def _array_items(array: Any) -> List[Any]:
    if array.ndim == 0:
        raise TypeError("process_batch yielded a 0-dimensional numpy array, not a batch")
    return array.tolist()


# batch type name -> (values -> batch, given the input's schema; batch -> values)
_CONVERSIONS: Dict[str, Tuple[Callable[[List[Any], Any], Any], Callable[[Any], List[Any]]]] = {
    "pyarrow.RecordBatch": (_record_batch, rows_of),
    "pyarrow.Table": (_table, rows_of),
    "pandas.DataFrame": (_data_frame, _data_frame_rows),
    "numpy.ndarray": (_ndarray, _array_items),
}


def _batch_class(name: str) -> type:
    import importlib
    module, cls = BATCH_TYPES[name]
    return getattr(importlib.import_module(module), cls)


def metadata(wv: WindowedValue) -> Hashable:
    """What rows of a homogeneous batch share: timestamp, window, pane and diff."""
    return (wv.ts, wv.window, wv.pane, wv.diff)


def split(rows: List[WindowedValue], key: Callable[[WindowedValue], Hashable]
          ) -> List[List[WindowedValue]]:
    """`rows` grouped by `key`, groups in order of their first row, rows in order."""
    groups: Dict[Hashable, List[WindowedValue]] = {}
    for wv in rows:
        group = groups.get(key(wv))
        if group is None:
            group = groups[key(wv)] = []
        group.append(wv)
    return list(groups.values())


class BatchCaller:
    """Calls a batched DoFn's `process_batch` on rows (WindowedValues): their values as the
    declared input batch, its output batches back as element values. `schema` is the input
    PCollection's (a `pyarrow.Schema` or None), so that columns get its types even when all
    their values in a batch are null."""

    def __init__(self, fn: DoFn, types: BatchTypes, schema: Optional[Any],
                 has_side: bool) -> None:
        self.name = f"{type(fn).__name__}.process_batch"
        self.types = types
        self.schema = schema
        self.to_batch = _CONVERSIONS[types.input][0]
        self.from_batch = _CONVERSIONS[types.output][1]
        self.output_class = _batch_class(types.output)
        self.invoke = make_invoker(fn.process_batch, has_side)
        #: whether process_batch reads the timestamp, window or pane: batches are homogeneous
        self.homogeneous = bool(context_params(fn.process_batch))

    def batches(self, batch: Any) -> Optional[List[Any]]:
        """process_batch's output batches for an input batch already of the declared type
        (a columnar runner's), without side inputs or context; None if it gave no batches of
        the declared output type (the element way then says what is wrong)."""
        result = self.invoke(batch, None, (), {})
        if result is None:
            return []
        if isinstance(result, self.output_class):
            return [result]
        if isinstance(result, (str, bytes, Mapping)) or not hasattr(result, "__iter__"):
            return None
        outs = list(result)
        return outs if all(isinstance(o, self.output_class) for o in outs) else None

    def __call__(self, rows: List[WindowedValue], args: tuple, kwargs: dict) -> List[Any]:
        """The values of the outputs of process_batch on `rows` (in order); rows[0] gives
        the context parameters, which a homogeneous batch's rows share."""
        batch = self.to_batch([wv.value for wv in rows], self.schema)
        result = self.invoke(batch, rows[0], args, kwargs)
        if result is None:
            return []
        if isinstance(result, self.output_class):
            return self.from_batch(result)
        if isinstance(result, (str, bytes, Mapping)) or not hasattr(result, "__iter__"):
            raise TypeError(f"{self.name} must return or yield {self.types.output} batches, "
                            f"got {type(result).__name__}")
        values: List[Any] = []
        for out in result:
            if not isinstance(out, self.output_class):
                raise TypeError(f"{self.name} must yield {self.types.output} batches (its "
                                f"declared output type), got {type(out).__name__}")
            values.extend(self.from_batch(out))
        return values
