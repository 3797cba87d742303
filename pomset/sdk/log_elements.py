"""Beam's `LogElements`: each element printed (or logged at a level), with its timestamp,
window and pane if asked, and passed on unchanged — for looking at a pipeline's data."""
from __future__ import annotations

import logging
from typing import Any, Iterator, Optional

from .core import ParDo
from .dofn import DoFn
from .ptransform import PTransform
from .pvalue import PCollection


def _time(ts: Any, use_epoch_time: bool) -> str:
    if use_epoch_time:
        return str(ts.micros // 1_000_000)
    return ts.to_datetime().replace(tzinfo=None).isoformat() + "Z"


def _pane(pane: Any) -> str:
    return (f"PaneInfo(first: {pane.is_first}, last: {pane.is_last}, "
            f"timing: {pane.timing.value}, index: {pane.index}, "
            f"nonspeculative_index: {pane.nonspeculative_index})")


class _Log(DoFn):
    def __init__(self, prefix: str, with_timestamp: bool, with_window: bool,
                 with_pane_info: bool, level: Optional[int], use_epoch_time: bool) -> None:
        self.prefix = prefix
        self.with_timestamp, self.with_window = with_timestamp, with_window
        self.with_pane_info, self.level = with_pane_info, level
        self.use_epoch_time = use_epoch_time

    def process(self, element: Any, timestamp: Any = DoFn.TimestampParam,
                window: Any = DoFn.WindowParam,
                pane: Any = DoFn.PaneInfoParam) -> Iterator[Any]:
        line = self.prefix + str(element)
        if self.with_timestamp:
            stamp = _time(timestamp, self.use_epoch_time)
            line += f", timestamp={stamp}" if self.use_epoch_time else f", timestamp='{stamp}'"
        if self.with_window and hasattr(window, "start"):
            line += (f", window(start={_time(window.start, self.use_epoch_time)}, "
                     f"end={_time(window.end, self.use_epoch_time)})")
        if self.with_pane_info:
            line += f", pane_info={_pane(pane)}"
        if self.level is None:
            print(line)
        else:
            logging.getLogger(__name__).log(self.level, line)
        yield element


class LogElements(PTransform):
    """Beam's `LogElements(label=None, prefix='', with_timestamp=False, with_window=False,
    level=None, use_epoch_time=False, with_pane_info=False)`: prints each element (logs it at
    `level` if given) and outputs it unchanged."""

    def __init__(self, label: Optional[str] = None, prefix: str = "",
                 with_timestamp: bool = False, with_window: bool = False,
                 level: Optional[int] = None, use_epoch_time: bool = False,
                 with_pane_info: bool = False) -> None:
        super().__init__(label)
        self.log = _Log(prefix, with_timestamp, with_window, with_pane_info, level,
                        use_epoch_time)

    def expand(self, pcoll: PCollection) -> PCollection:
        return pcoll | "Log" >> ParDo(self.log)
