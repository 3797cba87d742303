"""A ParDo's side inputs, on every runner: side elements kept by side window (retractions
netted), and main elements waiting until every side window they read is complete (its side
input's watermark past its end); the waiting elements hold the output watermark back. A batch
side input is complete at once (its watermark is at the end of time)."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from ..triggers.reducers import Bag
from ..windowing import MAX_MICROS, WindowedValue
from .elementwise import SideArgs, side_input_args, side_inputs_ready


class SideInputBuffer:
    """The side-input state of one ParDo (`state()`: plain data a runner stores) and `args`,
    the side-input views of a main element's window for `DoFnRunner.process`."""

    def __init__(self, transform: Any, sides: List[Any]) -> None:
        self.sides = sides
        self.data: List[Dict[Any, Bag]] = [{} for _ in sides]
        self.waiting: List[WindowedValue] = []
        self.args: SideArgs = side_input_args(transform, sides, self._values)

    def add_side(self, j: int, bundle: Sequence[WindowedValue]) -> None:
        """Elements of side input `j`."""
        data = self.data[j]
        for wv in bundle:
            bag = data.get(wv.window)
            if bag is None:
                bag = data[wv.window] = Bag()
            bag.add(wv.value, wv.diff)

    def ready(self, bundle: Sequence[WindowedValue], side_wms: Sequence[int]) -> list:
        """The main elements that may run now, of those waiting and `bundle` (the others wait)."""
        waiting, self.waiting = self.waiting, []
        ready = []
        for wv in (waiting + list(bundle)) if waiting else bundle:
            (ready if side_inputs_ready(self.sides, side_wms, wv.window)
             else self.waiting).append(wv)
        return ready

    def hold(self) -> int:
        """The earliest time of a waiting element (the output watermark may not pass it)."""
        return min((wv.ts for wv in self.waiting), default=MAX_MICROS)

    def _values(self, j: int, side_window: Any) -> list:
        bag = self.data[j].get(side_window)
        return list(bag.pos) if bag else []

    def state(self) -> tuple:
        """What a runner saves: the side data and the waiting elements."""
        return self.data, self.waiting

    def restore(self, state: tuple) -> None:
        self.data, self.waiting = state
