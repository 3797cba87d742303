"""Beam's `Deduplicate` and `DeduplicatePerKey`: the first of equal elements (or of a key's
values) in a window passes, the others are dropped until the key is forgotten, after
`event_time_duration` of event time (the watermark passing the first one's timestamp plus
it) or `processing_time_duration` of processing time (from the wall clock when it was seen,
as Beam's). A stateful DoFn — a flag and two timers per key and window — so it runs on every
runner, batch and streaming; a window's state goes when the window expires."""
from __future__ import annotations

from typing import Any, Iterator, Optional, Tuple, Union

from ..windowing import Duration, Timestamp, duration_micros
from .core import Keys, Map, ParDo
from .dofn import DoFn
from .kinds import KV
from .ptransform import PTransform
from .pvalue import PCollection
from .userstate import ReadModifyWriteStateSpec, TimeDomain, TimerSpec, on_timer

DurationLike = Union[int, float, Duration]


class DeduplicatePerKeyFn(DoFn):
    """Passes a key's first value in a window; forgets the key when a timer fires."""

    SEEN = ReadModifyWriteStateSpec("seen")
    EVENT_TIME_EXPIRY = TimerSpec("event_time_expiry", TimeDomain.WATERMARK)
    PROCESSING_TIME_EXPIRY = TimerSpec("processing_time_expiry", TimeDomain.REAL_TIME)

    def __init__(self, processing_time_us: Optional[int], event_time_us: Optional[int]) -> None:
        self.processing_time_us, self.event_time_us = processing_time_us, event_time_us

    def process(self, kv: Tuple[Any, Any], timestamp: Any = DoFn.TimestampParam,
                window: Any = DoFn.WindowParam, seen: Any = DoFn.StateParam(SEEN),
                event_timer: Any = DoFn.TimerParam(EVENT_TIME_EXPIRY),
                processing_timer: Any = DoFn.TimerParam(PROCESSING_TIME_EXPIRY)
                ) -> Iterator[Tuple[Any, Any]]:
        if seen.read():
            return
        seen.write(True)
        if self.event_time_us is not None:
            expiry = Timestamp.from_micros(timestamp.micros + self.event_time_us)
            if expiry <= window.max_timestamp():   # else the window's own expiry forgets it
                event_timer.set(expiry)
        if self.processing_time_us is not None:
            processing_timer.set(Timestamp.from_micros(Timestamp.now().micros
                                                       + self.processing_time_us))
        yield kv

    @on_timer(EVENT_TIME_EXPIRY)
    def forget_in_event_time(self, seen: Any = DoFn.StateParam(SEEN)) -> None:
        seen.clear()

    @on_timer(PROCESSING_TIME_EXPIRY)
    def forget_in_processing_time(self, seen: Any = DoFn.StateParam(SEEN)) -> None:
        seen.clear()


class DeduplicatePerKey(PTransform):
    """Beam's `DeduplicatePerKey(processing_time_duration=None, event_time_duration=None)`:
    of (key, value) pairs, the first of each key in a window passes; later ones are dropped
    until the key is forgotten (see the module docstring). At least one duration is
    needed."""

    def __init__(self, processing_time_duration: Optional[DurationLike] = None,
                 event_time_duration: Optional[DurationLike] = None,
                 label: Optional[str] = None) -> None:
        super().__init__(label)
        if processing_time_duration is None and event_time_duration is None:
            raise ValueError("DeduplicatePerKey requires at least one of "
                             "processing_time_duration or event_time_duration")
        self.fn = DeduplicatePerKeyFn(
            None if processing_time_duration is None
            else duration_micros(processing_time_duration),
            None if event_time_duration is None else duration_micros(event_time_duration))

    def expand(self, pcoll: PCollection) -> PCollection:
        out = pcoll | "DeduplicateFn" >> ParDo(self.fn)
        out.kind = KV
        return out


class Deduplicate(PTransform):
    """Beam's `Deduplicate(processing_time_duration=None, event_time_duration=None)`: the
    first of equal elements in a window passes (DeduplicatePerKey with the element as its
    key)."""

    def __init__(self, processing_time_duration: Optional[DurationLike] = None,
                 event_time_duration: Optional[DurationLike] = None,
                 label: Optional[str] = None) -> None:
        super().__init__(label)
        self.per_key = DeduplicatePerKey(processing_time_duration, event_time_duration)

    def expand(self, pcoll: PCollection) -> PCollection:
        keyed = pcoll | "Key" >> Map(lambda element: (element, None))
        keyed.kind = KV
        return keyed | "DeduplicatePerKey" >> self.per_key | "Unkey" >> Keys()
