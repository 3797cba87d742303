"""CSV files, read and written with pyarrow; columns typed without losing data
(`csv_types`)."""
from __future__ import annotations

import codecs
import csv
import io
import itertools
import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from ...windowing.beam_keywords import beam_keywords
from ...windowing import GLOBAL_WINDOW, MIN_MICROS, NO_FIRING, WindowedValue
from ..errors import PipelineConstructionError
from ..schema import SchemaLike, row_type
from .base import (FileSink, FileSource, OnBad, PathLike, TableWriter, arrow_table,
                   json_text, not_text)
from .csv_types import SAMPLE_ROWS, declared_types, infer_types, typed_columns

_raw = WindowedValue.raw


#: rows given out between reports of a file's progress (`FileSource.meter`)
PROGRESS_ROWS = 16_384


class ReadFromCsv(FileSource):
    """The rows (`pm.Row`s, which are dicts, keyed by the header row) of the CSV files
    matching a glob pattern.

    Each column's type is decided once, from the first 1,000 rows of the first file read
    (`csv_types`): integers, floats, bools, dates and ISO-8601 timestamps where converting
    loses nothing (`"01234"` stays text), text otherwise; empty fields are None in typed
    columns. A value that is not of its column's type makes its row a malformed record, as
    does a field that is not in the file's `encoding`, a row with the wrong number of fields,
    or a missing or bad timestamp; the column keeps its type. A file pyarrow cannot parse at
    all, or that is not text (`not_text`), cannot be read: a `CorruptInputError`, or one dead
    letter (its path) with `.with_exception_handling()`. `column_types` declares some
    columns' types (str, int, float, bool, "date", "timestamp", "timestamp UTC"); `schema` (a
    pyarrow.Schema or a mapping of field name to type) declares them all, and each row is a
    `pm.Row` of it.

    With `timestamp_field`, event time comes from that column (a number of `timestamp_unit`s
    since the epoch, seconds by default; ISO-8601 strings or timestamps). `delimiter`
    separates fields (with the default ',', a file whose header is one column that `;`, a
    tab or `|` splits into several is a `WrongDelimiterError` naming the delimiter to pass);
    `skip_header_lines` lines are passed over before the header; `header=False` reads a file
    without a header row, its columns named by `column_names` (else f0, f1, ...);
    `column_names` with a header renames the header's columns."""

    @beam_keywords(file_pattern="pattern")
    def __init__(self, pattern: PathLike, timestamp_field: Optional[str] = None,
                 label: Optional[str] = None, schema: Optional[SchemaLike] = None, *,
                 delimiter: str = ",", encoding: str = "utf-8", header: bool = True,
                 column_names: Optional[Sequence[str]] = None, skip_header_lines: int = 0,
                 column_types: Optional[Mapping[str, Any]] = None,
                 timestamp_unit: str = "s") -> None:
        super().__init__(pattern, timestamp_field, label, schema, timestamp_unit)
        if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\r\n\"":
            raise ValueError(f"delimiter must be one character (not a quote or line break), "
                             f"got {delimiter!r}")
        try:
            self.encoding = codecs.lookup(encoding).name
        except (LookupError, TypeError):
            raise ValueError(f"encoding {encoding!r} is not one Python knows") from None
        if not isinstance(skip_header_lines, int) or skip_header_lines < 0:
            raise ValueError(f"skip_header_lines must be 0 or more, got {skip_header_lines!r}")
        if column_names is not None and (isinstance(column_names, str) or not all(
                isinstance(n, str) for n in column_names)):
            raise TypeError(f"column_names is a list of str, got {column_names!r}")
        self.delimiter = delimiter
        self.header = bool(header)
        self.column_names = list(column_names) if column_names is not None else None
        self.skip_header_lines = skip_header_lines
        self.declared = declared_types(column_types)
        #: each column's type, decided from the first file read (`csv_types.infer_types`)
        self.types: Optional[Dict[str, str]] = None

    def validate(self, node: Any) -> None:
        super().validate(node)
        for path in self.files():
            with open(path, "rb") as f:
                for _ in range(self.skip_header_lines):
                    f.readline()
                self._check_delimiter(path, f.readline(), f.readline())
        if self.row_schema is None:   # decided here, on the driver, for every worker alike
            self.types = self._sampled_types()

    def _sampled_types(self) -> Optional[Dict[str, str]]:
        """The columns' types from the first rows of the first file that has any."""
        for path in self.files():
            try:
                table, _ = self._read(path, [], SAMPLE_ROWS)
            except WrongDelimiterError:
                raise
            except Exception:   # read_file reports the file
                continue
            if table.num_rows:
                return {**infer_types(table), **self.declared}
        return None

    def read_file(self, path: str, on_bad: OnBad) -> Iterator[WindowedValue]:
        if os.path.getsize(path) == 0:
            return
        why = None if self.encoding.startswith(("utf-16", "utf-32")) else not_text(path)
        if why is not None:
            self.unreadable(on_bad, path, why)
            return
        invalid: List[Any] = []
        try:
            table, undecodable = self._read(path, invalid)
        except _WrongColumns as e:
            self.bad(on_bad, path, path, None, str(e))
            return
        except (ImportError, MemoryError, WrongDelimiterError):
            raise
        except Exception as e:   # pyarrow and codecs raise several kinds for unreadable input
            self.unreadable(on_bad, path, f"not readable as CSV ({self.encoding}, "
                                          f"delimiter {self.delimiter!r}): {e}")
            return
        lines = _CsvLines(path, {number for number, *_ in invalid}, self)
        for number, text, expected, actual in invalid:
            self.bad(on_bad, text, path, lines.of_row(number),
                     f"expected {expected} fields (as in the header), got {actual}")
        if self.row_schema is not None:
            bad: Dict[int, str] = {}
            typed = _empty_as_null(table)
        else:
            if self.types is None:
                self.types = {**infer_types(table.slice(0, SAMPLE_ROWS)), **self.declared}
            typed, bad = typed_columns(table, self.types)
        bad.update(undecodable)
        # progress in bytes: the file's share of the records given out so far
        meter, size, rows = self.meter, os.path.getsize(path), max(typed.num_rows, 1)
        make = row_type(typed.column_names)   # rows of the file's columns (`pm.Row`s)
        if not bad and self.timestamp_field is None and self.row_schema is None:
            done = 0
            for batch in typed.to_batches(PROGRESS_ROWS):   # the common case, kept tight
                for record in batch.to_pylist():
                    yield _raw(make(record), MIN_MICROS, GLOBAL_WINDOW, NO_FIRING, 1)
                if meter is not None:
                    done += batch.num_rows
                    meter.at(size * done // rows)
            return
        plain = self.timestamp_field is None and self.row_schema is None
        index = 0
        for batch in typed.to_batches(PROGRESS_ROWS):
            for record in batch.to_pylist():
                if index in bad:   # the row as the file has it
                    self.bad(on_bad, table.slice(index, 1).to_pylist()[0], path,
                             lines.of_record(index), bad[index])
                elif plain:
                    yield _raw(make(record), MIN_MICROS, GLOBAL_WINDOW, NO_FIRING, 1)
                else:
                    wv = self.element(make(record), on_bad, path, lines.of_record(index))
                    if wv is not None:
                        yield wv
                index += 1
            if meter is not None:
                meter.at(size * index // rows)

    def _read(self, path: str, invalid: List[Any],
              rows: Optional[int] = None) -> Tuple[Any, Dict[int, str]]:
        """The file's rows (about the first `rows`, if given) as text columns, and the rows
        with a field not in the encoding: {row index: what is wrong}."""
        import pyarrow as pa
        import pyarrow.csv as pacsv

        def on_invalid(row: Any) -> str:
            invalid.append((row.number, row.text, row.expected_columns, row.actual_columns))
            return "skip"
        utf8 = self.encoding == "utf-8"
        with open(path, "rb") as f:
            for _ in range(self.skip_header_lines):
                f.readline()
            first = f.tell()
            line = f.readline()
            self._check_delimiter(path, line, f.readline())
            names = self._names(line)
            f.seek(first)
            data: Any = f if rows is None else io.BytesIO(b"".join(
                itertools.islice(f, rows + 1)))
            # UTF-8 is checked field by field below, so one bad byte spoils only its row
            table = pacsv.read_csv(
                data, read_options=pacsv.ReadOptions(
                    use_threads=False, encoding="utf8" if utf8 else self.encoding,
                    column_names=None if self.header else names),
                parse_options=pacsv.ParseOptions(delimiter=self.delimiter,
                                                 invalid_row_handler=on_invalid),
                convert_options=pacsv.ConvertOptions(
                    column_types={n: pa.binary() if utf8 else pa.string() for n in names},
                    strings_can_be_null=False, quoted_strings_can_be_null=False))
        if self.header and self.column_names is not None:
            table = table.rename_columns(self.column_names)
        if not utf8:
            return table, {}
        return _decoded(table)

    def _check_delimiter(self, path: str, first_line: bytes, second_line: bytes) -> None:
        """Raise `WrongDelimiterError` when the file read with the default delimiter ',' is one
        column whose first line (and second, if any) another common delimiter splits into
        as many columns: the file is `;`-, tab- or `|`-separated, not one column."""
        if self.delimiter != "," or self.encoding.startswith(("utf-16", "utf-32")) \
                or b"\0" in first_line or first_line.startswith(b"\x1f\x8b"):   # not text
            return
        lines = [b.decode(self.encoding, errors="replace").lstrip("\ufeff").rstrip("\r\n")
                 for b in (first_line, second_line) if b.strip()]
        if not lines or len(_fields(lines[0], ",")) != 1:
            return
        for other in COMMON_DELIMITERS:
            n = len(_fields(lines[0], other))
            if n > 1 and all(len(_fields(line, other)) == n for line in lines[1:]):
                what = "header" if self.header else "first line"
                raise WrongDelimiterError(
                    f"{self.name}: {path}: the {what} {lines[0][:200]!r} is one column with "
                    f"the delimiter ',' but {n} columns with {other!r}: pass "
                    f"delimiter={other!r} to ReadFromCsv")

    def _names(self, first_line: bytes) -> List[str]:
        """The columns' names, from the header row (`first_line`) or as configured."""
        text = first_line.decode(self.encoding, errors="replace").lstrip("\ufeff")
        fields = next(csv.reader([text.rstrip("\r\n")], delimiter=self.delimiter), [])
        if self.column_names is not None:
            if len(self.column_names) != len(fields):
                raise _WrongColumns(f"has {len(fields)} columns, column_names names "
                                    f"{len(self.column_names)}: {self.column_names}")
            return list(self.column_names) if not self.header else fields
        return fields if self.header else [f"f{i}" for i in range(len(fields))]


#: the delimiters other than ',' a CSV file commonly has, checked for by `_check_delimiter`
COMMON_DELIMITERS = (";", "\t", "|")


class WrongDelimiterError(PipelineConstructionError):
    """A CSV file read with the default delimiter ',' is one column that another common
    delimiter splits into several: the message names the file, its header and the
    `delimiter=` to pass."""


def _fields(line: str, delimiter: str) -> List[str]:
    return next(csv.reader([line], delimiter=delimiter), [])


class _WrongColumns(ValueError):
    """A file whose columns `column_names` does not fit."""


def _decoded(table: Any) -> Tuple[Any, Dict[int, str]]:
    """Binary columns as UTF-8 text, and the rows with a field that is not UTF-8 (shown
    with U+FFFD in the text: the row is reported, not read)."""
    import pyarrow as pa
    bad: Dict[int, str] = {}
    columns: List[Any] = []
    for name in table.column_names:
        column = table.column(name)
        try:
            columns.append(column.cast(pa.string()))
            continue
        except pa.ArrowInvalid:
            pass
        values: List[Any] = []
        for index, raw in enumerate(column.to_pylist()):
            try:
                values.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                values.append(raw.decode("utf-8", errors="replace"))
                bad.setdefault(index, f"column {name!r} is not UTF-8: {raw!r} (pass the "
                                      "file's encoding= if it has another)")
        columns.append(pa.array(values, pa.string()))
    return pa.table(columns, names=table.column_names), bad


def _empty_as_null(table: Any) -> Any:
    """Text columns with empty fields as null (a declared schema's missing values)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    return pa.table([pc.if_else(pc.equal(c, ""), pa.scalar(None, pa.string()), c)
                     for c in table.columns], names=table.column_names)


class _CsvLines:
    """Physical line numbers for error messages. pyarrow numbers rows (the header is row 1;
    blank lines are not rows; a quoted field may span lines), so when an error needs a line
    the file is scanned again with the csv module for the line each row starts on."""

    def __init__(self, path: str, invalid: Set[Optional[int]], source: ReadFromCsv) -> None:
        self.path = path
        self.invalid = invalid
        self.source = source
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
        source = self.source
        skip = source.skip_header_lines
        encoding = "utf-8-sig" if source.encoding == "utf-8" else source.encoding
        starts: List[int] = []
        with open(self.path, encoding=encoding, errors="replace", newline="") as f:
            for _ in range(skip):
                f.readline()
            reader = csv.reader(f, delimiter=source.delimiter)
            previous = 0
            for fields in reader:
                start, previous = previous + 1, reader.line_num
                if fields:
                    starts.append(skip + start)
        self.starts = starts
        first = 2 if source.header else 1
        self.good = [n for n in range(first, len(starts) + 1) if n not in self.invalid]


def _csv_cell(v: Any) -> Any:
    if isinstance(v, (dict, list, tuple, set, frozenset)):
        return json_text(v)
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
    default_suffix = ".csv"
