"""CSV files with a header row, read and written with pyarrow."""
from __future__ import annotations

import csv
import json
import os
from typing import Any, Callable, Dict, Iterator, List, Optional, Set

from ...windowing import GLOBAL_WINDOW, MIN_MICROS, NO_FIRING, WindowedValue
from ..schema import SchemaLike
from .base import (FileSink, FileSource, OnBad, PathLike, TableWriter, arrow_table,
                   json_default)

_raw = WindowedValue.raw


class ReadFromCsv(FileSource):
    """The rows (as dicts keyed by the header row) of the CSV files matching a glob pattern.
    Column types are inferred by pyarrow (ints, floats, bools, timestamps, strings; empty
    numeric fields are None). With `timestamp_field`, event time comes from that column
    (seconds since the epoch, ISO-8601 strings or timestamps). A row with the wrong number of
    fields, or whose timestamp is missing or not a time, is a malformed record; a file pyarrow
    cannot parse at all is one malformed record (its path). With `schema` (a pyarrow.Schema or
    a mapping of field name to type) each row becomes a `pm.Row` of those fields, converted
    to their types, and a row that does not fit is a malformed record."""

    def __init__(self, pattern: PathLike, timestamp_field: Optional[str] = None,
                 label: Optional[str] = None, schema: Optional[SchemaLike] = None) -> None:
        super().__init__(pattern, timestamp_field, label, schema)

    def read_file(self, path: str, on_bad: OnBad) -> Iterator[WindowedValue]:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        if os.path.getsize(path) == 0:
            return
        invalid: List[Any] = []

        def on_invalid(row: Any) -> str:
            invalid.append((row.number, row.text, row.expected_columns, row.actual_columns))
            return "skip"
        try:
            # with a schema, its fields are read as text and converted by `conform`
            convert = pacsv.ConvertOptions(
                column_types={f.name: pa.string() for f in self.row_schema or ()},
                strings_can_be_null=self.row_schema is not None)
            table = pacsv.read_csv(
                path, read_options=pacsv.ReadOptions(use_threads=False), convert_options=convert,
                parse_options=pacsv.ParseOptions(invalid_row_handler=on_invalid))
        except (pa.ArrowException, OSError) as e:
            self.bad(on_bad, path, path, None, f"not readable as CSV: {e}")
            return
        lines = _CsvLines(path, {number for number, *_ in invalid})
        for number, text, expected, actual in invalid:
            self.bad(on_bad, text, path, lines.of_row(number),
                     f"expected {expected} fields (as in the header), got {actual}")
        if self.timestamp_field is None and self.row_schema is None:
            for batch in table.to_batches():
                for record in batch.to_pylist():
                    yield _raw(record, MIN_MICROS, GLOBAL_WINDOW, NO_FIRING, 1)
            return
        element, index = self.element, 0
        for batch in table.to_batches():
            for record in batch.to_pylist():
                wv = element(record, on_bad, path, lines.of_record(index))
                index += 1
                if wv is not None:
                    yield wv


class _CsvLines:
    """Physical line numbers for error messages. pyarrow numbers rows (the header is row 1;
    blank lines are not rows; a quoted field may span lines), so when an error needs a line
    the file is scanned again with the csv module for the line each row starts on."""

    def __init__(self, path: str, invalid: Set[Optional[int]]) -> None:
        self.path = path
        self.invalid = invalid
        self.starts: Optional[List[int]] = None  # starts[n - 1]: the line row n starts on
        self.good: Optional[List[int]] = None    # row numbers of the records pyarrow kept

    def of_row(self, number: Optional[int]) -> Callable[[], Any]:
        return lambda: self._line(number)

    def of_record(self, index: int) -> Callable[[], Any]:
        def line() -> Any:
            self._scan()
            assert self.good is not None
            return self._line(self.good[index]) if index < len(self.good) else f"record {index + 1}"
        return line

    def _line(self, number: Optional[int]) -> Any:
        self._scan()
        assert self.starts is not None
        if number is None or not 1 <= number <= len(self.starts):
            return f"row {number}"
        return self.starts[number - 1]

    def _scan(self) -> None:
        if self.starts is not None:
            return
        starts: List[int] = []
        with open(self.path, encoding="utf-8", errors="replace", newline="") as f:
            reader = csv.reader(f)
            previous = 0
            for fields in reader:
                start, previous = previous + 1, reader.line_num
                if fields:
                    starts.append(start)
        self.starts = starts
        self.good = [n for n in range(2, len(starts) + 1) if n not in self.invalid]


def _csv_cell(v: Any) -> Any:
    if isinstance(v, (dict, list, tuple, set, frozenset)):
        return json.dumps(v, default=json_default, ensure_ascii=False)
    return v


def _as_strings(name: str, values: List[Any], error: Exception) -> Any:
    import pyarrow as pa
    return pa.array([None if v is None else str(v) for v in values], type=pa.string())


class _CsvWriter(TableWriter):
    def rows_table(self) -> Any:
        rows: List[Dict[str, Any]] = [{k: _csv_cell(v) for k, v in row.items()} for row in self.rows]
        return arrow_table(rows, self.annotate, self.sink_name, fallback=_as_strings)

    def write_arrow(self, table: Any) -> None:
        import pyarrow as pa
        if any(pa.types.is_nested(f.type) for f in table.schema):   # written as JSON text
            self.rows.extend(table.to_pylist())
        else:
            super().write_arrow(table)

    def write_table(self, table: Any, path: str) -> None:
        import pyarrow.csv as pacsv
        pacsv.write_csv(table, path)


class WriteToCsv(FileSink):
    """Writes the elements as rows of one CSV file with a header row (columns from dict
    fields, or key/value, or value; plus window_start, window_end, timestamp, pane_timing,
    pane_index and diff for windowed or retracting input). Nested values (dicts, lists,
    tuples) are written as JSON; a column mixing types is written as strings."""

    writer_class = _CsvWriter
