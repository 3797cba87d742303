"""The output watermark rule every host follows: a step's output watermark is the minimum of
its input watermarks and its holds, and it never goes back."""
from __future__ import annotations

from typing import Iterable


def output_watermark(current: int, bounds: Iterable[int]) -> int:
    """The output watermark after a step that was at `current`, given its input watermarks
    and holds (`bounds`; none means the end of time is no bound, so `current` stays)."""
    bound = min(bounds, default=None)
    return current if bound is None or bound <= current else bound
