"""The Elastic ScaleGate (Gulisano et al., STRETCH §2.4 and §6): several sources' timestamp-
sorted streams merged into one timestamp-sorted stream of ready tuples, which several readers
consume, each at its own cursor, each ready tuple once; sources and readers come and go while
it runs.

A tuple is ready once no source can still add one that sorts before it. Each source's
frontier is the earliest timestamp it may still add (its latest tuple's, or what it promised
with `advance`); a tuple is ready when its timestamp is below the least frontier. That is the
paper's Definition 3 with ties settled: a tuple that shares its timestamp with a source's
latest waits for that source to move past it, so tuples of equal timestamps leave in one
order (their `order` key, else the source's rank and arrival) whatever the interleaving of
the sources' calls. `frontier()` is then the readers' watermark: every tuple they will still
get has a timestamp at or after it.

Sources and readers are any hashable names. A source added with `add_sources(new, like)`
starts at the frontier of a source already there (Lemma 3: the tuple that triggered the
reconfiguration bounds what a new instance will add); a reader added with
`add_readers(new, like)` starts where `like` stands. One lock guards the gate: in Python its
calls are short next to the work done with what they return.
"""
from __future__ import annotations

import heapq
import threading
from bisect import bisect_left
from itertools import count
from operator import itemgetter
from typing import Any, Dict, Hashable, Iterable, List, Optional, Tuple

#: the frontier of a source that has closed: it adds nothing more
CLOSED = float("inf")

#: how many consumed ready tuples to keep before dropping the prefix all readers passed
_COMPACT = 4096


