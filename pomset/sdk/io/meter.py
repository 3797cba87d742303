"""How far a bounded read has got, for a progress line's share and estimate: a file source's
files read whole plus the position its reader last reported in the current one, in the
source's units (bytes of its files; rows for Parquet, from the files' metadata); a Kafka
read's offsets, up to the end offsets it reads to."""
from __future__ import annotations

from typing import Any, Collection, Dict, Mapping, Tuple


class ReadMeter:
    """A file source's read progress. A runner that shows progress puts one on the source
    (`FileSource.meter`) before reading it; the read loop marks each file's `begin` and
    `end`, and a reader may report its position in the current file with `at`."""

    def __init__(self, sizes: Dict[str, int]) -> None:
        self.sizes = sizes
        self.total = sum(sizes.values())
        self.read = 0       # units of the files read whole
        self.size = 0       # the current file's
        self.position = 0   # in the current file, as its reader last said

    @classmethod
    def of(cls, source: Any) -> "ReadMeter":
        """A meter for reading all of `source`'s files (`FileSource.read_size` each)."""
        return cls({path: source.read_size(path) for path in source.files()})

    def begin(self, path: str) -> None:
        self.size = self.sizes.get(path, 0)
        self.position = 0

    def at(self, position: int) -> None:
        """The reader is `position` units into the current file."""
        self.position = position

    def end(self) -> None:
        self.read += self.size
        self.size = self.position = 0

    def progress(self) -> Tuple[int, int]:
        """(units read, units in all): the first never past the current file, nor the total."""
        return min(self.read + min(self.position, self.size), self.total), self.total


def offsets_read(starts: Mapping[Any, int], positions: Mapping[Any, int],
                 ends: Mapping[Any, int], open_: Collection[Any]) -> Tuple[int, int]:
    """(offsets read, offsets to read) of a Kafka read from `starts` to `ends` per partition,
    now at `positions`; a partition no longer `open_` is read to its end (its last offsets may
    be transaction markers, never delivered as records)."""
    done = total = 0
    for p, end in ends.items():
        span = max(end - starts[p], 0)
        total += span
        done += span if p not in open_ else min(max(positions[p] - starts[p], 0), span)
    return done, total
