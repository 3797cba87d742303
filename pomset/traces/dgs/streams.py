"""A DGS step's input as separate streams, each read where it is handled (Kallas et al.,
Sec. 3.4: Flumina's producers sit by the workers of their streams): `pm.dgs.Stream(tag,
read)` is one input stream, events of one tag in timestamp order, and
`pm.dgs.ReadStreams(streams, trace)` the typed source of their events, for
`p | pm.dgs.ReadStreams(...) | program`. The input is the streams merged by timestamp, ties
in the order the streams are listed (and, within one stream, in its own order): the sequential
program's input. Where a runner deploys the program on a plan of several workers right after
this source, each worker calls `read` of its own streams itself (the local runner's worker
processes), so reading and parsing run in parallel too; elsewhere the runner reads them all,
merged, like any bounded source."""
from __future__ import annotations

import functools
import heapq
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ...sdk.core import Source, default_strategy
from ...sdk.errors import PipelineConstructionError
from ...sdk.kinds import UNKNOWN
from ...sdk.pvalue import PCollection
from ...sdk import plan_kinds
from ...windowing import GLOBAL_WINDOW, MIN_MICROS, NO_FIRING, WindowedValue
from ...windowing.time import to_micros
from ..edges import EdgeTrace
from ..types import KeyValueType, TraceType

#: an event's key orders the merged input: (timestamp - MIN) << TS_SHIFT | stream << SEQ_BITS
#: | its place among the stream's events of the same timestamp
SEQ_BITS = 24
STREAM_BITS = 16
TS_SHIFT = SEQ_BITS + STREAM_BITS


class StreamError(ValueError):
    """A DGS input stream failed: its events went back in time, it has too many events at one
    timestamp, or reading it raised (the message names the stream, and has the traceback)."""


class Stream:
    """One input stream of a DGS step: `read()` gives its `(timestamp, value)` events in
    timestamp order (timestamps in seconds, or `pm.Timestamp`s), all of tag `tag`. `read` is
    called where the stream is handled (in a worker process, for a plan of several), so it
    should open its file or partition itself; `name` is for messages."""

    def __init__(self, tag: Any, read: Callable[[], Iterable[Tuple[Any, Any]]],
                 name: Optional[str] = None) -> None:
        if not callable(read):
            raise TypeError(f"Stream {tag!r}: read must be callable (it returns the stream's "
                            f"(timestamp, value) events), got {read!r}")
        self.tag = tag
        self.read = read
        self.name = name if name is not None else _name_of(read)

    def __repr__(self) -> str:
        return f"Stream({self.tag!r}, {self.name!r})"


def _name_of(read: Callable[..., Any]) -> str:
    """A reader's name for messages: a function's name, with a partial's arguments."""
    if isinstance(read, functools.partial):
        args = [repr(a) for a in read.args] + [f"{k}={v!r}" for k, v in read.keywords.items()]
        return f"{_name_of(read.func)}({', '.join(args)})"
    return getattr(read, "__name__", repr(read))


def keyed_events(stream: Stream, index: int) -> Iterator[Tuple[int, Any, Any]]:
    """The stream's events as `(key, tag, value)`, `index` its place among the step's streams;
    a step back in time, or a failure to read, raises StreamError naming the stream."""
    tag, n = stream.tag, -1
    # a key is (µs - MIN_MICROS) << TS_SHIFT | index << SEQ_BITS | seq, as one shift and adds
    offset = ((-MIN_MICROS) << TS_SHIFT) | (index << SEQ_BITS)
    last, seq = -1, 0   # the key (seq 0) of the latest timestamp, and its events so far - 1
    try:
        for n, (ts, value) in enumerate(stream.read()):
            key = ((round(ts * 1_000_000) if type(ts) is float else to_micros(ts))
                   << TS_SHIFT) + offset
            if key > last:
                last, seq = key, 0
                yield key, tag, value
            elif key == last:
                seq += 1
                if seq >> SEQ_BITS:
                    raise StreamError(f"DGS stream {index} {stream!r}: more than "
                                      f"{1 << SEQ_BITS:,} events at timestamp "
                                      f"{timestamp_of(key) / 1e6} s")
                yield key + seq, tag, value
            else:
                raise StreamError(
                    f"DGS stream {index} {stream!r}: event {n} (value {value!r}) is at "
                    f"{timestamp_of(key) / 1e6} s, before the one ahead of it at "
                    f"{timestamp_of(last) / 1e6} s; a stream's events must come in timestamp "
                    f"order")
    except StreamError:
        raise
    except Exception as exc:
        import traceback
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        raise StreamError(f"DGS stream {index} {stream!r}: reading it failed after {n + 1} "
                          f"events: {type(exc).__name__}: {exc}\n\nOriginal traceback:\n{tb}"
                          ) from exc


