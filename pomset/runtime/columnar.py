"""Columnar bundles: the rows of a schema'd PCollection kept as an Arrow table, with event time
and windows as columns, and the relational steps over them computed by pyarrow.compute and
numpy, never calling Python per row.

A runner hands a step a `Columns` bundle where the step can take one (`native_step`,
`native_windows`, `native_combine`) and turns it into elements (`Columns.elements`) where it
cannot, so a pipeline mixing relational steps and Python functions runs either way with the
same answer. Columns come from bounded sources before any grouping (pane NO_FIRING, diff +1)
or from a combine that fires once (`aggregate_final`: one ON_TIME pane per key and window).
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..sdk.combinefn import Count, Max, Mean, Min, Sum
from ..sdk.core import Filter, GroupByKey, Map, ParDo, WindowInto
from ..sdk.dofn import context_params
from ..sdk.group_keys import group_keys
from ..sdk.relational import (NATIVE_COMBINERS, FieldsCombineFn, FieldsMap, FieldsToRow, KeyFields,
                               key_values)
from ..sdk.expressions import Col, Expr, col, lit
from ..sdk.io.base import EXTRA_NAMES
from ..sdk.schema import Row, pylist, rows_of
from ..windowing import (GLOBAL_WINDOW, MAX_MICROS, MIN_MICROS, NO_FIRING, IntervalWindow,
                         PaneInfo, PaneTiming, TimestampCombiner, WindowedValue)
from ..windowing.windowfns import FixedWindows, GlobalWindows, SlidingWindows
from .lifting import Tallied, liftable

TS, WS, WE = "__ts", "__ws", "__we"   # event time, window start and end: int64 µs
ON_TIME_ONCE = PaneInfo(True, True, PaneTiming.ON_TIME, 0, 0)
_raw = WindowedValue.raw


KEY, VALUE = "__key", "__value"   # the columns of (key, value) pairs and of plain values


class Columns:
    """A bundle of elements as an Arrow table: their fields, `__ts`, and for windowed elements
    `__ws`/`__we` (absent: the global window); every element has `pane` and diff +1. The
    elements are rows of the fields; or, naming `keys` and `values` (after `KeyFields`), (key,
    tuple of values) pairs (without values, (key, row), the key as `group_keys` gives it);
    or, `pairs`, (key, value) pairs of the `__key` and `__value` columns; or, `values`
    alone, the plain values of the `__value` column."""

    __slots__ = ("table", "pane", "keys", "values", "pairs")

    def __init__(self, table: Any, pane: PaneInfo = NO_FIRING,
                 keys: Optional[List[str]] = None, values: Optional[List[str]] = None,
                 pairs: bool = False) -> None:
        self.table, self.pane, self.keys, self.values = table, pane, keys, values
        self.pairs = pairs

    def like(self, table: Any) -> "Columns":
        """Other elements of the same shape."""
        return Columns(table, self.pane, self.keys, self.values, self.pairs)

    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def windowed(self) -> bool:
        return WS in self.table.column_names

    @property
    def rows(self) -> bool:
        """Whether the elements are rows of the fields."""
        return self.keys is None and self.values is None

    def fields(self) -> List[str]:
        return [n for n in self.table.column_names if n not in (TS, WS, WE)]

    def slices(self, rows: int) -> Iterator["Columns"]:
        """The bundle in consecutive slices of at most `rows` rows."""
        for start in range(0, self.table.num_rows, rows):
            yield self.like(self.table.slice(start, rows))

    def elements(self) -> List[WindowedValue]:
        """The rows as elements: `Row`s, or (key, values) pairs for a keyed bundle (the key as
        `KeyFields` makes it)."""
        t, pane = plain(self.table), self.pane
        times = t.column(TS).to_pylist()
        windows = (_windows(t.column(WS).to_pylist(), t.column(WE).to_pylist())
                   if self.windowed else [GLOBAL_WINDOW] * len(times))
        if self.pairs:
            values: List[Any] = list(zip(pylist(t.column(KEY)), pylist(t.column(VALUE))))
        elif self.keys is None and self.values:
            values = pylist(t.column(VALUE))
        elif self.keys is None:
            values = rows_of(t.select(self.fields()))
        elif self.values:
            keys = key_values([pylist(t.column(k)) for k in self.keys])
            columns = [pylist(t.column(v)) for v in self.values]
            values = list(zip(keys, zip(*columns)))
        else:
            keys = group_keys(self.keys, [pylist(t.column(k)) for k in self.keys])
            values = list(zip(keys, rows_of(t.select(
                [n for n in t.column_names if n not in self.keys and not n.startswith("__")]))))
        return [_raw(v, ts, w, pane, 1) for v, ts, w in zip(values, times, windows)]


def _windows(starts: List[Optional[int]], ends: List[Optional[int]]) -> List[Any]:
    """The windows of rows, one object per distinct window (no bounds: the global window)."""
    made: Dict[Tuple[Any, Any], Any] = {}
    out = []
    for bounds in zip(starts, ends):
        w = made.get(bounds)
        if w is None:
            w = made[bounds] = (GLOBAL_WINDOW if bounds[0] is None
                                else IntervalWindow.from_micros(*bounds))
        out.append(w)
    return out


# --- what runs natively ------------------------------------------------------------------------

def _exprs(fields: Dict[str, Any]) -> bool:
    return all(isinstance(f, Expr) for f in fields.values())


Step = Callable[[Columns], Optional[Columns]]


def native_step(t: ParDo, schema: Any) -> Optional[Step]:
    """The columnar form of an element-wise step over rows of `schema`, or None when it
    calls Python per row. The step gives None for a bundle of another shape (not rows),
    which then goes through the Python step as elements."""
    import pyarrow.compute as pc
    if isinstance(t, Filter) and t.expr is not None:
        expr = t.expr

        def filtered(c: Columns) -> Optional[Columns]:
            if not c.rows:
                return None
            mask = pc.fill_null(_evaluate(expr, c.table), False)
            return c.like(c.table.filter(mask))
        return filtered
    picked = picked_fields(t, schema)
    if picked is not None:
        return _picking(picked)
    if t.batch_types is not None and t.batch_types.input != "numpy.ndarray" \
            and not context_params(t.fn.process_batch) and not _bundle_methods(t.fn):
        return _batched(t)
    if isinstance(t, FieldsMap) and _exprs(t.fields):
        return partial_fields(t.fields, t.keep_input)
    if isinstance(t, KeyFields) and t.keys and not t.force_tuple and _exprs(t.keys) and all(
            isinstance(a.values, Expr) for a in t.aggregations):
        return _keyed(t)
    if isinstance(t, FieldsToRow):
        return _unkeyed
    return None


def _bundle_methods(fn: Any) -> bool:
    from ..sdk.dofn import DoFn
    return (type(fn).start_bundle is not DoFn.start_bundle
            or type(fn).finish_bundle is not DoFn.finish_bundle)


def _batched(t: ParDo) -> Step:
    """A batched DoFn given a bundle's columns as its batch (no conversion from elements);
    outputs as many rows as its input keep the input rows' time and windows. Otherwise None:
    the elements' way regroups the rows (`runtime/batches.py`)."""
    import pyarrow as pa
    from .batches import BatchCaller
    caller = BatchCaller(t.fn, t.batch_types, None, False)
    kind = t.batch_types.input

    def call(c: Columns) -> Optional[Columns]:
        if not c.rows:
            return None
        fields = plain(c.table.select(c.fields()))
        if kind == "pyarrow.Table":
            batch: Any = fields
        else:
            batch = fields.combine_chunks().to_batches()
            batch = batch[0] if batch else pa.RecordBatch.from_pylist([], fields.schema)
            if kind == "pandas.DataFrame":
                batch = batch.to_pandas()
        try:
            outputs = caller.batches(batch)
        except Exception:   # the elements' way reports it (or sends it to dead letters)
            return None
        if outputs is None:
            return None
        out = _concat(outputs, caller.types.output)
        if out is None:
            return None
        meta = {n: c.table.column(n) for n in (TS, WS, WE) if n in c.table.column_names}
        if out.num_rows != c.table.num_rows:
            # a DataFrame's index says which input row each output row came from
            taken = _from_index(outputs, c.table.num_rows) \
                if caller.types.output == "pandas.DataFrame" else None
            if taken is None:
                return None
            meta = {n: m.take(taken) for n, m in meta.items()}
        if caller.types.output == "numpy.ndarray":
            return Columns(pa.table(dict({VALUE: out.column(0)}, **meta)), c.pane,
                           values=[VALUE])
        columns = {n: out.column(n) for n in out.column_names}
        if set(columns) & set(meta):
            return None
        return Columns(pa.table(dict(columns, **meta)), c.pane)
    return call


