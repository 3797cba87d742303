"""Text files: one element per line."""
from __future__ import annotations

from typing import Any, Iterator, Optional

from ...windowing.beam_keywords import beam_keywords
from ...windowing import GLOBAL_WINDOW, MIN_MICROS, NO_FIRING, WindowedValue
from .base import (FileSink, FileSource, LineWriter, OnBad, PathLike, RowMaker, binary_lines,
                   json_text, not_text)

_raw = WindowedValue.raw


class ReadFromText(FileSource):
    """The lines (str, without the line ending) of the files matching a glob pattern, in file
    name order, all at the minimum timestamp in the global window; `skip_header_lines` lines
    at the start of each file are skipped (Beam's). A line that is not UTF-8 is a malformed
    record; a file that is not text at all (gzip-compressed, or binary: `not_text`) cannot
    be read (`CorruptInputError`)."""

    @beam_keywords(file_pattern="pattern")
    def __init__(self, pattern: PathLike, label: Optional[str] = None, *,
                 skip_header_lines: int = 0) -> None:
        super().__init__(pattern, None, label)
        if not isinstance(skip_header_lines, int) or skip_header_lines < 0:
            raise ValueError(f"skip_header_lines must be 0 or more, got {skip_header_lines!r}")
        self.skip_header_lines = skip_header_lines

    def read_file(self, path: str, on_bad: OnBad) -> Iterator[WindowedValue]:
        why = not_text(path)
        if why is not None:
            self.unreadable(on_bad, path, why)
            return
        skip = self.skip_header_lines
        for n, line in binary_lines(path, self.meter):
            if n <= skip:
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as e:
                self.bad(on_bad, line, path, n, f"not UTF-8 text ({e.reason} at byte {e.start})")
                continue
            yield _raw(text, MIN_MICROS, GLOBAL_WINDOW, NO_FIRING, 1)


class _TextWriter(LineWriter):
    def __init__(self, path: str, annotate: bool, sink_name: str, sink: Any) -> None:
        if annotate:
            make_row = RowMaker(True, sink_name)

            def line(wv: WindowedValue) -> str:
                return json_text(make_row(wv))
        else:
            def line(wv: WindowedValue) -> str:
                return str(wv.value)
        super().__init__(path, line)


class WriteToText(FileSink):
    """Writes `str(element)` per line; for windowed or retracting input, a JSON object per
    line with the element's columns and window_start, window_end, timestamp, pane_timing,
    pane_index and diff."""

    writer_class = _TextWriter
