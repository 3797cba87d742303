"""JSON lines: one JSON object per line."""
from __future__ import annotations

import json
import reprlib
from typing import Any, Iterator, Optional

from ...windowing.beam_keywords import beam_keywords
from ...windowing import WindowedValue
from ..schema import SchemaLike
from .base import (FileSink, FileSource, LineWriter, OnBad, PathLike, RowMaker, binary_lines,
                   json_loads, json_text)


class ReadFromJson(FileSource):
    """The objects (as dicts) of JSON-lines files matching a glob pattern; blank lines are
    skipped. With `timestamp_field`, event time comes from that field (a number of
    `timestamp_unit`s since the epoch, seconds by default, or an ISO-8601 string). With `schema` (a pyarrow.Schema or a mapping of field name to
    type) each object becomes a `pm.Row` of those fields, converted to their types. A line
    that is not a JSON object, does not fit the schema, or whose timestamp field is missing or
    not a time, is a malformed record."""

    @beam_keywords(file_pattern="pattern")
    def __init__(self, pattern: PathLike, timestamp_field: Optional[str] = None,
                 label: Optional[str] = None, schema: Optional[SchemaLike] = None, *,
                 timestamp_unit: str = "s") -> None:
        super().__init__(pattern, timestamp_field, label, schema, timestamp_unit)

    def read_file(self, path: str, on_bad: OnBad) -> Iterator[WindowedValue]:
        loads, element = json_loads, self.element
        for n, line in binary_lines(path, self.meter):
            if not line.strip():
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as e:
                self.bad(on_bad, line, path, n, f"not UTF-8 text ({e.reason} at byte {e.start})")
                continue
            try:
                record = loads(text)
            except json.JSONDecodeError as e:
                self.bad(on_bad, text, path, n, f"invalid JSON: {e.msg} at column {e.colno}")
                continue
            if not isinstance(record, dict):
                self.bad(on_bad, text, path, n,
                         f"expected a JSON object, got {type(record).__name__} {record!r}"[:200])
                continue
            wv = element(record, on_bad, path, n)
            if wv is not None:
                yield wv


class _JsonWriter(LineWriter):
    def __init__(self, path: str, annotate: bool, sink_name: str, sink: Any) -> None:
        make_row = RowMaker(annotate, sink_name)

        def line(wv: WindowedValue) -> str:
            row = make_row(wv)
            try:
                return json_text(row)
            except (TypeError, ValueError) as e:
                raise ValueError(f"{sink_name}: cannot write {wv.value!r} as JSON: {e}") from None
            except RecursionError:
                raise ValueError(f"{sink_name}: cannot write {reprlib.repr(wv.value)} as JSON: "
                                 f"it is nested too deeply (past Python's recursion limit)"
                                 ) from None
        super().__init__(path, line)


class WriteToJson(FileSink):
    """Writes one JSON object per line (the element's columns, plus window_start, window_end,
    timestamp, pane_timing, pane_index and diff for windowed or retracting input). Values JSON
    cannot hold are written as strings (datetimes in ISO-8601; NaN, Infinity and -Infinity
    as "NaN", "Infinity" and "-Infinity"), so that every line is strict JSON."""

    writer_class = _JsonWriter