def _from_index(frames: List[Any], rows: int) -> Optional[Any]:
    """The input rows pandas outputs came from, by their index (a filter or a reordering of
    the input frame keeps it), or None when the index is not the input's positions."""
    import numpy as np
    import pyarrow as pa
    indexes = [f.index.to_numpy() for f in frames]
    if any(i.dtype.kind not in "iu" for i in indexes):
        return None
    taken = np.concatenate(indexes) if indexes else np.array([], np.int64)
    if len(taken) and (taken.min() < 0 or taken.max() >= rows):
        return None
    return pa.array(taken, pa.int64())


def _concat(batches: List[Any], kind: str) -> Optional[Any]:
    """A batched DoFn's output batches as one Arrow table (an ndarray as one column)."""
    import pyarrow as pa
    try:
        if kind == "numpy.ndarray":
            import numpy as np
            arrays = [b for b in batches if b.ndim == 1]
            if len(arrays) != len(batches):
                return None
            return pa.table({VALUE: pa.array(np.concatenate(arrays) if arrays else [])})
        if kind == "pandas.DataFrame":
            batches = [pa.Table.from_pandas(b, preserve_index=False) for b in batches]
        tables = [b if isinstance(b, pa.Table) else pa.Table.from_batches([b]) for b in batches]
        return pa.concat_tables(tables) if tables else None
    except (pa.ArrowException, TypeError, ValueError):
        return None


class _SymbolicRow:
    """A row whose fields are column references: what a function that only picks fields
    returns when called on it tells which."""

    def __init__(self, names: List[str]) -> None:
        self._names = names

    def __getitem__(self, name: str) -> Expr:
        if name not in self._names:
            raise KeyError(name)
        return col(name)

    def __getattr__(self, name: str) -> Expr:
        if name.startswith("_") or name not in self._names:
            raise AttributeError(name)
        return col(name)


