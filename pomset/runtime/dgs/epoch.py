"""One epoch's input for a plan's workers: the items below the watermark, sorted by timestamp
(ties in arrival order) and indexed by tag, which every worker reads its own channels from,
a slice at a time (as Flumina's workers sit by their input streams; here the items are in
memory the workers share: threads, or processes forked after the epoch's input was sorted).
A slice ends with a heartbeat on each of the worker's channels: every later event on it has a
key at least the slice's end. An event's key is `base` + its place in the sorted items."""
from __future__ import annotations

from array import array
from bisect import bisect_left
from functools import partial
from itertools import compress
from operator import eq, itemgetter
from typing import Any, Dict, Iterable, List, Sequence, Tuple

#: a tag's events are dealt to its lanes in runs of this many: events made one after another
#: lie side by side in memory, so a forked worker reading a run copies pages no other reads
LANE_RUN = 64
#: with up to this many distinct tags, each tag's places are found by one pass per tag in C
_FEW_TAGS = 16


def index_tags(ready: List[Tuple[int, Any]]) -> Dict[Any, Sequence[int]]:
    """Each tag's places in the sorted `(ts, (tag, value))` items, in order, as arrays (a
    forked worker reading them makes new ints rather than writing to the parent's)."""
    tags = list(map(itemgetter(0), map(itemgetter(1), ready)))
    distinct = set(tags)
    if len(distinct) <= _FEW_TAGS:
        places = range(len(tags))
        return {t: array("q", compress(places, map(partial(eq, t), tags))) for t in distinct}
    out: Dict[Any, List[int]] = {}
    for i, t in enumerate(tags):
        out.setdefault(t, []).append(i)
    return {t: array("q", p) for t, p in out.items()}


class EpochInput:
    """The epoch's events for the workers: `channel(it)` gives an implementation tag's places
    (lane `l` of a tag dealt to `n` lanes has every n-th run of `LANE_RUN` of its events, from
    the l-th)."""

    def __init__(self, ready: List[Tuple[int, Any]], base: int,
                 by_tag: Dict[Any, Sequence[int]], lanes: Dict[Any, int], slice_size: int) -> None:
        self.size = len(ready)
        # the values alone, so that a worker touches (and, forked, copies) only their objects
        self.values = list(map(itemgetter(1), map(itemgetter(1), ready)))
        self.base = base
        self.end = base + len(ready)
        self.by_tag = by_tag
        self.lanes = lanes
        self.slice = slice_size

    def channel(self, it: Tuple[Any, int]) -> Sequence[int]:
        places = self.by_tag.get(it[0], array("q"))
        n = self.lanes.get(it[0], 1)
        if n == 1:
            return places
        mine = array("q")
        for start in range(it[1] * LANE_RUN, len(places), n * LANE_RUN):
            mine.extend(places[start:start + LANE_RUN])
        return mine

    def channels(self, its: Iterable[Tuple[Any, int]]) -> Dict[Any, Any]:
        """A worker's channels for its implementation tags, with their tags: one each."""
        return {it: it[0] for it in its}

    def feeder(self, channels: Iterable[Tuple[Any, int]]) -> "Feeder":
        """A worker's reading of these channels."""
        return Feeder(self, channels)

    def events(self, it: Tuple[Any, int], places: Iterable[int]) -> List[Tuple[int, Any, Any]]:
        """The `(key, tag, value)` events at these places."""
        values, base, tag = self.values, self.base, it[0]
        return [(base + i, tag, values[i]) for i in places]


class Feeder:
    """A worker's reading of its channels: `next()` gives each channel's events of the next
    slice with the channel's new low (the slice's end, as a key), until the epoch's input is
    read."""

    def __init__(self, epoch: EpochInput, channels: Iterable[Tuple[Any, int]]) -> None:
        self.epoch = epoch
        self.places = {it: epoch.channel(it) for it in channels}
        self.cursor = {it: 0 for it in self.places}
        self.upto = 0   # places below this were read (relative to base)

    @property
    def done(self) -> bool:
        return self.upto >= self.epoch.size

    def behind(self, frontier: int) -> bool:
        """Whether the worker must read on to move its frontier: never, as every slice
        moves all its channels to the slice's end."""
        return False

    def next(self) -> List[Tuple[Any, List[Tuple[int, Any, Any]], int]]:
        epoch = self.epoch
        upto = min(epoch.size, self.upto + epoch.slice)
        low = epoch.base + upto
        out = []
        for it, places in self.places.items():
            start = self.cursor[it]
            stop = bisect_left(places, upto, start)
            out.append((it, epoch.events(it, places[start:stop]), low))
            self.cursor[it] = stop
        self.upto = upto
        return out
