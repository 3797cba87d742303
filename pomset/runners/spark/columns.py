"""Schema'd PCollections of a batch plan as Spark's own columns (`Columnar`), so that a
relational pipeline (a Parquet read, `Select`/`WithColumns`/`Filter` by expression, fixed or
sliding windows, `GroupBy(...).aggregate_field` with built-in combiners, a Parquet sink) is
one Spark SQL plan with no Python in it.

A `Columnar` is a DataFrame of the rows' fields as real columns, plus `__ts` (event time, int64
µs) and, for windowed rows, `__ws`/`__we` (the interval window's start and end µs; absent:
the global window). Pane and diff are implied, as in `runtime/columnar.py`: NO_FIRING and +1
before any grouping, ON_TIME_ONCE after an aggregation that fires once. A keyed one (after
`KeyFields`, or an aggregation before `FieldsToRow`) names its key and value columns.

What runs natively is decided by the runtime's predicates (`reads_columns`, `native_combine`,
`fires_once`, the windows' `window_geometry`); where a Columnar meets a step that needs
elements, `head` turns its Arrow batches into elements in the task of that step (the one
conversion, `Columns.elements`: `pm.Row` values, or (key, values) pairs)."""
from __future__ import annotations

import glob
import os
import shutil
import uuid
from typing import Any, Dict, Iterator, List, Optional
from urllib.parse import unquote, urlparse

import pyarrow as pa

from ...runtime.columnar import (FIELDS, FIELDS_TO_ROW, FILTER, KEY, KEY_FIELDS, ON_TIME_ONCE,
                                 TS, VALUE, WE, WS, Columns, bad_time, fires_once,
                                 native_combine, native_step, picked_fields, reads_columns,
                                 relational_form, window_geometry, writes_columns)
from ...sdk.combinefn import Count, Max, Mean, Min, Sum
from ...sdk.expressions import Expr, kind
from ...sdk.event_time import TIME_UNITS
from ...sdk.io.base import EXTRA_NAMES, annotates
from ...sdk.io.parquetio import NO_TIME_MICROS
from ...sdk.relational import FieldsCombineFn
from ...windowing import (GLOBAL_WINDOW, MAX_MICROS, MIN_MICROS, NO_FIRING, PaneInfo,
                          TimestampCombiner, WindowedValue)
from ...windowing.windowfns import GlobalWindows
from .expressions import to_spark

META = (TS, WS, WE)


def _c(name: str) -> Any:
    """The column `name`, whatever characters it has."""
    from pyspark.sql import functions as F
    return F.col("`" + name.replace("`", "``") + "`")


class Columnar:
    """A PCollection as Spark columns (see the module's docstring). `schema` is the Arrow
    schema of the fields (None for a keyed one); `keys`/`values` name a keyed one's columns,
    `value_types` the values' Arrow types."""

    def __init__(self, df: Any, schema: Any, windowed: bool, pane: PaneInfo = NO_FIRING,
                 keys: Optional[List[str]] = None, values: Optional[List[str]] = None,
                 value_types: Optional[List[Any]] = None, pairs: bool = False) -> None:
        self.df, self.schema, self.windowed, self.pane = df, schema, windowed, pane
        self.keys, self.values, self.value_types = keys, values, value_types
        self.pairs = pairs   # (key, value) pairs of `__key` and `__value` (a picking Map's)

    @property
    def rows(self) -> bool:
        """Whether the elements are rows of the fields (not keyed, pairs or plain values)."""
        return self.keys is None and self.values is None

    def fields(self) -> List[str]:
        return [n for n in self.df.columns if n not in META]

    def meta(self) -> List[Any]:
        """The event time and window columns."""
        return [_c(n) for n in ((TS, WS, WE) if self.windowed else (TS,))]

    def with_df(self, df: Any, **changes: Any) -> "Columnar":
        out = Columnar(self.df, self.schema, self.windowed, self.pane, self.keys, self.values,
                       self.value_types, self.pairs)
        out.df = df
        for name, value in changes.items():
            setattr(out, name, value)
        return out

    def head(self) -> Any:
        """A function of an Arrow batch of these columns giving its elements (one bundle),
        for `Steps`: the one place columns become elements."""
        pane, keys, values, schema = self.pane, self.keys, self.values, self.schema
        pairs = self.pairs

        def elements(b: pa.RecordBatch) -> Iterator[List[WindowedValue]]:
            table = _conform(pa.Table.from_batches([b]), schema)
            yield Columns(table, pane, keys, values, pairs).elements()
        return elements