def picked_fields(t: ParDo, schema: Any) -> Optional[Tuple[Any, ...]]:
    """For a plain `Map` over rows of `schema` whose function only picks fields or returns
    constants (`lambda r: (r["key"], r["value"])`): what it returns, as one or two column
    references or constants (`Col`, `Lit`); else None. The function is called once, on a
    symbolic row; anything else it does (arithmetic, a branch, a call) makes it a Python step."""
    if type(t) is not Map or schema is None or t.args or t.kwargs or t.side_inputs() \
            or t.dead_letter_tag is not None or t.tags or not _only_picks(t.fn):
        return None
    try:
        out = t.fn(_SymbolicRow(schema.names))
    except Exception:   # the function does more than pick fields
        return None
    parts = out if type(out) is tuple and len(out) == 2 else (out,)
    if not all(isinstance(p, Col) or type(p) in (int, float, str) for p in parts):
        return None
    if all(not isinstance(p, Col) for p in parts):
        return None
    return tuple(p if isinstance(p, Col) else lit(p) for p in parts)


# What a function that only picks fields and builds a tuple of them and constants compiles
# to: no calls, comparisons, branches, globals or closures, whose outcome the symbolic row
# could not stand for (`r["v"] is None` is False on it, whatever the row holds).
_PICKING_OPS = frozenset({"RESUME", "NOP", "CACHE", "LOAD_FAST", "LOAD_CONST",
                          "BINARY_SUBSCR", "LOAD_ATTR", "BUILD_TUPLE", "RETURN_VALUE",
                          "RETURN_CONST"})


def _only_picks(fn: Any) -> bool:
    """Whether `fn` is a plain one-argument function whose code does nothing but pick."""
    import dis
    import types
    if not isinstance(fn, types.FunctionType) or fn.__closure__ or fn.__defaults__:
        return False
    code = fn.__code__
    if code.co_argcount != 1 or code.co_kwonlyargcount or code.co_flags & 0x0C:  # *a, **k
        return False
    return all(i.opname in _PICKING_OPS for i in dis.get_instructions(code))


def _picking(picked: Tuple[Expr, ...]) -> Callable[[Columns], Columns]:
    def pick(c: Columns) -> Optional[Columns]:
        if not c.rows:
            return None
        t = c.table
        names = [VALUE] if len(picked) == 1 else [KEY, VALUE]
        out = {name: _evaluate(e, t) for name, e in zip(names, picked)}
        table = _with_meta(out, t)
        if len(picked) == 1:
            return Columns(table, c.pane, values=[VALUE])
        return Columns(table, c.pane, [KEY], [VALUE], pairs=True)
    return pick


def partial_fields(fields: Dict[str, Expr], keep_input: bool) -> Step:
    def project(c: Columns) -> Optional[Columns]:
        if not c.rows:
            return None
        t = c.table
        out = {n: t.column(n) for n in (c.fields() if keep_input else ())}
        out.update((name, _evaluate(e, t)) for name, e in fields.items())
        return Columns(_with_meta(out, t), c.pane)
    return project


def _evaluate(e: Expr, t: Any) -> Any:
    """An expression over a bundle's table, one value per row. A column reference is the
    column as it is (a string column may be dictionary-encoded, which grouping and filtering
    take as it is); any other expression sees the plain values of the columns it reads."""
    if isinstance(e, Col):
        return t.column(e.name)
    return _full(e.to_arrow(plain(t, e.columns())), t.num_rows)


def plain(t: Any, names: Optional[Any] = None) -> Any:
    """The table with its dictionary-encoded columns (of `names`, default all) decoded."""
    import pyarrow as pa
    for i, field in enumerate(t.schema):
        if pa.types.is_dictionary(field.type) and (names is None or field.name in names):
            t = t.set_column(i, field.name, t.column(i).cast(field.type.value_type))
    return t


def _full(array: Any, n: int) -> Any:
    import pyarrow as pa
    if isinstance(array, pa.Scalar):
        return pa.array([array.as_py()] * n, array.type)
    return array


def _with_meta(columns: Dict[str, Any], t: Any) -> Any:
    import pyarrow as pa
    out = dict(columns)
    for name in (TS, WS, WE):
        if name in t.column_names:
            out[name] = t.column(name)
    return pa.table(out) if not isinstance(t, pa.RecordBatch) else pa.RecordBatch.from_pydict(out)


def _keyed(t: KeyFields) -> Step:
    values = [f"__v{i}" for i in range(len(t.aggregations))]

    def keyed(c: Columns) -> Optional[Columns]:
        if not c.rows:
            return None
        table = c.table
        out = {name: _evaluate(e, table) for name, e in t.keys.items()}
        if t.aggregations:
            out.update((v, _evaluate(a.values, table)) for v, a in zip(values, t.aggregations))
        else:
            out.update((n, table.column(n)) for n in c.fields() if n not in out)
        return Columns(_with_meta(out, table), c.pane, list(t.keys),
                       values if t.aggregations else [])
    return keyed