def timestamp_of(key: int) -> int:
    """The timestamp (µs) of the event with this key."""
    return (key >> TS_SHIFT) + MIN_MICROS


def merged_items(streams: Sequence[Stream]) -> Iterator[Tuple[int, Tuple[Any, Any]]]:
    """Every stream's events as `(µs, (tag, value))`, merged: the sequential program's input."""
    keyed = [keyed_events(s, i) for i, s in enumerate(streams)]
    for key, tag, value in keyed[0] if len(keyed) == 1 else heapq.merge(*keyed):
        yield timestamp_of(key), (tag, value)


class ReadStreams(Source):
    """The events of DGS input streams (`pm.dgs.Stream`), typed `trace` (a general
    `pm.TraceType` naming every stream's tag), merged by timestamp: `p |
    pm.dgs.ReadStreams([Stream("value", read_a), ...], trace) | program`. With a plan of
    several workers on the local runner, each worker reads its own streams; `period` is the
    edge's marker period (seconds of event time)."""

    makes_bundles = True

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.DGS_READ

    def __init__(self, streams: Sequence[Stream], trace: TraceType, period: float = 1.0,
                 label: Optional[str] = None) -> None:
        super().__init__(label)
        streams = list(streams)
        if not streams or not all(isinstance(s, Stream) for s in streams):
            raise TypeError(f"ReadStreams takes a non-empty list of pm.dgs.Stream, got "
                            f"{streams!r}")
        if len(streams) > 1 << STREAM_BITS:
            raise ValueError(f"ReadStreams: at most {1 << STREAM_BITS:,} streams, got "
                             f"{len(streams):,}")
        if not isinstance(trace, TraceType) or isinstance(trace, KeyValueType):
            raise TypeError(f"ReadStreams: trace must be a general pm.TraceType({{tag: type}}, "
                            f"depends=[...]), got {trace!r}")
        unknown = [s for s in streams if s.tag not in trace.tags]
        if unknown:
            raise PipelineConstructionError(
                f"ReadStreams: streams {unknown} have tags outside the trace type's alphabet "
                f"{sorted(map(repr, trace.tags))}")
        self.streams = streams
        self.trace_type = trace
        self.period = to_micros(period)
        if self.period <= 0:
            raise ValueError(f"ReadStreams: period must be positive, got {period!r}")

    def default_label(self) -> str:
        return f"ReadStreams({len(self.streams)})"

    def kind(self) -> Optional[str]:
        return UNKNOWN

    def outputs(self, node: Any) -> Dict[Optional[str], PCollection]:
        pc = PCollection(None, None, None, default_strategy(), True, UNKNOWN)
        pc.trace = EdgeTrace(self.trace_type, self.period, node.label, "declared")
        return {None: pc}

    def bundles(self, size: int) -> Iterator[List[WindowedValue]]:
        """The merged events as elements, `size` at a time (read here, by the runner)."""
        raw = WindowedValue.raw
        bundle: List[WindowedValue] = []
        for ts, item in merged_items(self.streams):
            bundle.append(raw(item, ts, GLOBAL_WINDOW, NO_FIRING, 1))
            if len(bundle) >= size:
                yield bundle
                bundle = []
        if bundle:
            yield bundle

    def rates(self) -> Dict[Any, int]:
        """How many streams each tag has: the optimizer's rates before any event is read."""
        out: Dict[Any, int] = {}
        for s in self.streams:
            out[s.tag] = out.get(s.tag, 0) + 1
        return out