class ScaleGate:
    """A timestamp-ordered merge with per-reader cursors and elastic sources and readers."""

    def __init__(self, sources: Iterable[Hashable] = (), readers: Iterable[Hashable] = (),
                 start: float = float("-inf")) -> None:
        self._lock = threading.Lock()
        self._frontier: Dict[Hashable, float] = {}
        self._rank: Dict[Hashable, int] = {}
        self._ranks = count()
        self._arrivals = count()
        self._pending: List[tuple] = []      # heap of (ts, order, arrival, source, item)
        self._ready: List[Tuple[Any, Any]] = []
        self._base = 0                        # the absolute index of _ready[0]
        self._cursor: Dict[Hashable, int] = {}
        self._least = CLOSED
        for s in sources:
            self._frontier[s] = start
            self._rank[s] = next(self._ranks)
        for r in readers:
            self._cursor[r] = 0
        self._least = min(self._frontier.values(), default=CLOSED)

    # --- sources ------------------------------------------------------------------------------
    def add(self, source: Hashable, ts: Any, item: Any, order: Any = None) -> None:
        """Source `source` adds a tuple; its timestamps must not go back. `order` settles the
        place among tuples of the same timestamp (default: the source's rank, then arrival)."""
        self.add_many(source, [(ts, order, item)])

    def add_many(self, source: Hashable, tuples: List[Tuple[Any, Any, Any]]) -> None:
        """`add` for several (ts, order, item) of one source, in timestamp order, at once."""
        if not tuples:
            return
        with self._lock:
            if source not in self._frontier:
                raise KeyError(f"{source!r} is not a source of this gate")
            rank, pending, arrivals = (self._rank[source],), self._pending, self._arrivals
            last = self._frontier[source]
            for ts, _, _ in tuples:   # all or nothing: check before adding any
                if ts < last:
                    raise ValueError(f"source {source!r} added a tuple at {ts!r}, before its "
                                     f"frontier {last!r}: a source's timestamps must not go "
                                     f"back")
                last = ts
            for ts, order, item in tuples:
                heapq.heappush(pending, (ts, rank if order is None else order,
                                         next(arrivals), source, item))
            self._frontier[source] = last
            self._release()

    def advance(self, source: Hashable, ts: Any) -> None:
        """Source `source` promises that it adds nothing before `ts` (a watermark)."""
        with self._lock:
            if source not in self._frontier:
                raise KeyError(f"{source!r} is not a source of this gate")
            if ts > self._frontier[source]:
                self._frontier[source] = ts
                self._release()

    def close(self, source: Hashable) -> None:
        """Source `source` adds nothing more; it stays a source (use remove_sources to drop)."""
        self.advance(source, CLOSED)

    def add_sources(self, new: Iterable[Hashable], like: Optional[Hashable] = None) -> bool:
        """Add the sources in `new` not already here, at `like`'s frontier (or the least one).
        True when every one of them was added."""
        with self._lock:
            start = self._frontier[like] if like is not None else self._least
            added = True
            for s in new:
                if s in self._frontier:
                    added = False
                    continue
                self._frontier[s] = start
                self._rank[s] = next(self._ranks)
            self._release()
            return added

    def remove_sources(self, gone: Iterable[Hashable]) -> bool:
        """Remove the sources in `gone`; their frontiers no longer hold tuples back. True when
        every one of them was a source."""
        with self._lock:
            removed = True
            for s in gone:
                if s in self._frontier:
                    del self._frontier[s], self._rank[s]
                else:
                    removed = False
            self._release()
            return removed

    def sources(self) -> List[Hashable]:
        with self._lock:
            return list(self._frontier)

    # --- readers ------------------------------------------------------------------------------
    def get(self, reader: Hashable) -> Optional[Tuple[Any, Any]]:
        """The next ready (ts, item) reader `reader` has not had, or None."""
        with self._lock:
            i = self._cursor[reader]
            if i - self._base >= len(self._ready):
                return None
            self._cursor[reader] = i + 1
            return self._ready[i - self._base]

    def get_many(self, reader: Hashable, before: Any = CLOSED,
                 limit: Optional[int] = None) -> List[Tuple[Any, Any]]:
        """The ready (ts, item) reader `reader` has not had, in order, up to `limit` of them
        and only those with ts below `before`."""
        with self._lock:
            ready, base = self._ready, self._base
            i = self._cursor[reader]
            end = len(ready) if limit is None else min(len(ready), i - base + limit)
            j = i - base
            if end > j and not ready[end - 1][0] < before:
                end = bisect_left(ready, before, j, end, key=itemgetter(0))
            out = ready[j:end]
            self._cursor[reader] = base + max(j, end)
            self._compact()
            return out

    def add_readers(self, new: Iterable[Hashable], like: Hashable) -> bool:
        """Add the readers in `new` not already here, each getting what `like` gets next. True
        when every one of them was added."""
        with self._lock:
            at = self._cursor[like]
            added = True
            for r in new:
                if r in self._cursor:
                    added = False
                else:
                    self._cursor[r] = at
            return added

    def remove_readers(self, gone: Iterable[Hashable]) -> bool:
        """Remove the readers in `gone`. True when every one of them was a reader."""
        with self._lock:
            removed = True
            for r in gone:
                if self._cursor.pop(r, None) is None:
                    removed = False
            self._compact()
            return removed

    def readers(self) -> List[Hashable]:
        with self._lock:
            return list(self._cursor)

    def frontier(self) -> float:
        """The least source frontier: every tuple not yet ready has a timestamp at or after
        it (CLOSED once every source closed or none is left)."""
        with self._lock:
            return self._least

    def frontiers(self) -> Dict[Hashable, Any]:
        """Each source's frontier."""
        with self._lock:
            return dict(self._frontier)

    def pending(self) -> Dict[Hashable, List[Tuple[Any, Any, Any]]]:
        """Per source, the (ts, order, item) added but not ready yet, in timestamp order: with
        `frontiers`, what a checkpoint keeps of a gate whose readers had all that was ready."""
        with self._lock:
            out: Dict[Hashable, list] = {}
            for ts, order, _, source, item in sorted(self._pending):
                out.setdefault(source, []).append((ts, order, item))
            return out

    def backlog(self, reader: Hashable) -> int:
        """How many ready tuples `reader` has not had yet."""
        with self._lock:
            return self._base + len(self._ready) - self._cursor[reader]

    # --- inside -------------------------------------------------------------------------------
    def _release(self) -> None:
        """Move the pending tuples below the least frontier to the ready stream, in order."""
        least = self._least = min(self._frontier.values(), default=CLOSED)
        pending, ready = self._pending, self._ready
        while pending and pending[0][0] < least:
            ts, _, _, _, item = heapq.heappop(pending)
            ready.append((ts, item))

    def _compact(self) -> None:
        """Drop the ready tuples every reader has had."""
        if not self._cursor:
            return
        done = min(self._cursor.values()) - self._base
        if done >= _COMPACT and done * 2 >= len(self._ready):
            del self._ready[:done]
            self._base += done