def _conform(table: Any, schema: Any) -> Any:
    """The fields as the PCollection's schema types them where Spark typed them otherwise
    (a time zone's name, say), so the rows' values are the element path's."""
    if schema is None:
        return table
    for i, name in enumerate(table.column_names):
        if name in schema.names:
            want = schema.field(name).type
            if table.schema.field(i).type != want:
                try:
                    table = table.set_column(i, name, table.column(i).cast(want))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    pass
    return table


# --- reading ------------------------------------------------------------------------------------

def reads_natively(t: Any) -> bool:
    """Whether Spark reads the source itself: Parquet files the runtime reads as columns,
    whose names Hadoop's paths can hold (not a ':' in a file's name)."""
    return (reads_columns(t)
            and not any(":" in os.path.basename(f) for f in t.files()))


def _event_micros(column: Any, kind_of: Any, spark_type: Any, unit: str) -> Any:
    """Event time (µs) of the timestamp field as the element path reads it: a timestamp as its
    instant (a naive one, Spark's TIMESTAMP_NTZ, taken as UTC whatever the session's time
    zone), a number as `unit`s since the epoch (floats rounded half to even, integers of a
    finer unit than µs toward zero); null where it is not a time within event time's
    range."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType
    num, den = TIME_UNITS[unit]
    bound = min(MAX_MICROS // num * den, 2**63 - 1)   # nanoseconds: any int64
    if isinstance(spark_type, TimestampNTZType):
        micros = F.unix_micros(F.to_utc_timestamp(column.cast("timestamp"),
                                                  F.current_timezone()))
    elif pa.types.is_timestamp(kind_of):
        micros = F.unix_micros(column.cast("timestamp"))
    elif pa.types.is_integer(kind_of):
        x = column.cast("long")
        scaled = (x * F.lit(num) if den == 1   # exact, toward zero, as the local paths
                  else (x.cast("decimal(38,0)") / F.lit(den)).cast("long"))
        micros = F.when((x > -bound) & (x < bound), scaled)
    else:
        x = column.cast("double")
        micros = F.when(~F.isnan(x) & (F.abs(x) < float(bound)),
                        F.bround(x * (num / den)).cast("long"))
    return F.when((micros > MIN_MICROS) & (micros < MAX_MICROS), micros)


def read_parquet(plan: Any, t: Any, node: Any) -> Dict[Optional[str], Any]:
    """The source's files read by Spark (which splits large files by row groups); event time
    from the timestamp field. Rows whose time is null or out of range are found with one
    filtered count; they go to the dead-letter output (named `file:row`, as the element path
    names them), or without one the run fails naming the first."""
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F
    files, schema, field = t.files(), t.schema(), t.timestamp_field
    names = list(schema.names)
    df = plan.spark.read.parquet(*files)
    footers = [pq.ParquetFile(f).metadata for f in files]   # read once, used twice
    total = sum(m.num_rows for m in footers)
    if field is None:
        plan.counts[node.label] = {"read": total}
        out = df.select(*[_c(n) for n in names], F.lit(MIN_MICROS).cast("long").alias(TS))
        return {None: Columnar(out, schema, False)}
    kind_of = pq.read_schema(files[0]).field(field).type
    df = df.withColumn(TS, _event_micros(_c(field), kind_of, df.schema[field].dataType,
                                         t.timestamp_unit))
    bad = df.filter(F.col(TS).isNull())
    # the time column alone is read, unless the files' statistics already say it is clean
    n_bad = 0 if _times_clean(footers, field, t.timestamp_unit) else bad.count()
    counts = plan.counts[node.label] = {"read": total - n_bad}
    outs: Dict[Optional[str], Any] = {}
    if t.dead_letter_tag is not None:
        counts["dead_lettered"] = n_bad
    if n_bad:
        letters = _bad_letters(t, node.label, files, bad, names, field,
                               every=t.dead_letter_tag is not None)
        if t.dead_letter_tag is not None:
            outs[t.dead_letter_tag] = plan.element_df(letters)
    elif t.dead_letter_tag is not None:
        outs[t.dead_letter_tag] = plan.element_df([])
    main = df.filter(F.col(TS).isNotNull()) if n_bad else df
    outs[None] = Columnar(main.select(*[_c(n) for n in names], F.col(TS)), schema, False)
    return outs


def _times_clean(footers: List[Any], field: str, unit: str) -> bool:
    """Whether the Parquet footers show every row's time usable: in every row group of every
    file, the field's statistics count no nulls, and its minimum and maximum (a timestamp
    in s, ms or µs, or integers of `unit`, s, ms or µs) lie within event time. False when
    they cannot tell (no statistics, floats, nanosecond integers, anything else)."""
    per_unit = {"s": 1_000_000, "ms": 1_000, "us": 1}
    for meta in footers:
        kind_of = meta.schema.to_arrow_schema().field(field).type
        if pa.types.is_timestamp(kind_of) and kind_of.unit in per_unit:
            scale = per_unit[kind_of.unit]
        elif pa.types.is_integer(kind_of):
            if TIME_UNITS[unit][1] != 1:
                return False
            scale = TIME_UNITS[unit][0]
        else:
            return False
        leaves = [meta.schema.column(j).path for j in range(meta.num_columns)]
        if field not in leaves:
            return False
        index = leaves.index(field)
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(index).statistics
            if stats is None or not stats.has_null_count or stats.null_count \
                    or not stats.has_min_max:
                return False
            low, high = stats.min_raw, stats.max_raw
            if not (isinstance(low, int) and isinstance(high, int)
                    and MIN_MICROS < low * scale and high * scale < MAX_MICROS):
                return False
    return True


def _bad_letters(t: Any, label: str, files: List[str], bad: Any, names: List[str], field: str,
                 every: bool) -> List[WindowedValue]:
    """The bad rows as dead letters, in file and row order (only the first, which fails the
    run, when there is no dead-letter output): Spark's `_metadata` gives each row's file and
    its index in it."""
    from pyspark.sql import functions as F
    fields = names if field in names else names + [field]
    rows = (bad.select(*[_c(n) for n in fields], F.col("_metadata.file_path").alias("__file"),
                       F.col("_metadata.row_index").alias("__row"))
            .orderBy("__file", "__row"))
    if not every:
        rows = rows.limit(1)
    by_path = {os.path.abspath(f): f for f in files}
    into: List[WindowedValue] = []
    on_bad = t.dead_letters(label, into)   # raises, naming the row, without a dead-letter output
    for record in rows.toArrow().to_pylist():
        uri = record.pop("__file")
        path = unquote(urlparse(uri).path) if uri.startswith("file:") else uri
        row = record.pop("__row") + 1
        # the element is the row as read, the timestamp field included (as on the element path)
        bad_time(t, on_bad, record, by_path.get(path, path), row)
    return into


# --- element-wise steps -------------------------------------------------------------------------

def par_do(c: Columnar, t: Any, node: Any) -> Optional[Columnar]:
    """The step on columns, or None when it calls Python per row (or has several outputs)."""
    if len(node.outputs) != 1 or t.dead_letter_tag is not None:
        return None
    if native_step(t, node.inputs[0].schema) is None:   # the runtime's decision: Python per row
        return None
    # of the steps the runtime runs natively, Spark compiles these (a batched DoFn or a Map
    # picking fields runs as elements here)
    df, form = c.df, relational_form(t)
    if form == FILTER and c.rows:
        return c.with_df(df.filter(to_spark(t.expr, c.schema)))
    if form == FIELDS and c.rows and _exprs(t.fields.values()):
        computed = {n: to_spark(e, c.schema).alias(n) for n, e in t.fields.items()}
        columns = []
        if t.keep_input:
            columns = [computed.pop(n) if n in computed else _c(n) for n in c.fields()]
        columns += list(computed.values())
        return c.with_df(df.select(*columns, *c.meta()), schema=node.outputs[None].schema)
    if form == KEY_FIELDS and c.rows and t.keys and not t.force_tuple and _exprs(
            list(t.keys.values()) + [a.values for a in t.aggregations]):
        keys = [to_spark(e, c.schema).alias(n) for n, e in t.keys.items()]
        if t.aggregations:
            values = [f"__v{i}" for i in range(len(t.aggregations))]
            value_columns = [to_spark(a.values, c.schema).alias(v)
                             for v, a in zip(values, t.aggregations)]
            types = [a.values.output_type(c.schema) for a in t.aggregations]
        else:
            values, types = [], []
            value_columns = [_c(n) for n in c.fields() if n not in t.keys]
        return c.with_df(df.select(*keys, *value_columns, *c.meta()), schema=None,
                         keys=list(t.keys), values=values, value_types=types)
    picked = picked_fields(t, c.schema) if c.rows else None
    if picked is not None:
        named = [VALUE] if len(picked) == 1 else [KEY, VALUE]
        columns = [to_spark(e, c.schema).alias(n) for n, e in zip(named, picked)]
        types = [picked[-1].output_type(c.schema)]
        if len(picked) == 1:
            return c.with_df(df.select(*columns, *c.meta()), schema=None, keys=None,
                             values=[VALUE], value_types=types)
        return c.with_df(df.select(*columns, *c.meta()), schema=None, keys=[KEY],
                         values=[VALUE], value_types=types, pairs=True)
    if form == FIELDS_TO_ROW and c.keys is not None and c.values == list(t.names):
        return c.with_df(df, schema=t.schema, keys=None, values=None, value_types=None)
    return None


def _exprs(fields: Any) -> bool:
    return all(isinstance(f, Expr) for f in fields)


def window_into(c: Columnar, t: Any) -> Optional[Columnar]:
    """Fixed, sliding and global windows as columns; None for any other WindowFn."""
    fn = t.window_fn
    if fn is None:
        return c
    df = c.df.drop(WS, WE) if c.windowed else c.df
    if type(fn) is GlobalWindows:
        return c.with_df(df, windowed=False)
    geometry = window_geometry(fn)
    if geometry is None:
        return None
    df, start = window_starts(df, TS, *geometry)
    fields = [_c(n) for n in c.fields()]
    return c.with_df(df.select(*fields, _c(TS), start.alias(WS),
                               (start + geometry[0]).alias(WE)), windowed=True)


def window_starts(df: Any, ts_name: str, size: int, period: int, offset: int) -> Any:
    """(df, start): the window starts of each row as a column, a row per window that holds its
    time (starts aligned to `offset`, every `period`, latest first, as the WindowFns' own
    `_assign`); shared by element rows (`batch._assign_by_columns`) and columns."""
    from pyspark.sql import functions as F
    ts = F.col(ts_name)
    latest = ts - F.pmod(ts - F.lit(offset), F.lit(period))
    count = -(-size // period)
    if count == 1:   # one window at most: none when windows leave gaps and the time is in one
        return (df, latest) if size >= period else (df.filter(latest > ts - F.lit(size)), latest)
    df = df.withColumn("__i", F.explode(F.sequence(F.lit(0), F.lit(count - 1))))
    start = latest - F.col("__i") * F.lit(period)
    return df.filter(start > ts - F.lit(size)), start


# --- aggregation --------------------------------------------------------------------------------

def combine(c: Columnar, t: Any, node: Any) -> Optional[Columnar]:
    """A combine of built-in aggregations that fires once, as Spark's groupBy over the keys and
    the window: one ON_TIME pane per key and window, at the time the strategy's timestamp
    combiner gives; nulls skipped as SQL does, an empty Sum 0, an empty Mean NaN, an empty
    Min/Max null (or its default), as `FieldsCombineFn` gives them. None when it is not such
    a combine (then the kernel runs it over elements)."""
    from pyspark.sql import functions as F
    pcoll = node.inputs[0]
    strategy = pcoll.windowing
    if c.keys is None or not c.values or not (
            native_combine(t, strategy, bool(pcoll.may_retract)) and fires_once(strategy)):
        return None
    fn = t.combine_fn
    if c.pairs:
        return _combine_pairs(c, fn, strategy)
    if not isinstance(fn, FieldsCombineFn):
        return None
    aggs = []
    for v, a, f, kind_of in zip(c.values, fn.aggregations, fn.fns, c.value_types):
        x = F.col(v)
        numeric = kind(kind_of) in ("int", "float")
        if isinstance(f, Sum) and numeric:
            agg = F.coalesce(F.sum(x), F.lit(0).cast("long" if kind(kind_of) == "int" else
                                                     "double"))
        elif isinstance(f, Mean) and numeric:
            agg = F.coalesce(F.avg(x), F.lit(float("nan")))
        elif isinstance(f, Count):
            agg = F.count(x)
        elif isinstance(f, (Min, Max)) and kind(kind_of) in ("int", "float", "string",
                                                             "timestamp", "bool"):
            agg = (F.min if isinstance(f, Min) else F.max)(x)
            if f.default is not None:
                agg = F.coalesce(agg, F.lit(f.default))
        else:
            return None
        aggs.append(agg.alias(a.name))
    names = [a.name for a in fn.aggregations]
    out = _group_by(c, c.keys, aggs, names, strategy.timestamp_combiner)
    return c.with_df(out, pane=ON_TIME_ONCE, values=names, value_types=None)


def _group_by(c: Columnar, keys: List[str], aggs: List[Any], names: List[str],
              combiner: TimestampCombiner) -> Any:
    """The aggregations per key and window, as (keys, names, time, window) columns: one
    ON_TIME pane each, at the time the timestamp combiner gives."""
    from pyspark.sql import functions as F
    if combiner is TimestampCombiner.OUTPUT_AT_LATEST:
        aggs = aggs + [F.max(TS).alias(TS)]
    elif combiner is not TimestampCombiner.OUTPUT_AT_EOW:
        aggs = aggs + [F.min(TS).alias(TS)]
    window = [F.col(WS), F.col(WE)] if c.windowed else []
    grouped = c.df.groupBy(*[_c(k) for k in keys], *window).agg(*aggs)
    if combiner is TimestampCombiner.OUTPUT_AT_EOW:
        ts = (F.col(WE) - 1) if c.windowed else F.lit(GLOBAL_WINDOW.max_ts).cast("long")
    else:
        ts = F.col(TS)
    return grouped.select(*[_c(k) for k in keys], *[_c(n) for n in names], ts.alias(TS),
                          *window)


def _combine_pairs(c: Columnar, fn: Any, strategy: Any) -> Optional[Columnar]:
    """One built-in CombineFn over picked (key, value) pairs, as Spark's groupBy. The Python
    CombineFn fails on a None value (but `Count` counts it): so does this, in the task that
    meets one."""
    from pyspark.sql import functions as F
    x = F.col(VALUE)
    kind_of = kind(c.value_types[0])
    if isinstance(fn, Count):
        agg = F.count(F.lit(1))
    elif isinstance(fn, (Sum, Mean)) and kind_of in ("int", "float"):
        agg = F.sum(x) if isinstance(fn, Sum) else F.avg(x)
    elif isinstance(fn, (Min, Max)) and kind_of in ("int", "float", "string", "timestamp",
                                                      "bool"):
        agg = (F.min if isinstance(fn, Min) else F.max)(x)
    else:
        return None
    if not isinstance(fn, Count):
        guard = F.when(F.count(F.lit(1)) > F.count(x), F.raise_error(F.lit(
            f"{type(fn).__name__} of a None value: the combine's input has a null")))
        agg = F.coalesce(guard, agg)
    out = _group_by(c, [KEY], [agg.alias(VALUE)], [VALUE], strategy.timestamp_combiner)
    return c.with_df(out, pane=ON_TIME_ONCE, value_types=None)


# --- writing ------------------------------------------------------------------------------------

def parquet_output(c: Columnar, sink: Any, pcoll: Any) -> Optional[Any]:
    """The DataFrame a Parquet sink writes for these rows, with the columns and types the
    element path writes: the Row's fields (integers as int64, floats as float64: Python's
    values), then, for windowed input, window_start, window_end, timestamp (timestamps),
    pane_timing, pane_index and diff. None when the element path must write it (keyed
    rows, a field clashing with those columns)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    if not writes_columns(sink) or (c.keys is not None and not c.pairs):
        return None
    if c.pairs:   # as the element path writes (key, value) pairs, and plain values
        c = c.with_df(c.df.select(F.col(KEY).alias("key"), F.col(VALUE).alias("value"),
                                  *c.meta()), keys=None, values=None, pairs=False)
    elif c.keys is None and c.values is not None:
        c = c.with_df(c.df.select(F.col(VALUE).alias("value"), *c.meta()), values=None)
    annotate = annotates(pcoll)
    fields = c.fields()
    if annotate and any(n in EXTRA_NAMES for n in fields):
        return None
    kinds = {f.name: f.dataType for f in c.df.schema.fields}
    columns = []
    for n in fields:
        t = kinds[n]
        if isinstance(t, (T.ByteType, T.ShortType, T.IntegerType)):
            columns.append(_c(n).cast("long").alias(n))
        elif isinstance(t, T.FloatType):
            columns.append(_c(n).cast("double").alias(n))
        else:
            columns.append(_c(n))
    if annotate:   # times as Parquet timestamps (µs, UTC, exact), as the element path writes them
        low, high = NO_TIME_MICROS
        micros = lambda name: F.timestamp_micros(F.when(   # noqa: E731
            (F.col(name) > low) & (F.col(name) < high), F.col(name)))
        null = F.lit(None).cast("timestamp")
        pane = c.pane
        columns += [(micros(WS) if c.windowed else null).alias("window_start"),
                    (micros(WE) if c.windowed else null).alias("window_end"),
                    micros(TS).alias("timestamp"),
                    F.lit(pane.timing.value).alias("pane_timing"),
                    F.lit(pane.index).cast("long").alias("pane_index"),
                    F.lit(1).cast("long").alias("diff")]
    out = c.df.select(*columns)
    # Every column as the element path's (nullable): a condition Spark cannot fold keeps a
    # column that cannot be null (a count, a constant) nullable in the file's schema.
    never = F.spark_partition_id() < 0
    return out.select(*[F.when(never, F.lit(None)).otherwise(_c(f.name)).alias(f.name)
                        if not f.nullable else _c(f.name) for f in out.schema.fields])


