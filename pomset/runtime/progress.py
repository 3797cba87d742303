"""What every runner shows on a terminal while a run goes: one status line (records per step,
elapsed time), redrawn in place, and a summary of the run's metrics at the end; silent when
stderr is not a terminal or with --quiet."""
from __future__ import annotations

import sys
import time
from typing import Dict, Optional, TextIO

Metrics = Dict[str, Dict[str, int]]


class ProgressLine:
    """The status line and the summary; `draw` redraws at most every `interval` seconds."""

    def __init__(self, quiet: bool, stream: Optional[TextIO] = None, interval: float = 0.5,
                 force: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.enabled = force or (not quiet and self.stream.isatty())
        self.interval = interval
        self.start = time.monotonic()
        self.last = 0.0
        self.drawn = 0   # length of the status line on screen, to erase it fully

    def draw(self, metrics: Metrics, note: str = "", now: bool = False) -> None:
        """Show each step's headline count (and `note`, e.g. Spark's tasks done, or what the
        run is doing while no records move), if the last drawing is `interval` old or `now`."""
        at = time.monotonic()
        if not self.enabled or (not now and at - self.last < self.interval):
            return
        self.last = at
        parts = [f"{short(label.split('/')[-1])}={headline(m)}"
                 for label, m in metrics.items() if isinstance(m, dict)]
        line = " ".join([f"[{at - self.start:6.1f}s]", note] + parts).replace("  ", " ")[:200]
        self.stream.write("\r" + line.ljust(self.drawn))
        self.drawn = max(self.drawn, len(line))
        self.stream.flush()

    def summary(self, metrics: Metrics) -> None:
        """Erase the status line and print the run's summary."""
        if not self.enabled:
            return
        if self.drawn:
            self.stream.write("\r" + " " * self.drawn + "\r")
        self.stream.write(format_summary(metrics, time.monotonic() - self.start) + "\n")
        self.stream.flush()


def short(name: str, width: int = 18) -> str:
    """A step's name in at most `width` characters: whole, or cut where a word ends (before a
    space, bracket or punctuation), with an ellipsis."""
    if len(name) <= width:
        return name
    cut = max(name.rfind(c, 0, width) for c in " ()[]/.,_-:")
    return (name[:cut] if cut > 0 else name[:width - 1]).rstrip(" ([/.,_-:") + "…"


def headline(m: Dict[str, int]) -> int:
    """The one count a step shows on the status line: read, else written, else received."""
    return m.get("read", m.get("written", m.get("received", 0)))


def format_summary(metrics: Metrics, elapsed: float) -> str:
    """A table of per-step metrics with totals of late, dropped and dead-lettered elements."""
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
