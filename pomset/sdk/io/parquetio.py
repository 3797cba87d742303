"""Parquet files, read and written with pyarrow."""
from __future__ import annotations

from typing import Any, Iterator, List, Optional, Sequence

from ...windowing.beam_keywords import beam_keywords
from ...windowing import GLOBAL_WINDOW, MAX_MICROS, MIN_MICROS, NO_FIRING, WindowedValue
from ..schema import rows_of
from .base import FileSink, FileSource, OnBad, PathLike, TableWriter


class ReadFromParquet(FileSource):
    """The rows (as `pm.Row`s of python values) of the Parquet files matching a glob pattern
    (or a directory, or a list of them), optionally only some `columns`. The PCollection's
    schema is the files' (their columns, or the chosen ones). With `timestamp_field`, event
    time comes from that column (a timestamp column, a number of `timestamp_unit`s since the
    epoch, seconds by default, or ISO-8601 strings; read even when not among `columns`). A row whose timestamp is null or not a time
    is a malformed record, reported as `file:N` with N its row number from 1; a file that is
    not Parquet is one malformed record (its path)."""

    batch_size = 65_536

    @beam_keywords(file_pattern="pattern")
    def __init__(self, pattern: PathLike, columns: Optional[Sequence[str]] = None,
                 timestamp_field: Optional[str] = None, label: Optional[str] = None, *,
                 timestamp_unit: str = "s") -> None:
        super().__init__(pattern, timestamp_field, label, timestamp_unit=timestamp_unit)
        if columns is not None:
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise TypeError(f"columns must be a list of column names, got {columns!r}")
            columns = list(columns)
        self.columns: Optional[List[str]] = columns
        self._file_schema: Any = False   # not read yet

    def schema(self) -> Any:
        """The first file's schema (the chosen columns), when every file has the same; None
        when they differ or the first is not Parquet (its rows then fail as malformed)."""
        if self._file_schema is False:
            self._file_schema = _common_schema(self.files(), self.columns)
        return self._file_schema

    def read_size(self, path: str) -> int:
        """How much reading `path` is, in the units its reader reports to `meter`: rows, from
        the file's metadata (0 for a file that is not Parquet)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        try:
            return pq.read_metadata(path).num_rows
        except (pa.ArrowException, OSError):
            return 0

    def read_file(self, path: str, on_bad: OnBad) -> Iterator[WindowedValue]:
        import pyarrow as pa
        import pyarrow.parquet as pq
        try:
            pf = pq.ParquetFile(path)
        except (pa.ArrowException, OSError) as e:
            self.bad(on_bad, path, path, None, f"not a readable Parquet file: {e}")
            return
        field = self.timestamp_field
        columns, drop = self.columns, None
        if columns is not None:
            available = pf.schema_arrow.names
            missing = [c for c in columns if c not in available]
            if missing:
                raise ValueError(f"{self.name}: {path} has no column(s) {missing}; its columns "
                                 f"are {available}")
            if field is not None and field not in columns and field in available:
                columns, drop = columns + [field], field
        element, row, meter = self.element, 0, self.meter
        kind = pf.schema_arrow.field(field).type if field in pf.schema_arrow.names else None
        # A timestamp column in s, ms or µs converts to event time losslessly in Arrow, a
        # batch at a time; other columns (and nulls) go through element() per row.
        vectorized = kind is not None and pa.types.is_timestamp(kind) and kind.unit != "ns"
        for batch in pf.iter_batches(batch_size=self.batch_size, columns=columns):
            records = rows_of(batch)
            times = (batch.column(field).cast(pa.timestamp("us", kind.tz)).cast(pa.int64()).to_pylist()
                     if vectorized else [None] * len(records))
            for record, ts in zip(records, times):
                row += 1
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


def _common_schema(files: List[str], columns: Optional[List[str]]) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        schemas = [pq.read_schema(f) for f in files]
    except (pa.ArrowException, OSError):
        return None
    first = schemas[0].remove_metadata()
    if any(not s.remove_metadata().equals(first) for s in schemas[1:]):
        return None
    if columns is not None:
        if any(c not in first.names for c in columns):
            return None
        first = pa.schema([first.field(c) for c in columns])
    return first


#: the extra columns a Parquet sink writes as timestamps (µs, UTC), not seconds
TIME_COLUMNS = ("window_start", "window_end", "timestamp")
#: the instants a timestamp column can hold for its readers (Python's datetime: years 1 to
#: 9999); the end of the global window, after them, is written as null
DATETIME_MICROS = (-62_135_596_800_000_000, 253_402_300_799_999_999)


class _ParquetWriter(TableWriter):
    def write_table(self, table: Any, path: str) -> None:
        import pyarrow.parquet as pq
        if self.annotate:
            table = _as_timestamps(table)
        pq.write_table(table, path, compression=self.sink.compression)


def _as_timestamps(table: Any) -> Any:
    """The window bounds and event time, which the rows carry as float seconds, as Parquet
    timestamps (µs, UTC): exact within years 1 to 9999, where seconds since the epoch as a
    float64 still resolve a microsecond; null beyond them (the end of the global window)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    low, high = DATETIME_MICROS[0] / 1e6, DATETIME_MICROS[1] / 1e6
    for name in TIME_COLUMNS:
        i = table.schema.get_field_index(name)
        column = table.column(i)
        if pa.types.is_floating(column.type):
            inside = pc.and_(pc.greater_equal(column, low), pc.less_equal(column, high))
            column = pc.if_else(inside, column, pa.scalar(None, column.type))
            micros = pc.cast(pc.round(pc.multiply(column, 1e6)), pa.int64())
            table = table.set_column(i, name, micros.cast(pa.timestamp("us", tz="UTC")))
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

    @beam_keywords(file_path_prefix="path_prefix")
    def __init__(self, path_prefix: PathLike, file_name_suffix: str = "",
                 compression: str = "snappy", label: Optional[str] = None, *,
                 num_shards: int = 0, shard_name_template: Optional[str] = None) -> None:
        super().__init__(path_prefix, file_name_suffix, label, num_shards=num_shards,
                         shard_name_template=shard_name_template)
        self.compression = compression
