"""TestStream: a source whose elements, watermark and processing clock move only by its events.

Its processing clock starts at 0. When the events run out the watermark moves to the end of
time, as Beam's TestStream closes it, so every window closes and every event-time timer fires;
it is a bounded source. `TestStream(endless=True)` models a stream still running when the run
stops: its watermark stays where the events left it, windows still open stay unfired, and it
is an unbounded source (unless its events move the watermark to infinity).

As in Beam, events may name an output `tag`: the stream then gives a dict of PCollections,
one per tag, each element in its tag's. Each output's elements are stamped by its own
watermark; the watermark the outputs move by is the least of theirs (never ahead of any).
An element given as a `WindowedValueHolder` keeps its window and pane.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from ..windowing import (MAX_MICROS, MIN_MICROS, Duration, Timestamp, TimestampedValue,
                         WindowedValue, duration_micros, to_micros)
from ..windowing.time import TimeLike
from .core import FlatMap, Source
from . import plan_kinds
from .kinds import UNKNOWN, kind_of_values
from .ptransform import PTransform

ELEMENTS, WATERMARK, PROCESSING_TIME = "elements", "watermark", "processing_time"


class TestStreamError(ValueError, AssertionError):
    """A TestStream event that cannot happen (a watermark going back, a clock not moving
    forward, an element at the end of time); an AssertionError too, as Beam's."""

    __test__ = False


class Event:
    """One event of a TestStream (Beam's `test_stream.Event`)."""

    def _key(self) -> Tuple[Any, ...]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._key() == other._key()  # type: ignore

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self._key())))


class ElementEvent(Event):
    """Elements (TimestampedValues) delivered, as one bundle, to output `tag`."""

    def __init__(self, timestamped_values: Iterable[TimestampedValue],
                 tag: Optional[str] = None) -> None:
        self.timestamped_values = list(timestamped_values)
        self.tag = tag

    def _key(self) -> Tuple[Any, ...]:
        return (self.timestamped_values, self.tag)

    def __repr__(self) -> str:
        return f"ElementEvent({self.timestamped_values!r}, tag={self.tag!r})"


class WatermarkEvent(Event):
    """The watermark of output `tag` moved to `new_watermark`."""

    def __init__(self, new_watermark: TimeLike, tag: Optional[str] = None) -> None:
        self.new_watermark = Timestamp.of(new_watermark)
        self.tag = tag

    def _key(self) -> Tuple[Any, ...]:
        return (self.new_watermark.micros, self.tag)

    def __repr__(self) -> str:
        return f"WatermarkEvent({self.new_watermark!r}, tag={self.tag!r})"


class ProcessingTimeEvent(Event):
    """The processing clock moved forward by `advance_by` seconds."""

    def __init__(self, advance_by: Any) -> None:
        self.advance_by = Duration.of(advance_by)

    def _key(self) -> Tuple[Any, ...]:
        return (duration_micros(self.advance_by),)

    def __repr__(self) -> str:
        return f"ProcessingTimeEvent({self.advance_by!r})"


class WindowedValueHolder:
    """Beam's `WindowedValueHolder`: an element for `add_elements` that keeps the window,
    timestamp and pane of its WindowedValue (a plain one is put in the global window)."""

    def __init__(self, windowed_value: WindowedValue) -> None:
        if not isinstance(windowed_value, WindowedValue):
            raise TypeError(f"WindowedValueHolder holds a WindowedValue, got "
                            f"{windowed_value!r}")
        self.windowed_value = windowed_value

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, WindowedValueHolder)
                and self.windowed_value == other.windowed_value)

    def __hash__(self) -> int:
        return hash(self.windowed_value)

    def __repr__(self) -> str:
        return f"WindowedValueHolder({self.windowed_value!r})"