def _unkeyed(c: Columns) -> Optional[Columns]:
    """FieldsToRow over a combine's columnar output, which is already rows of the key fields
    and the aggregations' names."""
    return c if c.rows else None


def native_windows(t: WindowInto) -> Optional[Callable[[Columns], Columns]]:
    """Window assignment by column arithmetic (fixed, sliding, global), or None."""
    fn = t.window_fn
    if fn is None:
        return lambda c: c
    if type(fn) is GlobalWindows:
        return lambda c: c.like(c.table.drop_columns([n for n in (WS, WE)
                                                      if n in c.table.column_names]))
    geometry = window_geometry(fn)
    if geometry is None:
        return None
    return lambda c: _assign(c, *geometry)


def window_geometry(fn: Any) -> Optional[Tuple[int, int, int]]:
    """(size, period, offset) in µs of fixed or sliding windows, as column arithmetic assigns
    them (a fixed window is a sliding one whose period is its size); None for any other."""
    if type(fn) is FixedWindows:
        return fn.size_us, fn.size_us, fn.offset_us
    if type(fn) is SlidingWindows:
        return fn.size_us, fn.period_us, fn.offset_us
    return None


def _assign(c: Columns, size: int, period: int, offset: int) -> Columns:
    """Each row in every window of `size` starting at a multiple of `period` (plus `offset`)
    that holds its time, latest start first (as the WindowFns' own `_assign`)."""
    import numpy as np
    import pyarrow as pa
    table = c.table.drop_columns([n for n in (WS, WE) if n in c.table.column_names])
    ts = table.column(TS).to_numpy()
    latest = ts - offset   # then, in place: the latest start at or before the time
    latest //= period
    latest *= period
    latest += offset
    copies = -(-size // period)
    if copies == 1:
        starts = latest
    else:
        rows = np.repeat(np.arange(len(ts)), copies)
        starts = latest[rows] - np.tile(np.arange(copies, dtype=np.int64), len(ts)) * period
        keep = starts > ts[rows] - size
        rows, starts = rows[keep], starts[keep]
        table = table.take(pa.array(rows))
    table = table.append_column(WS, pa.array(starts, pa.int64()))
    return c.like(table.append_column(WE, pa.array(starts + size, pa.int64())))


def native_combine(t: GroupByKey, strategy: Any, may_retract: bool) -> bool:
    """Whether a grouping can take keyed columns: a combine of built-in aggregations (a
    `GroupBy`'s, or one `Sum`, `Count`, `Mean`, `Min` or `Max`, `sum`/`min`/`max` included)
    over non-merging windows, whose trigger does not count elements (a partial accumulator
    then stands for the elements it folded), on input without retractions, that sends no late
    elements to a late output (they go there as they came)."""
    fn = t.combine_fn
    builtin = (type(fn) in NATIVE_COMBINERS or isinstance(fn, FieldsCombineFn) and fn.native()
               or _vectorized(fn))
    return (builtin and not may_retract and liftable(fn, strategy, False, t.late_tag)
            and not strategy.trigger.counts_elements())


def _vectorized(fn: Any) -> bool:
    return (fn is not None and not isinstance(fn, FieldsCombineFn) and fn.vectorized()
            and fn.can_merge())


def aggregator(fn: Any, combiner: TimestampCombiner, tally: bool = False) -> Any:
    """What folds a native combine's bundles: Arrow's aggregations for the built-ins
    (`Aggregator`), the CombineFn's own `add_inputs` per group otherwise. With `tally`, each
    partial accumulator carries its rows' times (`lifting.Tallied`), so the kernel that merges
    it counts its late and dropped rows as it would have counted them one by one."""
    if _vectorized(fn):
        return VectorAggregator(fn, combiner, tally)
    return Aggregator(fn, combiner, tally=tally)


def fires_once(strategy: Any) -> bool:
    """Whether, over input that is all on time (bounded sources: their watermark moves only
    when everything is read), the trigger fires once per window, ON_TIME."""
    return not strategy.trigger.fires_before_end_of_window()


# --- aggregation --------------------------------------------------------------------------------
#
# Keyed columns fold into a partial table: one row per key and window, per aggregation the
# columns `_OPS` names (a mean is a sum and a count), and the rows' earliest and latest time.
# Partial tables merge into one of the same form, which gives the final rows or the CombineFn's
# accumulators.

RAW_RATIO = 0.25   # a bundle folding to more groups than this share of its rows is kept raw
RAW_BUNDLES = 16   # raw rows kept, in units of `compact_rows`, before they are folded
_OPS = {Sum: ("sum",), Count: ("count",), Mean: ("sum", "count"), Min: ("min",), Max: ("max",)}
_MERGE = {"sum": "sum", "count": "sum", "min": "min", "max": "max"}


class Aggregator:
    """The aggregations of one combine over keyed columns, folded as they come: a `GroupBy`'s
    (`FieldsCombineFn`: nulls skipped, as SQL does), or one built-in CombineFn over (key,
    value) pairs (a bundle with null values is refused: the CombineFn itself decides what a
    None means)."""

    def __init__(self, fn: Any, combiner: TimestampCombiner,
                 compact_rows: int = 1 << 20, tally: bool = False) -> None:
        self.fields = isinstance(fn, FieldsCombineFn)
        self.fns = fn.fns if self.fields else [fn]
        self.names = [a.name for a in fn.aggregations] if self.fields else [VALUE]
        self.combiner, self.compact_rows = combiner, compact_rows
        self.parts: List[Any] = []
        # Bundles with about as many keys and windows as rows gain little from folding each
        # on its own: those are kept as they come and aggregated together (`_fold_raw`),
        # one pass over them instead of a pass per bundle and the merges after.
        self.raw: List[Any] = []
        self.raw_rows: Optional[int] = None   # None until the first bundle has said
        self.aggs: List[Tuple[str, ...]] = []
        self.size: Optional[int] = None   # the windows' size (µs)
        self._time_op = time_op(combiner)
        self.keys: List[str] = []
        self.values: List[str] = []
        self.windowed = False
        # partials with their rows' times (`aggregator`): the bundles are then kept as they
        # come and aggregated together when taken (the times are as many as the rows anyway)
        self.tally = tally

    def __bool__(self) -> bool:
        return bool(self.parts or self.raw)

    def add(self, c: Columns) -> bool:
        """Fold a keyed bundle in; False (and nothing folded) when it is not one this
        combine takes."""
        import pyarrow.compute as pc
        if c.keys is None or c.pairs == self.fields or len(c.values) != len(self.fns):
            return False
        if not self.fields and c.table.column(VALUE).null_count:
            return False
        self.keys, self.values, self.windowed = c.keys, c.values, c.windowed
        if c.windowed and len(c) and self.size is None:
            # fixed and sliding windows have one size: grouping by their start suffices
            self.size = c.table.column(WE)[0].as_py() - c.table.column(WS)[0].as_py()
        aggs: List[Tuple[str, str, Any]] = []
        for v, f in zip(c.values, self.fns):
            for op in _OPS[type(f)]:
                aggs.append((v, op, pc.ScalarAggregateOptions(skip_nulls=True, min_count=0))
                            if op == "sum" else (v, op))
        aggs.append((TS, self._time_op))
        if self.tally:   # and the rows' earliest and latest
            aggs += [(TS, op) for op in ("min", "max") if op != self._time_op] + [(TS, "list")]
        self.aggs = aggs
        table = c.table.select(self._group() + c.values + [TS])
        if self.tally:
            self.raw.append(table)
        elif self.raw_rows is None:   # the first bundle: does folding it pay?
            self._add_part(table)
            if self.parts and self.parts[-1].num_rows > RAW_RATIO * table.num_rows:
                self.raw_rows = 0
        else:
            self.raw.append(table)
            self.raw_rows += table.num_rows
            if self.raw_rows > self.compact_rows * RAW_BUNDLES:
                self._fold_raw()
        return True

    def _fold_raw(self) -> None:
        """Aggregate the bundles kept as they came, all at once."""
        import pyarrow as pa
        if self.raw:
            table = pa.concat_tables(self.raw).unify_dictionaries()
            self.raw, self.raw_rows = [], 0
            self._add_part(table)

    def _group(self) -> List[str]:
        return self.keys + ([WS] if self.windowed else [])

    def _add_part(self, table: Any) -> None:
        import pyarrow as pa
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        if table.num_rows == 0:
            return
        if table.column(0).num_chunks > 1:
            table = table.unify_dictionaries()
        part = table.group_by(self._group(), use_threads=True).aggregate(self.aggs)
        self.parts.append(plain(part))   # partial tables merge on plain values
        # Merge once the parts since the last merge outgrow both the threshold and the merged
        # table itself: each row is then re-aggregated a bounded number of times, however
        # many groups there are.
        pending = sum(p.num_rows for p in self.parts[1:])
        if pending > max(self.compact_rows, self.parts[0].num_rows):
            self.parts = [self._merged()]

    def _merged(self) -> Any:
        """The partial tables merged into one."""
        import pyarrow as pa
        if len(self.parts) == 1:
            return self.parts[0]
        table = pa.concat_tables(self.parts)
        group = self._group()
        aggs = [(n, _MERGE[n.rsplit("_", 1)[1]]) for n in table.column_names if n not in group]
        merged = table.group_by(group, use_threads=True).aggregate(aggs)
        # aggregating `x_sum` with "sum" names it `x_sum_sum`: back to the partial's names
        return merged.rename_columns([n if n in group else n.rsplit("_", 1)[0]
                                      for n in merged.column_names])

    def take(self) -> Any:
        """The merged partial table (with its windows' ends), emptying the aggregator."""
        import pyarrow.compute as pc
        self._fold_raw()
        merged = self._merged()
        self.parts = []
        if self.windowed:
            merged = merged.append_column(WE, pc.add(merged.column(WS), self.size))
        return merged

    def _columns(self) -> List[List[str]]:
        return [[f"{v}_{op}" for op in _OPS[type(f)]] for v, f in zip(self.values, self.fns)]

    def final(self) -> Columns:
        """The one ON_TIME pane per key and window of a combine that fires once, as columns:
        the key fields and each aggregation's output under its name, at the time the
        timestamp combiner gives."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc
        part = self.take()
        result: Dict[str, Any] = {k: part.column(k) for k in self.keys}
        for name, f, cols in zip(self.names, self.fns, self._columns()):
            if isinstance(f, Mean):
                total = pc.cast(part.column(cols[0]), pa.float64())
                n = part.column(cols[1])
                result[name] = pc.if_else(pc.equal(n, 0), float("nan"), pc.divide(total, n))
            elif isinstance(f, (Min, Max)) and f.default is not None:
                result[name] = pc.fill_null(part.column(cols[0]), f.default)
            else:
                result[name] = part.column(cols[0])
        if self.combiner is TimestampCombiner.OUTPUT_AT_EOW:
            result[TS] = (pc.subtract(part.column(WE), 1) if self.windowed else
                          pa.array(np.full(part.num_rows, GLOBAL_WINDOW.max_ts, np.int64)))
        else:
            result[TS] = part.column(self._time_column())
        if self.windowed:
            result[WS], result[WE] = part.column(WS), part.column(WE)
        if self.fields:
            return Columns(pa.table(result), ON_TIME_ONCE)
        result[KEY] = result.pop(self.keys[0])
        return Columns(pa.table(result), ON_TIME_ONCE, [KEY], [VALUE], pairs=True)

    def _time_column(self) -> str:
        return f"{TS}_{self._time_op}"

    def partials(self) -> List[WindowedValue]:
        """One partial accumulator per key and window, in the CombineFn's own accumulator
        format, as (key, accumulator) elements for the kernel to merge
        (`KernelHost.partials`)."""
        return _partial_elements(self.partial_columns())

    def partial_columns(self) -> Tuple[list, list, list, list, list]:
        """`partials` as columns: keys, accumulators, times, and the windows' starts and ends
        (µs; None for the global window), for a runner that ships them without making
        elements first."""
        part = self.take()
        keys = key_values([pylist(part.column(k)) for k in self.keys])
        columns = [[pylist(part.column(c)) for c in cols] for cols in self._columns()]
        per_fn = []   # each CombineFn's accumulators over the rows
        for f, cols in zip(self.fns, columns):
            make = _ACCUMULATOR[type(f)]   # a sum's or a count's are its column
            per_fn.append(cols[0] if make is _same else [make(*row) for row in zip(*cols)])
        accs = list(map(list, zip(*per_fn))) if self.fields else per_fn[0]
        times = part.column(self._time_column()).to_pylist()
        if self.tally:   # each partial's times as their int64 array's bytes
            lists = part.column(f"{TS}_list").combine_chunks()
            flat, at = lists.values.to_numpy(), lists.offsets.to_numpy()
            accs = list(map(Tallied, accs, [flat[a:b].tobytes() for a, b in zip(at, at[1:])],
                            part.column(f"{TS}_min").to_pylist(),
                            part.column(f"{TS}_max").to_pylist()))
        if self.windowed:
            starts, ends = part.column(WS).to_pylist(), part.column(WE).to_pylist()
        else:
            starts = ends = [None] * len(times)
        return keys, accs, times, starts, ends


class VectorAggregator:
    """One CombineFn with a vectorized `add_inputs` over (key, value) pairs: per bundle, Arrow
    lists each key and window's values and the CombineFn adds each list at once (a Python
    call per group, not per element); a group's accumulators from several bundles merge with
    `merge_accumulators`. Bundles with null values go to the CombineFn one element at a
    time, which decides what a None means."""

    def __init__(self, fn: Any, combiner: TimestampCombiner, tally: bool = False) -> None:
        self.fn, self.combiner, self.tally = fn, combiner, tally
        self._time_op = time_op(combiner)
        # (key, window) -> [acc, time, the rows' times (with `tally`)]
        self.accs: Dict[Tuple[Any, Any], List[Any]] = {}

    def __bool__(self) -> bool:
        return bool(self.accs)

    def add(self, c: Columns) -> bool:
        """Fold a bundle of pairs in; False (nothing folded) for any other bundle."""
        import pyarrow as pa
        if not c.pairs or c.table.column(VALUE).null_count:
            return False
        table = c.table if c.table.column(0).num_chunks <= 1 else c.table.unify_dictionaries()
        group = [KEY] + ([WS, WE] if c.windowed else [])
        out = table.group_by(group, use_threads=True).aggregate(
            [(VALUE, "list"), (TS, self._time_op)] + ([(TS, "list")] if self.tally else []))
        keys = pylist(out.column(KEY))
        windows = (_windows(out.column(WS).to_pylist(), out.column(WE).to_pylist())
                   if c.windowed else [GLOBAL_WINDOW] * len(keys))
        times = out.column(f"{TS}_{self._time_op}").to_pylist()
        lists = out.column(f"{VALUE}_list").combine_chunks()
        flat, offsets = lists.flatten(), lists.offsets.to_numpy()
        kind = flat.type
        numbers = pa.types.is_integer(kind) or pa.types.is_floating(kind)
        flat = flat.to_numpy(zero_copy_only=False) if numbers else pylist(flat)
        tallies = out.column(f"{TS}_list").to_pylist() if self.tally else [None] * len(keys)
        fn, accs, pick = self.fn, self.accs, max if self._time_op == "max" else min
        for i, (key, window) in enumerate(zip(keys, windows)):
            acc = fn.add_inputs(fn.create_accumulator(), flat[offsets[i]:offsets[i + 1]])
            held = accs.get((key, window))
            if held is None:
                accs[(key, window)] = [acc, times[i], tallies[i]]
            else:
                held[0] = fn.merge_accumulators([held[0], acc])
                held[1] = pick(held[1], times[i])
                if self.tally:
                    held[2] += tallies[i]
        return True

    def partials(self) -> List[WindowedValue]:
        """The accumulators as (key, accumulator) elements for the kernel to merge."""
        return _partial_elements(self.partial_columns())

    def partial_columns(self) -> Tuple[list, list, list, list, list]:
        """`partials` as columns, as `Aggregator.partial_columns` gives them."""
        held, self.accs = self.accs, {}
        windows = [w for _, w in held]
        interval = [type(w) is IntervalWindow for w in windows]
        accs = [Tallied(a, times) if self.tally else a for a, _, times in held.values()]
        return ([k for k, _ in held], accs, [t for _, t, _ in held.values()],
                [w.start_us if i else None for w, i in zip(windows, interval)],
                [w.max_ts + 1 if i else None for w, i in zip(windows, interval)])

    def final(self) -> List[WindowedValue]:
        """The one ON_TIME pane per key and window of a combine that fires once."""
        eow = self.combiner is TimestampCombiner.OUTPUT_AT_EOW
        out = [_raw((key, self.fn.extract_output(acc)), window.max_ts if eow else ts, window,
                    ON_TIME_ONCE, 1)
               for (key, window), (acc, ts, _) in self.accs.items()]
        self.accs = {}
        return out


def time_op(combiner: TimestampCombiner) -> str:
    """The aggregation of the rows' times a pane's time needs: the latest for
    OUTPUT_AT_LATEST, else the earliest (any time in the window serves the end of window)."""
    return "max" if combiner is TimestampCombiner.OUTPUT_AT_LATEST else "min"


def _extremum(value: Any) -> Counter:
    return Counter() if value is None else Counter({value: 1})


def _partial_elements(columns: Tuple[list, list, list, list, list]) -> List[WindowedValue]:
    """Partial accumulators as columns (`partial_columns`) as (key, accumulator) elements."""
    keys, accs, times, starts, ends = columns
    return [_raw((key, acc), t, w, NO_FIRING, 1)
            for key, acc, t, w in zip(keys, accs, times, _windows(starts, ends))]


def _same(x: Any) -> Any:
    return x


_ACCUMULATOR: Dict[type, Callable[..., Any]] = {
    Sum: _same, Count: _same, Mean: lambda s, n: [s, n],
    Min: _extremum, Max: _extremum,
}


# --- writing ------------------------------------------------------------------------------------

def sink_table(c: Columns, annotate: bool, micros: bool = False) -> Optional[Any]:
    """The rows a file sink writes for a bundle, as an Arrow table with the columns its
    `RowMaker` gives elements (the fields, `key`/`value`, or `value`; then, `annotate`, the
    window, time, pane and diff columns, the times in seconds or, `micros`, int64 µs); None
    for keyed bundles (written as elements)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    t = plain(c.table)
    if c.pairs:
        out = {"key": t.column(KEY), "value": t.column(VALUE)}
    elif c.rows:
        out = {n: t.column(n) for n in c.fields()}
    elif c.keys is None:
        out = {"value": t.column(VALUE)}
    else:
        return None
    if annotate and any(name in out for name in EXTRA_NAMES):
        return None   # the elements' way names the clash
    if annotate:
        n = t.num_rows
        time = (lambda us: us) if micros else (   # noqa: E731
            lambda us: pc.divide(pc.cast(us, pa.float64(), safe=False), 1e6))
        if c.windowed:
            out["window_start"] = time(t.column(WS))
            out["window_end"] = time(t.column(WE))
        else:
            out["window_start"] = out["window_end"] = pa.nulls(
                n, pa.int64() if micros else pa.float64())
        out["timestamp"] = time(t.column(TS))
        out["pane_timing"] = pa.array([c.pane.timing.value] * n, pa.string())
        out["pane_index"] = pa.array([c.pane.index] * n, pa.int64())
        out["diff"] = pa.array([1] * n, pa.int64())
    return pa.table(out)


