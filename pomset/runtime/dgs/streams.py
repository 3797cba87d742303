"""A DGS run's input as streams the workers read themselves (`pm.dgs.Stream`): each worker
opens the streams of its implementation tags (a tag dealt to `n` lanes gives lane `l` every
n-th of the tag's streams, from the l-th), each stream a channel of its mailbox, and reads
them a slice at a time. A channel's low after a slice is one past its last key (a stream is
in key order), and never once it has ended. The run has no end key before the streams end:
it ends at `NEVER`."""
from __future__ import annotations

from itertools import islice
from typing import Any, Dict, Iterable, Iterator, List, Sequence, Tuple

from ...traces.dgs.streams import Stream, keyed_events
from .mailbox import NEVER


class StreamInput:
    """The streams of a run, for a plan whose tags are dealt to `lanes`."""

    def __init__(self, streams: Sequence[Stream], lanes: Dict[Any, int], slice_size: int) -> None:
        self.streams = list(streams)
        self.lanes = lanes
        self.slice = slice_size
        self.base = 0
        self.end = NEVER

    def channel(self, it: Tuple[Any, int]) -> List[int]:
        """The indexes of the streams an implementation tag reads."""
        tag, lane = it
        mine = [i for i, s in enumerate(self.streams) if s.tag == tag]
        return mine[lane::self.lanes.get(tag, 1)]

    def channels(self, its: Iterable[Tuple[Any, int]]) -> Dict[Any, Any]:
        """A worker's channels for its implementation tags, with their tags: one per stream
        (`(it, index)`), so the mailbox orders a tag's streams only where events depend on
        each other, and no channel is a merge."""
        return {(it, i): it[0] for it in its for i in self.channel(it)}

    def feeder(self, channels: Iterable[Tuple[Tuple[Any, int], int]]) -> "StreamFeeder":
        """A worker's reading of these channels (it opens their streams)."""
        return StreamFeeder(self, channels)


class StreamFeeder:
    """A worker's reading of its channels' streams: `next()` gives the next slice of the
    stream furthest behind (the lowest low), with its new low, until every stream has ended.
    Reading the stream furthest behind first keeps one from running ahead while a dependent
    one lags."""

    def __init__(self, epoch: StreamInput, channels: Iterable[Tuple[Tuple[Any, int], int]]
                 ) -> None:
        self.epoch = epoch
        self.open: Dict[Any, Iterator[Tuple[int, Any, Any]]] = {
            c: keyed_events(epoch.streams[c[1]], c[1]) for c in channels}
        self.low: Dict[Any, int] = {c: 0 for c in self.open}

    @property
    def done(self) -> bool:
        return not self.open

    def behind(self, frontier: int) -> bool:
        """Whether a stream still to be read holds the worker's frontier back (reading it is
        the only way on)."""
        return bool(self.low) and min(self.low.values()) <= frontier

    def next(self) -> List[Tuple[Any, List[Tuple[int, Any, Any]], int]]:
        c = min(self.low, key=self.low.__getitem__)
        size = self.epoch.slice
        got = list(islice(self.open[c], size))
        if len(got) < size:
            del self.open[c], self.low[c]
            return [(c, got, NEVER)]
        self.low[c] = got[-1][0] + 1
        return [(c, got, self.low[c])]