class TestStream(PTransform):
    """A scripted stream: `add_elements`, `advance_watermark_to`, `advance_processing_time`,
    each optionally for an output `tag` (see the module docstring for how it ends and what
    tags give; `coder` is Beam's, accepted and not used)."""

    __test__ = False  # not a pytest test class

    def __init__(self, label: Optional[str] = None, *, endless: bool = False,
                 coder: Any = None, events: Optional[Iterable[Event]] = None,
                 output_tags: Optional[Iterable[Optional[str]]] = None) -> None:
        super().__init__(label)
        self.coder = coder
        self.endless = endless
        self._events: List[Event] = []
        self._watermarks: Dict[Optional[str], int] = {}
        self.output_tags: Set[Optional[str]] = set(output_tags or ())
        for event in events or ():
            self._add(event)

    def _add(self, event: Event) -> "TestStream":
        if isinstance(event, (ElementEvent, WatermarkEvent)):
            self.output_tags.add(event.tag)
        if isinstance(event, WatermarkEvent):
            self._watermarks[event.tag] = event.new_watermark.micros
        self._events.append(event)
        return self

    def _watermark(self, tag: Optional[str]) -> int:
        return self._watermarks.get(tag, MIN_MICROS)

    def add_elements(self, elements: Iterable[Any], tag: Optional[str] = None,
                     event_timestamp: Optional[TimeLike] = None) -> "TestStream":
        """Deliver elements to output `tag` as one bundle at the current processing time: a
        TimestampedValue at its time, a WindowedValue at its time (its window dropped, as
        Beam's), a WindowedValueHolder in its window, any other value at `event_timestamp`,
        else at the output's watermark."""
        default = (self._watermark(tag) if event_timestamp is None
                   else to_micros(event_timestamp))
        values = []
        for e in elements:
            if isinstance(e, TimestampedValue):
                tv = e
            elif isinstance(e, WindowedValue):
                tv = TimestampedValue(e.value, Timestamp.from_micros(e.ts))
            elif isinstance(e, WindowedValueHolder):
                tv = TimestampedValue(e, Timestamp.from_micros(e.windowed_value.ts))
            else:
                tv = TimestampedValue(e, Timestamp.from_micros(default))
            if tv.ts >= MAX_MICROS:
                raise TestStreamError(f"TestStream element {e!r}: its timestamp must be "
                                      f"before the end of time (MAX_TIMESTAMP)")
            values.append(tv)
        return self._add(ElementEvent(values, tag))

    def advance_watermark_to(self, new_watermark: TimeLike,
                             tag: Optional[str] = None) -> "TestStream":
        """Move the watermark of output `tag` forward to `new_watermark` (never back)."""
        t = to_micros(new_watermark)
        if t < self._watermark(tag):
            raise TestStreamError(f"TestStream watermark must not go back: {new_watermark!r} "
                                  f"is before the current watermark")
        return self._add(WatermarkEvent(Timestamp.from_micros(t), tag))

    def advance_watermark_to_infinity(self, tag: Optional[str] = None) -> "TestStream":
        """Move the watermark of output `tag` to the end of time: its windows close."""
        return self._add(WatermarkEvent(Timestamp.from_micros(MAX_MICROS), tag))

    def advance_processing_time(self, advance_by: Any) -> "TestStream":
        """Move the processing clock forward by `advance_by` seconds."""
        if duration_micros(advance_by) <= 0:
            raise TestStreamError(f"advance_processing_time needs a positive duration, got "
                                  f"{advance_by!r}")
        return self._add(ProcessingTimeEvent(advance_by))

    @property
    def tagged(self) -> bool:
        """Whether its events name outputs (it then gives a dict of PCollections)."""
        return bool(self.output_tags - {None})

    @property
    def steps(self) -> List[Tuple[str, Any]]:
        """The events as the runners replay them: (ELEMENTS, [(value, µs) or (value, µs,
        window, pane)]), (WATERMARK, µs: the least of the outputs' watermarks),
        (PROCESSING_TIME, µs advanced). A tagged stream's values are (tag, value)."""
        tagged = self.tagged
        watermarks = {tag: MIN_MICROS for tag in self.output_tags or {None}}
        steps: List[Tuple[str, Any]] = []
        for event in self._events:
            if isinstance(event, ElementEvent):
                batch = []
                for tv in event.timestamped_values:
                    value = tv.value
                    held = value.windowed_value if isinstance(value, WindowedValueHolder) else None
                    if held is not None:
                        value = held.value
                    if tagged:
                        value = (event.tag, value)
                    batch.append((value, tv.ts) if held is None else
                                 (value, tv.ts, held.window, held.pane))
                steps.append((ELEMENTS, batch))
            elif isinstance(event, WatermarkEvent):
                watermarks[event.tag] = max(watermarks.get(event.tag, MIN_MICROS),
                                            event.new_watermark.micros)
                steps.append((WATERMARK, min(watermarks.values())))
            else:
                steps.append((PROCESSING_TIME, duration_micros(event.advance_by)))
        return steps

    @property
    def bounded(self) -> bool:
        """Bounded unless endless (and its watermark short of the end of time)."""
        return (not self.endless
                or any(kind == WATERMARK and t >= MAX_MICROS for kind, t in self.steps))

    def expand(self, pbegin: Any) -> Any:
        read = pbegin.pipeline.apply_as_scope(TestStreamSource(self), pbegin)
        if not self.tagged:
            return read
        return {tag: read | f"Output[{tag}]" >> FlatMap(_of_tag(tag))
                for tag in sorted(self.output_tags, key=str)}


def _of_tag(tag: Optional[str]) -> Any:
    """The values a tagged stream's element (tag, value) gives output `tag`."""
    return lambda tagged: [tagged[1]] if tagged[0] == tag else []


class TestStreamSource(Source):
    """The source a TestStream reads as: its steps, replayed by the runner (DRIVER_READ)."""

    __test__ = False

    def __init__(self, stream: TestStream) -> None:
        super().__init__(stream.label)
        self.stream = stream

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.DRIVER_READ

    @property
    def steps(self) -> List[Tuple[str, Any]]:
        return self.stream.steps

    @property
    def endless(self) -> bool:
        return self.stream.endless

    @property
    def bounded(self) -> bool:  # type: ignore[override]
        return self.stream.bounded

    def kind(self) -> Optional[str]:
        if self.stream.tagged:
            return UNKNOWN
        return kind_of_values(step[0] for kind, batch in self.steps if kind == ELEMENTS
                              for step in batch)