# --- reading ------------------------------------------------------------------------------------

def reads_columns(source: Any) -> bool:
    """Whether a source can be read as columns: a Parquet source whose files all have its
    schema as it is (files whose schemas are unified are read as elements, cast)."""
    import pyarrow as pa
    from ..sdk.io.parquetio import ReadFromParquet
    if not isinstance(source, ReadFromParquet) or source.schema() is None \
            or not source.uniform():
        return False
    field = source.timestamp_field
    if field is None:
        return True
    files = source.files()
    import pyarrow.parquet as pq
    schema = source.schema() if field in source.schema().names else pq.read_schema(files[0])
    if field not in schema.names:
        return False
    kind = schema.field(field).type
    return (pa.types.is_timestamp(kind) and kind.unit != "ns") or pa.types.is_integer(kind) \
        or pa.types.is_floating(kind)


def read_columns(source: Any, paths: Sequence[str], on_bad: Any,
                 batch_rows: int) -> Iterator[Columns]:
    """A Parquet source's rows in batches of columns, timestamped from its timestamp field;
    rows whose time is null or out of range are malformed records (`on_bad`), the rest go on;
    with each batch, the rows read of its file go to `source.meter` (if any)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    field, names = source.timestamp_field, source.schema().names
    for path in paths:
        try:
            # strings as dictionaries: decoding them is most of a read, and grouping by
            # dictionary indices is several times faster; they are decoded where a step
            # needs their values (`plain`)
            text = [f.name for f in source.schema() if pa.types.is_string(f.type)
                    or pa.types.is_large_string(f.type)]
            pf = pq.ParquetFile(path, read_dictionary=text)
        except (pa.ArrowException, OSError) as e:
            source.unreadable(on_bad, path, f"not a readable Parquet file: {e}")
            continue
        columns = names if field is None or field in names else names + [field]
        row = 0
        for batch in source.batches(pf, path, on_bad, batch_rows, columns):
            n = batch.num_rows
            if field is None:
                times = pa.array(np.full(n, MIN_MICROS, np.int64))
            else:
                column = batch.column(field)
                times = _micros(column, source.timestamp_unit, pa, pc)
                if not source.unit_checked and len(column):
                    source.check_unit(pc.max(pc.abs(column)).as_py()
                                      if not pa.types.is_timestamp(column.type) else None)
                ok = pc.and_(pc.is_valid(times), pc.and_(pc.greater(times, MIN_MICROS),
                                                         pc.less(times, MAX_MICROS)))
                ok = pc.fill_null(ok, False)
                if not pc.all(ok).as_py():
                    _bad_rows(source, on_bad, path, row, batch, pc.invert(ok))
                    batch, times = batch.filter(ok), times.filter(ok)
            row += n
            if source.meter is not None:
                source.meter.at(row)
            table = pa.Table.from_batches([batch.select(names)])
            yield Columns(table.append_column(TS, times))


def _micros(column: Any, unit: str, pa: Any, pc: Any) -> Any:
    """Event time (µs) of a timestamp column, or a numeric one counting `unit`s since the
    epoch; null where it is neither."""
    from ..sdk.event_time import TIME_UNITS
    kind = column.type
    if pa.types.is_timestamp(kind):
        return pc.cast(pc.cast(column, pa.timestamp("us", kind.tz)), pa.int64())
    # numbers outside event time's range (or not finite) are null, not an overflow
    num, den = TIME_UNITS[unit]
    bound = min(MAX_MICROS // num * den, 2**63 - 1)   # nanoseconds: any int64
    if pa.types.is_integer(kind):
        x = pc.cast(column, pa.int64(), safe=False) if kind != pa.uint64() else pc.cast(
            pc.if_else(pc.less(column, bound), column, pa.scalar(None, kind)), pa.int64())
        ok = pc.and_(pc.greater(x, -bound), pc.less(x, bound))
        x = pc.if_else(ok, x, pa.scalar(None, pa.int64()))
        return pc.divide(x, den) if den > 1 else pc.multiply(x, num)
    if pa.types.is_floating(kind):
        x = pc.cast(column, pa.float64())
        ok = pc.and_(pc.is_finite(x), pc.less(pc.abs(x), float(bound)))
        x = pc.if_else(ok, x, pa.scalar(None, pa.float64()))
        return pc.cast(pc.round(pc.multiply(x, num / den)), pa.int64())
    return pa.nulls(len(column), pa.int64())


def _bad_rows(source: Any, on_bad: Any, path: str, first: int, batch: Any, bad: Any) -> None:
    """Report the rows of a batch whose time is not usable, each by its row number."""
    indices = bad.to_numpy(zero_copy_only=False).nonzero()[0]
    rows = batch.take(indices).to_pylist()
    for i, record in zip(indices, rows):
        bad_time(source, on_bad, record, path, first + int(i) + 1)


def bad_time(source: Any, on_bad: Any, record: Dict[str, Any], path: str, row: int) -> None:
    """Report a row whose timestamp field is null or out of range, as `path:row` (row from 1),
    saying what is wrong with it as the element path says."""
    from ..sdk.io.base import event_time_micros
    field = source.timestamp_field
    try:
        event_time_micros(record[field], source.timestamp_unit)
        what = "is out of the range of event time"
    except ValueError as e:
        what = str(e)
    source.bad(on_bad, Row(record), path, row, f"timestamp field {field!r} {what}")


#: the relational forms of element-wise steps a columnar runner may compile to its own plan
FILTER, FIELDS, KEY_FIELDS, FIELDS_TO_ROW = "filter", "fields", "key_fields", "fields_to_row"


def relational_form(t: Any) -> Optional[str]:
    """Which relational step an element-wise step is, for a runner compiling it to its own
    columns (Spark SQL): an expression Filter, a map to named fields, a GroupBy's keying or
    its final row; None for any other."""
    if isinstance(t, Filter):
        return FILTER if t.expr is not None else None
    if isinstance(t, FieldsMap):
        return FIELDS
    if isinstance(t, KeyFields):
        return KEY_FIELDS
    if isinstance(t, FieldsToRow):
        return FIELDS_TO_ROW
    return None


def writes_columns(sink: Any) -> bool:
    """Whether a sink writes rows as columns: a Parquet sink."""
    from ..sdk.io.parquetio import WriteToParquet
    return isinstance(sink, WriteToParquet)
