"""WindowingStrategy: the where/when/how a PCollection carries to its next grouping."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..windowing import GlobalWindows, TimestampCombiner, WindowFn
from .accumulation import AccumulationMode
from .definitions import DefaultTrigger, Trigger


@dataclass(frozen=True)
class WindowingStrategy:
    """WindowFn, trigger, accumulation mode, allowed lateness (µs) and timestamp combiner."""

    window_fn: WindowFn = field(default_factory=GlobalWindows)
    trigger: Trigger = field(default_factory=DefaultTrigger)
    accumulation_mode: AccumulationMode = AccumulationMode.DISCARDING
    allowed_lateness_us: int = 0
    timestamp_combiner: TimestampCombiner = TimestampCombiner.OUTPUT_AT_EOW

    def with_(self, **changes: Any) -> "WindowingStrategy":
        return replace(self, **changes)

    @property
    def is_default(self) -> bool:
        return (isinstance(self.window_fn, GlobalWindows) and self.trigger == DefaultTrigger()
                and self.allowed_lateness_us == 0)