def write_parquet(spark: Any, df: Any, sink: Any) -> List[str]:
    """Spark writes the DataFrame's parts to a temporary directory beside the prefix; they are
    renamed to the sink's shards (`FileSink.shard_path`: Beam's names), after any shards of
    an earlier run with this prefix and suffix are removed; one part when the sink asks for
    one shard or its shard names cannot tell shards apart. The shards' paths."""
    prefix = sink.path_prefix
    folder = os.path.dirname(os.path.abspath(prefix))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(prefix)}.{uuid.uuid4().hex}.inprogress")
    conf = "spark.sql.parquet.outputTimestampType"
    before = spark.conf.get(conf)
    spark.conf.set(conf, "TIMESTAMP_MICROS")   # what pyarrow writes, not Spark's INT96
    if sink.num_shards == 1 or "S" not in sink.shard_name_template:
        df = df.coalesce(1)
    try:
        df.write.option("compression", str(sink.compression).lower()).parquet(tmp)
    except Exception:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        spark.conf.set(conf, before)
    parts = sorted(glob.glob(os.path.join(tmp, "part-*")))
    if not parts:   # nothing written (Spark writes a part even for no rows, but be sure)
        import pyarrow.parquet as pq
        parts = [os.path.join(tmp, "part-empty.parquet")]
        pq.write_table(df.limit(0).toArrow(), parts[0])
    for old in glob.glob(sink.shard_glob()):
        os.remove(old)
    n = len(parts)
    shards = [sink.shard_path(i, n) for i in range(n)]
    for part, shard in zip(parts, shards):
        os.replace(part, shard)
    shutil.rmtree(tmp, ignore_errors=True)
    return shards
