"""The local runner's file stream (`--streaming`): a file source whose files are released in
micro-batches as `runtime.file_stream` says, each micro-batch's elements pushed before its
watermark moves, as on Spark's file stream. It registers the stage of a bounded read: a file
source in a streaming run is a stream, any other read a `SourceStage`."""
from __future__ import annotations

import time
from typing import Any, List, Optional

from ...runtime.file_stream import FileListing, file_watermark, latest_time, out_of_orderness_us
from ...runtime.plan import READ, PlanNode
from ...runtime.reads import read_tagged
from ...windowing import MIN_MICROS
from .stages import COLUMN_ROWS, STAGES, Build, SourceStage


class FileStreamStage(SourceStage):
    """A file source read as a stream: `open` lists the files (those there at the start are
    the whole stream with `--streaming_until=latest`), `poll` pushes one micro-batch's files
    and `watermark` is where the streaming driver then moves the source's watermark. New
    files are looked for every `--trigger_interval` seconds. Its checkpoint holds the files
    released and the largest event time read."""

    state = SourceStage.state + ("released", "latest")

    def __init__(self, node: Any, executor: Any) -> None:
        super().__init__(node, executor)
        self.released: List[str] = []
        self.latest = MIN_MICROS
        self.ended = False
        self.listing: Optional[FileListing] = None
        self.target: Optional[int] = None
        self.out_of_orderness: Optional[int] = None
        self.interval_s = 0.0
        self.listed_at = -float("inf")

    def open(self, options: Any) -> None:
        """Take the stream's flags and list the files (after the released ones, on resume)."""
        self.out_of_orderness = out_of_orderness_us(options.max_out_of_orderness)
        self.interval_s = options.trigger_interval
        self.listing = FileListing(self.node.transform.pattern, options.max_files_per_batch,
                                   self.released)
        if options.streaming_until == "latest":
            self.target = self.listing.list_new()

    @property
    def done(self) -> bool:
        return self.ended

    def poll(self, bundle_size: int, timeout: float) -> int:
        """Push the next micro-batch's files (waiting up to `timeout` seconds when there is
        none); how many elements they held."""
        start = len(self.released)
        if self.target is not None:
            available = self.target
        elif time.monotonic() - self.listed_at >= self.interval_s:
            available = self.listing.list_new()
            self.listed_at = time.monotonic()
        else:
            available = start
        end = self.listing.upto(start, available)
        if end == start and self.target is None:
            time.sleep(timeout)
            return 0
        pushed = 0
        t = self.node.transform
        for path in self.listing.files[start:end]:
            for tag, bundle in read_tagged(t, self.label, bundle_size, COLUMN_ROWS, [path]):
                if tag is not None:
                    self.emit_dead(tag, bundle)
                    continue
                self.latest = latest_time(bundle, self.latest)
                pushed += len(bundle)
                self.push(bundle)
            self.released.append(path)
        self.ended = self.target is not None and end >= self.target
        return pushed

    def waiting(self) -> int:
        """Files listed and not released yet: the stream's backlog."""
        return 0 if self.listing is None else len(self.listing.files) - len(self.released)

    def watermark(self) -> int:
        """The watermark after the micro-batch last pushed."""
        return file_watermark(self.latest, self.out_of_orderness, self.ended)


@STAGES.register(READ)
def read_stage(node: PlanNode, executor: Any, build: Build) -> SourceStage:
    """A file source read as a stream in a streaming run; else read once, as batch."""
    if build.streaming and not node.makes_bundles:
        return FileStreamStage(node, executor)
    return SourceStage(node, executor)
