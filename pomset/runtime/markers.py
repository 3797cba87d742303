"""What a streaming step learns from the markers of its inputs, on any runner that sends
markers in band with its data (Spark's streaming bus carries them pickled, in its rows).

A channel is one producer of an input's markers: a source or one of its partitions, a bucket
of a stateful step upstream. A `ChannelMarker` tells how far its channel's watermark has got
(µs), the processing time it was sent at when the channel drives the clock, or that the
channel has gone idle. A `MarkerRange` tells the earliest and latest timestamps of a typed
edge upstream, so that a template step's markers cover the whole range of its input, as the
markers of a source reach every step downstream of it.

`Channels` keeps what these say for a step: a channel's watermark only goes forward; an
input's watermark is the minimum over its channels that are not idle (the rule of a
partitioned source, `source_watermark`); the clock is the latest processing time shown; the
ranges seen combine into one."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Sequence, Set, Tuple, Union

from ..sdk.io.kafka import source_watermark
from ..windowing import MAX_MICROS, MIN_MICROS


@dataclass(frozen=True, slots=True)
class ChannelMarker:
    """Channel `channel` has reached `watermark` (µs), at `processing_time` (µs; None when the
    channel does not drive the clock); or, `idle`, it holds nothing back until its next
    marker that is not idle (its watermark then unused)."""

    channel: str
    watermark: int = MIN_MICROS
    processing_time: Optional[int] = None
    idle: bool = False


def _least(a: Optional[int], b: Optional[int]) -> Optional[int]:
    return b if a is None else a if b is None else min(a, b)


def _greatest(a: Optional[int], b: Optional[int]) -> Optional[int]:
    return b if a is None else a if b is None else max(a, b)


@dataclass(frozen=True, slots=True)
class MarkerRange:
    """The earliest and latest timestamps (µs) of a typed edge upstream, None where it has
    none; `a | b` covers both."""

    earliest: Optional[int] = None
    latest: Optional[int] = None

    def __or__(self, other: MarkerRange) -> MarkerRange:
        return MarkerRange(_least(self.earliest, other.earliest),
                           _greatest(self.latest, other.latest))

    @property
    def empty(self) -> bool:
        """Whether it says nothing (no timestamp either way)."""
        return self.earliest is None and self.latest is None


Marker = Union[ChannelMarker, MarkerRange]


class Channels:
    """What the markers a step received say: the watermark of each (input, channel) and which
    are idle, the clock (the latest processing time shown; 0 before any), and the combined
    range (`MarkerRange`) of the typed edges upstream of any input."""

    def __init__(self) -> None:
        self.watermarks: Dict[Tuple[int, str], int] = {}
        self.idle: Set[Tuple[int, str]] = set()
        self.clock = 0
        self.range = MarkerRange()

    def observe(self, markers: Iterable[Tuple[int, Marker]]) -> None:
        """Take markers, each with the index of the input it came on."""
        for index, marker in markers:
            if isinstance(marker, MarkerRange):
                self.range = self.range | marker
                continue
            channel = (index, marker.channel)
            if marker.idle:
                self.idle.add(channel)
            else:
                self.idle.discard(channel)
                if marker.watermark > self.watermarks.get(channel, MIN_MICROS):
                    self.watermarks[channel] = marker.watermark
            if marker.processing_time is not None and marker.processing_time > self.clock:
                self.clock = marker.processing_time

    def input_watermark(self, index: int, channels: Sequence[str]) -> int:
        """Input `index`'s watermark: the minimum over its `channels` that are not idle,
        `MIN_MICROS` when all are; `MAX_MICROS` when it has none (nothing can come). Callers
        keep their own from going back."""
        if not channels:
            return MAX_MICROS
        return source_watermark(((self.watermarks.get((index, c), MIN_MICROS),
                                  (index, c) in self.idle) for c in channels), MIN_MICROS)
