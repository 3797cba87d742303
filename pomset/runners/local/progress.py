"""Progress on a terminal while a run goes (records per stage, elapsed time) and a summary of
its metrics at the end; silent when stderr is not a terminal or with --quiet."""
from __future__ import annotations

import sys
import time
from typing import Any, Dict, List, TextIO


class Progress:
    """Redraws one status line at most every `interval` seconds."""

    def __init__(self, stages: List[Any], quiet: bool, stream: TextIO = None, interval: float = 0.5,
                 force: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.enabled = force or (not quiet and self.stream.isatty())
        self.stages = stages
        self.interval = interval
        self.start = time.monotonic()
        self.last = 0.0
        self.calls = 0
        self.drawn = 0   # length of the status line on screen, to erase it fully

    def tick(self) -> None:
        if not self.enabled:
            return
        self.calls += 1
        if self.calls % 64:
            return
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        parts = []
        for s in self.stages:
            m = s.metrics()
            n = m.get("read", m.get("written", m.get("received", 0)))
            parts.append(f"{s.label.split('/')[-1][:18]}={n}")
        line = (f"[{now - self.start:6.1f}s] " + " ".join(parts))[:200]
        self.stream.write("\r" + line.ljust(self.drawn))
        self.drawn = max(self.drawn, len(line))
        self.stream.flush()

    def summary(self, metrics: Dict[str, Dict[str, int]]) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        if self.drawn:
            self.stream.write("\r" + " " * self.drawn + "\r")
        self.stream.write(format_summary(metrics, elapsed) + "\n")
        self.stream.flush()


def format_summary(metrics: Dict[str, Dict[str, int]], elapsed: float) -> str:
    """A table of per-stage metrics with totals of late, dropped and dead-lettered elements."""
    width = max((len(k) for k in metrics), default=5)
    lines = [f"pomset run finished in {elapsed:.2f}s"]
    totals = {"late": 0, "dropped": 0, "dead_lettered": 0}
    for label, m in metrics.items():
        cols = ", ".join(f"{k}={v}" for k, v in m.items())
        lines.append(f"  {label.ljust(width)}  {cols}")
        for k in totals:
            totals[k] += m.get(k, 0)
    lines.append("  " + ", ".join(f"{k}: {v}" for k, v in totals.items()))
    return "\n".join(lines)
