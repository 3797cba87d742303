"""TestStream: a source whose elements, watermark and processing clock move only by its steps.

Its processing clock starts at 0. When the steps run out the watermark moves to the end of
time, as Beam's TestStream closes it, so every window closes and every event-time timer fires;
it is a bounded source. `TestStream(endless=True)` models a stream still running when the run
stops: its watermark stays where the steps left it, windows still open stay unfired, and it is
an unbounded source (unless its steps move the watermark to infinity).
"""
from __future__ import annotations

from typing import Any, Iterable, List, Optional, Tuple

from ..windowing import MAX_MICROS, MIN_MICROS, TimestampedValue, duration_micros, to_micros
from ..windowing.time import TimeLike
from .core import Source
from . import plan_kinds
from .kinds import kind_of_values

ELEMENTS, WATERMARK, PROCESSING_TIME = "elements", "watermark", "processing_time"


class TestStream(Source):
    """A scripted stream: `add_elements`, `advance_watermark_to`, `advance_processing_time`
    (see the module docstring for how it ends; `coder` is Beam's, accepted and not used)."""

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.DRIVER_READ

    __test__ = False  # not a pytest test class

    def __init__(self, label: Optional[str] = None, *, endless: bool = False,
                 coder: Any = None) -> None:
        super().__init__(label)
        self.steps: List[Tuple[str, Any]] = []
        self._wm = MIN_MICROS
        self.endless = endless

    def add_elements(self, elements: Iterable[Any]) -> "TestStream":
        """Deliver elements (plain values get the current watermark as timestamp, like Beam)
        as one bundle at the current processing time."""
        batch = []
        for e in elements:
            if isinstance(e, TimestampedValue):
                batch.append((e.value, e.ts))
            else:
                batch.append((e, self._wm))
        self.steps.append((ELEMENTS, batch))
        return self

    def advance_watermark_to(self, timestamp: TimeLike) -> "TestStream":
        """Move the watermark forward to `timestamp` (never backward)."""
        t = to_micros(timestamp)
        if t < self._wm:
            raise ValueError(f"TestStream watermark must not go back: {timestamp!r} is before the "
                             f"current watermark")
        self._wm = t
        self.steps.append((WATERMARK, t))
        return self

    def advance_watermark_to_infinity(self) -> "TestStream":
        """Move the watermark to the end of time: every window closes."""
        self._wm = MAX_MICROS
        self.steps.append((WATERMARK, MAX_MICROS))
        return self

    def advance_processing_time(self, advance_by: float) -> "TestStream":
        """Move the processing clock forward by `advance_by` seconds."""
        d = duration_micros(advance_by)
        if d <= 0:
            raise ValueError(f"advance_processing_time needs a positive duration, got {advance_by!r}")
        self.steps.append((PROCESSING_TIME, d))
        return self

    @property
    def bounded(self) -> bool:  # type: ignore[override]
        return not self.endless or self._wm >= MAX_MICROS

    def kind(self) -> Optional[str]:
        return kind_of_values(v for kind, batch in self.steps if kind == ELEMENTS for v, _ in batch)
