"""A TestStream replayed on any runner: its steps as (elements, watermark, processing time),
each one step of the run (a local propagation, a Spark micro-batch), the watermark and the
clock as they stand after the step (the clock starts at 0). When its steps are over the
watermark moves to the end of time, as Beam's TestStream closes it, unless the stream is
`endless` (a stream still running when the run stops)."""
from __future__ import annotations

from typing import Any, List, Tuple

from ..sdk.test_stream import ELEMENTS, PROCESSING_TIME, WATERMARK
from ..windowing import GLOBAL_WINDOW, MAX_MICROS, MIN_MICROS, NO_FIRING, WindowedValue

Step = Tuple[List[WindowedValue], int, int]


def _windowed(item: tuple) -> WindowedValue:
    """An element of a step, (value, µs) in the global window or (value, µs, window, pane)."""
    if len(item) == 2:
        return WindowedValue.raw(item[0], item[1], GLOBAL_WINDOW, NO_FIRING, 1)
    value, ts, window, pane = item
    return WindowedValue.raw(value, ts, window, pane, 1)


def stream_steps(stream: Any) -> List[Step]:
    """The steps of TestStream `stream`: its elements (in the global window unless given
    theirs), the watermark (never going back) and the processing clock after each."""
    wm, pt, steps = MIN_MICROS, 0, []
    for kind, arg in stream.steps:
        elements: List[WindowedValue] = []
        if kind == ELEMENTS:
            elements = [_windowed(item) for item in arg]
        elif kind == WATERMARK:
            wm = max(wm, arg)
        elif kind == PROCESSING_TIME:
            pt += arg
        steps.append((elements, wm, pt))
    if wm < MAX_MICROS and not stream.endless:
        steps.append(([], MAX_MICROS, pt))
    return steps
