"""A DGS worker's mailbox (the paper's Sec. 3.4, selective reordering): it buffers what
arrives on each channel and hands the worker an event only when every dependent event before
it has been handed over, in timestamp order across dependent tags.

Events are `(key, tag, value)` with `key` an int that orders the input (the event's place in
the sorted input, or its timestamp and stream for streams read by the workers).
A channel is FIFO with increasing keys: one per implementation tag the worker handles (fed by
the input), and the parent's (its join requests, `(key, tag, None)`). Each channel has a
`low`: every event still to come on it has a key at least that. A heartbeat raises `low`
and is never handed to the worker. An event `x` of channel `c` is released when, for every
other channel `d` that may carry an event dependent on `x`, `d`'s first buffered event (or,
if none, its `low`) comes after `x`. A worker with children releases in key order across all
its channels (`total`): its join requests to them must come in key order."""
from __future__ import annotations

from bisect import bisect_left
from typing import Any, Callable, Dict, Hashable, List, Optional, Tuple

#: the parent's channel
PARENT = "^"
#: a key above every event's (the low of a channel that has ended)
NEVER = 1 << 126
#: handed-over events a channel's buffer may keep before they are dropped
_COMPACT = 1024

Event = Tuple[int, Any, Any]


class Mailbox:
    """The channels of one worker: `inputs` maps each input channel to its tag; `parent_tags`
    are the tags its ancestors handle (None for the root, which has no parent channel)."""

    def __init__(self, inputs: Dict[Hashable, Any], parent_tags: Optional[frozenset],
                 depends: Callable[[Any, Any], bool], total: bool) -> None:
        self.tags = dict(inputs)
        self.depends = depends
        self.total = total
        channels = list(inputs) + ([] if parent_tags is None else [PARENT])
        self.buf: Dict[Hashable, List[Event]] = {c: [] for c in channels}
        self.pos: Dict[Hashable, int] = {c: 0 for c in channels}
        self.low: Dict[Hashable, int] = {c: 0 for c in channels}
        self.has_parent = parent_tags is not None
        self.deps: Dict[Hashable, List[Hashable]] = {
            c: [d for d in inputs if d != c and (total or depends(inputs[c], inputs[d]))]
            for c in inputs}
        self.parent_dep = {c: parent_tags is not None and (
            total or any(depends(inputs[c], a) for a in parent_tags)) for c in inputs}

    def put(self, channel: Hashable, events: List[Event], low: int) -> None:
        """Events arriving on a channel (in key order, after its earlier ones) and the channel's
        new low: every later event on it has a key >= low (a heartbeat is no events)."""
        if events:
            if events[0][0] < self.low[channel]:
                raise ValueError(f"channel {channel!r}: event {events[0][0]} came after low "
                                 f"{self.low[channel]}; a channel's keys must increase")
            self.buf[channel].extend(events)
        if low > self.low[channel]:
            self.low[channel] = low

    def _head(self, c: Hashable) -> int:
        """The key of c's first buffered event, else its low."""
        buf, pos = self.buf[c], self.pos[c]
        return buf[pos][0] if pos < len(buf) else self.low[c]

    def _parent_bound(self, tag: Any) -> int:
        """The first key on the parent's channel that an event of `tag` must wait for."""
        buf = self.buf[PARENT]
        for i in range(self.pos[PARENT], len(buf)):
            if self.total or self.depends(tag, buf[i][1]):
                return buf[i][0]
        return self.low[PARENT]

    def release(self) -> Tuple[List[Event], Optional[Event]]:
        """The input events that may be handed over now, and then the parent's join request
        if it may go too (the worker handles it after them; nothing more is released until
        it is done)."""
        out: List[Event] = []
        moved = True
        while moved:
            moved = False
            for c in self.tags:
                buf, pos = self.buf[c], self.pos[c]
                if pos >= len(buf):
                    continue
                bound = min((self._head(d) for d in self.deps[c]), default=NEVER)
                if self.parent_dep[c]:
                    bound = min(bound, self._parent_bound(self.tags[c]))
                end = bisect_left(buf, bound, pos, key=_key)
                if end > pos:
                    out.extend(buf[pos:end])
                    moved = True
                    self._consumed(c, end)
        return out, self._request()

    def _request(self) -> Optional[Event]:
        if not self.has_parent:
            return None
        buf, pos = self.buf[PARENT], self.pos[PARENT]
        if pos >= len(buf):
            return None
        key, tag, _ = buf[pos]
        for c in self.tags:
            if (self.total or self.depends(tag, self.tags[c])) and self._head(c) < key:
                return None
        return self._pop(PARENT)

    def release_one(self) -> Tuple[Optional[Event], bool]:
        """For a worker with children (`total`): the next event in key order across all
        channels if it may go now, and whether it is the parent's join request (a request
        goes before an input event of the same key: a checkpoint's)."""
        best, best_key = None, None
        for c, buf in self.buf.items():
            pos = self.pos[c]
            if pos < len(buf):
                rank = (buf[pos][0], c != PARENT)
                if best_key is None or rank < best_key:
                    best, best_key = c, rank
        if best is None:
            return None, False
        key = best_key[0]
        for d in self.buf:
            if d != best and self._head(d) < key:
                return None, False
        return self._pop(best), best == PARENT

    def _pop(self, c: Hashable) -> Event:
        event = self.buf[c][self.pos[c]]
        self._consumed(c, self.pos[c] + 1)
        return event

    def _consumed(self, c: Hashable, end: int) -> None:
        """Channel c's events before `end` were handed over: drop them once they are half
        the buffer (a channel read ahead of its releases is seldom empty)."""
        buf = self.buf[c]
        if end == len(buf):
            buf.clear()
            end = 0
        elif end >= _COMPACT and 2 * end >= len(buf):
            del buf[:end]
            end = 0
        self.pos[c] = end

    def frontier(self) -> int:
        """Every event below this key has been handed over (none is buffered, none to come)."""
        return min((self._head(c) for c in self.buf), default=NEVER)

    def pending(self) -> int:
        """How many events are buffered."""
        return sum(len(b) - self.pos[c] for c, b in self.buf.items())


def _key(event: Event) -> int:
    return event[0]
