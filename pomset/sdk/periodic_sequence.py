"""Beam's `PeriodicSequence` and `PeriodicImpulse`: elements at fixed intervals of real time.

For each (start, stop, interval) it reads, PeriodicSequence outputs the times start, start +
interval, ... before stop, each stamped with itself, and never before the wall clock has
reached it: a time still to come is waited for (so a sequence that starts now takes its whole
span to run, and one that ends at MAX_TIMESTAMP never ends). PeriodicImpulse is that sequence
from the pipeline's start (an Impulse); it is an unbounded PCollection, as Beam's, with each
element in its own window of `fire_interval` seconds when `apply_windowing`. A plain DoFn, so
it runs on every runner."""
from __future__ import annotations

import time
from typing import Any, Iterator, Optional, Tuple

from ..windowing import (MAX_TIMESTAMP, FixedWindows, Timestamp, TimestampedValue,
                         duration_micros, now_micros, to_micros)
from ..windowing.time import TimeLike
from .core import Impulse, Map, ParDo, WindowInto
from .dofn import DoFn
from .ptransform import PTransform
from .pvalue import PCollection


class ImpulseSeqGenDoFn(DoFn):
    """(start, stop, interval) -> the times start + i * interval before stop, each output once
    the wall clock has reached it."""

    def process(self, element: Tuple[TimeLike, TimeLike, Any]
                ) -> Iterator[TimestampedValue]:
        start, stop, interval = element
        at, end, step = to_micros(start), to_micros(stop), duration_micros(interval)
        if step <= 0:
            raise ValueError(f"PeriodicSequence needs a positive interval, got {interval!r}")
        while at < end:
            wait = at - now_micros()
            if wait > 0:
                time.sleep(wait / 1e6)
            moment = Timestamp.from_micros(at)
            yield TimestampedValue(moment, moment)
            at += step


class PeriodicSequence(PTransform):
    """Beam's `PeriodicSequence`: of (start, stop, interval) elements, the timestamps start,
    start + interval, ... before stop, each output (at its own time) once it has come."""

    def expand(self, pcoll: PCollection) -> PCollection:
        out = pcoll | "GenSequence" >> ParDo(ImpulseSeqGenDoFn())
        out.bounded = False
        return out


class PeriodicImpulse(PTransform):
    """Beam's `PeriodicImpulse(start_timestamp=now, stop_timestamp=MAX_TIMESTAMP,
    fire_interval=360.0, apply_windowing=False)`: the timestamps from `start_timestamp`,
    every `fire_interval` seconds, before `stop_timestamp`, each output once it has come; in
    its own FixedWindows(fire_interval) window when `apply_windowing`."""

    def __init__(self, start_timestamp: Optional[TimeLike] = None,
                 stop_timestamp: TimeLike = MAX_TIMESTAMP, fire_interval: float = 360.0,
                 apply_windowing: bool = False, label: Optional[str] = None) -> None:
        super().__init__(label)
        self.start_timestamp = (Timestamp.now() if start_timestamp is None
                                else Timestamp.of(start_timestamp))
        self.stop_timestamp = Timestamp.of(stop_timestamp)
        self.fire_interval = fire_interval
        self.apply_windowing = apply_windowing

    def expand(self, pbegin: Any) -> PCollection:
        span = (self.start_timestamp, self.stop_timestamp, self.fire_interval)
        out = (pbegin | "ImpulseElement" >> Impulse()
               | "MapToTimestamped" >> Map(lambda _: span)
               | "GenSequence" >> PeriodicSequence())
        if self.apply_windowing:
            out = out | "ApplyWindowing" >> WindowInto(FixedWindows(self.fire_interval))
        return out
