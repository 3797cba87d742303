"""A file source read as a stream (`--streaming`), the one rule every runner follows: the files
its pattern matches are released in the order first seen (oldest first within a listing, by
modification time, then name), all new ones or at most `--max_files_per_batch` per
micro-batch; each micro-batch's elements are taken before its watermark moves, and that
watermark trails the largest event time read so far by `--max_out_of_orderness` (staying at
the start of time without it). With `--streaming_until=latest` the stream ends with the
micro-batch that releases the last of the files there at the start: its watermark is the
end of time."""
from __future__ import annotations

import os
from typing import Any, List, Optional

from ..sdk.io.base import expand_pattern
from ..windowing import MAX_MICROS, MIN_MICROS
from .columnar import TS, Columns


class FileListing:
    """The files of a pattern in release order (`files`), and how many of them the next
    micro-batch releases."""

    def __init__(self, pattern: Any, max_files: Optional[int] = None,
                 files: Optional[List[str]] = None) -> None:
        self.pattern, self.max_files = pattern, max_files
        self.files: List[str] = list(files or [])
        self.seen = set(self.files)

    def list_new(self) -> int:
        """Append the files not seen before, oldest first (by modification time, then name),
        so that a listing repeated after a restart puts the files released before in the
        same order; how many there are now."""
        new = [path for path in expand_pattern(self.pattern) if path not in self.seen]
        for path in sorted(new, key=_age):
            self.seen.add(path)
            self.files.append(path)
        return len(self.files)

    def upto(self, start: int, available: int) -> int:
        """Where the micro-batch after the first `start` files ends, `available` being listed."""
        return available if self.max_files is None else min(available, start + self.max_files)


def _age(path: str) -> tuple:
    return os.stat(path).st_mtime_ns, path


def out_of_orderness_us(seconds: Optional[float]) -> Optional[int]:
    """`--max_out_of_orderness` in µs (None: the watermark waits for the stream's end)."""
    return None if seconds is None else int(seconds * 1_000_000)


def latest_time(bundle: Any, latest: int = MIN_MICROS) -> int:
    """The largest event time of `bundle` (elements or `Columns`) and `latest`."""
    if isinstance(bundle, Columns):
        if not len(bundle):
            return latest
        import pyarrow.compute as pc
        return max(latest, pc.max(bundle.table.column(TS)).as_py())
    return max([latest] + [wv.ts for wv in bundle])


def file_watermark(latest: int, out_of_orderness: Optional[int], ended: bool = False) -> int:
    """The watermark after a micro-batch: the end of time once the stream ended, else the
    largest event time read (`latest`) less the allowed out-of-orderness."""
    if ended:
        return MAX_MICROS
    if out_of_orderness is None or latest == MIN_MICROS:
        return MIN_MICROS
    return latest - out_of_orderness
