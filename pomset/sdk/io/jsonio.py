"""JSON lines: one JSON object per line."""
from __future__ import annotations

import json
import os
import reprlib
from typing import Any, Iterator, Optional

from ...windowing.beam_keywords import beam_keywords
from ...windowing import WindowedValue
from ..schema import SchemaLike
from .base import (FileSink, FileSource, LineWriter, OnBad, PathLike, RowMaker, binary_lines,
                   json_loads, json_text, not_text)

#: the largest file checked, when its first line is not JSON, for being one JSON document
DOCUMENT_PROBE = 64 << 20


class ReadFromJson(FileSource):
    """The objects (as dicts) of JSON-lines files matching a glob pattern; blank lines are
    skipped. With `timestamp_field`, event time comes from that field (a number of
    `timestamp_unit`s since the epoch, seconds by default, or an ISO-8601 string). With `schema` (a pyarrow.Schema or a mapping of field name to
    type) each object becomes a `pm.Row` of those fields, converted to their types. A line
    that is not a JSON object, does not fit the schema, or whose timestamp field is missing or
    not a time, is a malformed record. A file that is not JSON lines at all cannot be read
    (`CorruptInputError`): gzip-compressed or binary data (`not_text`), or one JSON document
    (an array of objects, a pretty-printed object) spread over several lines."""

    @beam_keywords(file_pattern="pattern")
    def __init__(self, pattern: PathLike, timestamp_field: Optional[str] = None,
                 label: Optional[str] = None, schema: Optional[SchemaLike] = None, *,
                 timestamp_unit: str = "s") -> None:
        super().__init__(pattern, timestamp_field, label, schema, timestamp_unit)

    def read_file(self, path: str, on_bad: OnBad) -> Iterator[WindowedValue]:
        why = not_text(path)
        if why is not None:
            self.unreadable(on_bad, path, why)
            return
        loads, element, first = json_loads, self.element, True
        for n, line in binary_lines(path, self.meter):
            if not line.strip():
                continue
            if first:
                first = False
                why = _one_document(path, line)
                if why is not None:
                    self.unreadable(on_bad, path, why)
                    return
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


def _one_document(path: str, first_line: bytes) -> Optional[str]:
    """Why the file is one JSON document over several lines rather than JSON lines, or None:
    its first line is not JSON but the whole file (up to `DOCUMENT_PROBE` bytes) is."""
    try:
        json.loads(first_line)
        return None
    except (ValueError, RecursionError):
        pass
    if os.path.getsize(path) > DOCUMENT_PROBE:
        return None
    with open(path, "rb") as f:
        whole = f.read()
    try:
        value = json.loads(whole)
    except (ValueError, RecursionError):
        return None
    lines = whole.count(b"\n") + 1
    start = first_line[:40].decode("utf-8", "replace")
    return (f"is one JSON {type(value).__name__} over {lines} lines, not JSON lines (one object "
            f"per line; line 1 is {start!r}): write each record on a line of its own")


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
    default_suffix = ".jsonl"
