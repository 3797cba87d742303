"""Parquet files, read and written with pyarrow."""
from __future__ import annotations

from typing import Any, Iterator, List, Optional, Sequence

from ...windowing.beam_keywords import beam_keywords
from ...windowing import GLOBAL_WINDOW, MAX_MICROS, MIN_MICROS, NO_FIRING, WindowedValue
from ...windowing.time import GLOBAL_WINDOW_MAX_MICROS
from ..schema import rows_of
from .base import TIME_COLUMNS, FileSink, FileSource, OnBad, PathLike, TableWriter
from .parquet_schema import (SCHEMA_MISMATCH, FileSchemas, SchemaMismatchError,  # noqa: F401
                             conform_batch, unify_files)


class ReadFromParquet(FileSource):
    """The rows (as `pm.Row`s of python values) of the Parquet files matching a glob pattern
    (or a directory, or a list of them), optionally only some `columns`. The PCollection's
    schema is the files' (their columns, or the chosen ones), unified by Arrow's promotion
    (`parquet_schema`): a column int64 in one file and double in another is double, one some
    files lack is null in their rows. A column whose types do not unify (int64 and string)
    fails the source before any row is read, naming the column and the files of each type,
    or, with `schema_mismatch="dead_letter"`, makes each file that does not fit one malformed
    record (its path). A value that does not fit its column's unified type (an int64 a double
    cannot hold exactly) is a malformed record. With `timestamp_field`, event time comes from
    that column (a timestamp column, a number of `timestamp_unit`s since the epoch, seconds by
    default, or ISO-8601 strings; read even when not among `columns`). A row whose timestamp
    is null or not a time is a malformed record, reported as `file:N` with N its row number
    from 1. A file that is not Parquet, or whose data is damaged, cannot be read: a
    `CorruptInputError` naming it (and the rows read before the damage), or one dead letter
    (its path) with `.with_exception_handling()`."""

    batch_size = 65_536

    @beam_keywords(file_pattern="pattern")
    def __init__(self, pattern: PathLike, columns: Optional[Sequence[str]] = None,
                 timestamp_field: Optional[str] = None, label: Optional[str] = None, *,
                 timestamp_unit: str = "s", schema_mismatch: str = "fail") -> None:
        super().__init__(pattern, timestamp_field, label, timestamp_unit=timestamp_unit)
        if columns is not None:
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise TypeError(f"columns must be a list of column names, got {columns!r}")
            columns = list(columns)
        if schema_mismatch not in SCHEMA_MISMATCH:
            raise ValueError(f"schema_mismatch must be 'fail' or 'dead_letter', got "
                             f"{schema_mismatch!r}")
        self.columns: Optional[List[str]] = columns
        self.schema_mismatch = schema_mismatch
        self._file_schemas: Optional[FileSchemas] = None   # not read yet

    def file_schemas(self) -> FileSchemas:
        """The files' unified schema (the chosen columns and the timestamp field), read from
        their footers once."""
        if self._file_schemas is None:
            wanted = self.columns
            field = self.timestamp_field
            if wanted is not None and field is not None and field not in wanted:
                wanted = wanted + [field]
            self._file_schemas = unify_files(self.name, self.files(), wanted,
                                             self.schema_mismatch)
        return self._file_schemas

    def schema(self) -> Any:
        """The files' unified schema (the chosen columns); None when no file is Parquet or a
        chosen column is in none of them (the read then fails naming it)."""
        import pyarrow as pa
        unified = self.file_schemas().schema
        if unified is None or self.columns is None:
            return unified
        if any(c not in unified.names for c in self.columns):
            return None
        return pa.schema([unified.field(c) for c in self.columns])

    def uniform(self) -> bool:
        """Whether every file is Parquet with exactly the unified schema (so a reader of
        columns may read them as they are)."""
        return self.file_schemas().uniform

    def read_size(self, path: str) -> int:
        """How much reading `path` is, in the units its reader reports to `meter`: rows, from
        the file's metadata (0 for a file that is not Parquet)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        try:
            return pq.read_metadata(path).num_rows
        except (pa.ArrowException, OSError):
            return 0

    def batches(self, pf: Any, path: str, on_bad: OnBad, batch_rows: int,
                columns: List[str]) -> Iterator[Any]:
        """The record batches of an open Parquet file; data damaged past its footer ends the
        file as unreadable (`unreadable`), naming how many rows were read before it."""
        import pyarrow as pa
        reads, row = pf.iter_batches(batch_size=batch_rows, columns=columns), 0
        while True:
            try:
                batch = next(reads)
            except StopIteration:
                return
            except (pa.ArrowException, OSError) as e:
                self.unreadable(on_bad, path, f"damaged after row {row}: {e}")
                return
            row += batch.num_rows
            yield batch

    def read_file(self, path: str, on_bad: OnBad) -> Iterator[WindowedValue]:
        import pyarrow as pa
        import pyarrow.parquet as pq
        schemas = self.file_schemas()
        if path in schemas.rejected:
            self.bad(on_bad, path, path, None, schemas.rejected[path])
            return
        try:
            pf = pq.ParquetFile(path)
        except (pa.ArrowException, OSError) as e:
            self.unreadable(on_bad, path, f"not a readable Parquet file: {e}")
            return
        field = self.timestamp_field
        available = pf.schema_arrow.names
        if self.columns is not None:
            missing = [c for c in self.columns if c not in available]
            if missing:
                raise ValueError(f"{self.name}: {path} has no column(s) {missing}; its columns "
                                 f"are {available}")
        target = pf.schema_arrow if schemas.schema is None else schemas.schema
        drop = field if (self.columns is not None and field not in self.columns
                         and field in target.names) else None
        element, row, meter = self.element, 0, self.meter
        kind = target.field(field).type if field in target.names else None
        # A timestamp column in s, ms or µs converts to event time losslessly in Arrow, a
        # batch at a time; other columns (and nulls) go through element() per row.
        vectorized = kind is not None and pa.types.is_timestamp(kind) and kind.unit != "ns"
        columns = [n for n in target.names if n in available]
        for read in self.batches(pf, path, on_bad, self.batch_size, columns):
            batch, misfits = conform_batch(read, target)
            records = rows_of(batch)
            times = (batch.column(field).cast(pa.timestamp("us", kind.tz)).cast(pa.int64()).to_pylist()
                     if vectorized else [None] * len(records))
            for i, (record, ts) in enumerate(zip(records, times)):
                row += 1
                if i in misfits:
                    self.bad(on_bad, rows_of(read.slice(i, 1))[0], path, row, misfits[i])
                    continue
                if ts is not None and MIN_MICROS < ts < MAX_MICROS:
                    wv = WindowedValue.raw(record, ts, GLOBAL_WINDOW, NO_FIRING, 1)
                else:
                    wv = element(record, on_bad, path, row)
                if wv is not None:
                    if drop is not None:
                        del record[drop]
                    yield wv
            if meter is not None:
                meter.at(row)


class _ParquetWriter(TableWriter):
    time_micros = True

    def write_table(self, table: Any, path: str) -> None:
        import pyarrow.parquet as pq
        if self.annotate:
            table = _as_timestamps(table)
        pq.write_table(table, path, compression=self.sink.compression)


#: the times a Parquet sink writes as null, being no element's own: event time's minimum (an
#: element never timestamped) and, from it on, the end of the global window (its panes' time)
NO_TIME_MICROS = (MIN_MICROS, GLOBAL_WINDOW_MAX_MICROS)


def _as_timestamps(table: Any) -> Any:
    """The window bounds and event time, which the rows carry as int64 µs, as Parquet
    timestamps (µs, UTC): exact for every event time, before year 1 and after 9999 too;
    null for `NO_TIME_MICROS` and the global window's bounds."""
    import pyarrow as pa
    import pyarrow.compute as pc
    low, high = NO_TIME_MICROS
    for name in TIME_COLUMNS:
        i = table.schema.get_field_index(name)
        column = table.column(i)
        if pa.types.is_integer(column.type):
            timed = pc.and_(pc.greater(column, low), pc.less(column, high))
            column = pc.if_else(timed, column, pa.scalar(None, column.type))
            table = table.set_column(i, name, column.cast(pa.timestamp("us", tz="UTC")))
    return table


class WriteToParquet(FileSink):
    """Writes the elements as rows of one Parquet file (columns from dict fields, or
    key/value, or value; plus window_start, window_end, timestamp (Parquet timestamps, µs,
    UTC), pane_timing, pane_index and
    diff for windowed or retracting input). Each column must hold values of one Arrow type.

    Shards: where the Spark batch runner writes schema'd rows natively (its columnar plan),
    Spark's tasks write the file as shards `{prefix}-SSSSS-of-NNNNN{suffix}` (Beam's names;
    one shard is the usual `-00000-of-00001`), replacing the shards an earlier run left under
    this prefix; read them all with the glob `{prefix}-*-of-*{suffix}` (`output_files`)."""

    writer_class = _ParquetWriter
    default_suffix = ".parquet"

    @beam_keywords(file_path_prefix="path_prefix")
    def __init__(self, path_prefix: PathLike, file_name_suffix: Optional[str] = None,
                 compression: str = "snappy", label: Optional[str] = None, *,
                 num_shards: int = 0, shard_name_template: Optional[str] = None) -> None:
        super().__init__(path_prefix, file_name_suffix, label, num_shards=num_shards,
                         shard_name_template=shard_name_template)
        self.compression = compression
