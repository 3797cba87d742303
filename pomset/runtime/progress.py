"""What every runner shows on a terminal while a run goes: one status line (records per step,
elapsed time; for a source whose size is known, the share of it read and an estimate of the
time left; for a streaming run, its backlog, watermark delay and last micro-batch, see
`backlog`), redrawn in place, and a summary of the run's metrics at the end; silent when
stderr is not a terminal or with --quiet."""
from __future__ import annotations

import sys
import time
from typing import Dict, Optional, TextIO, Tuple

from .backlog import PROGRESS

Metrics = Dict[str, Dict[str, int]]
#: per source step whose size is known: (read so far, size), in the source's units
Reads = Dict[str, Tuple[int, int]]


class ProgressLine:
    """The status line and the summary; `draw` redraws at most every `interval` seconds,
    with `status` (a streaming run's backlog, `backlog.status_text`) after its note."""

    def __init__(self, quiet: bool, stream: Optional[TextIO] = None, interval: float = 0.5,
                 force: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.enabled = force or (not quiet and self.stream.isatty())
        self.interval = interval
        self.start = time.monotonic()
        self.last = 0.0
        self.drawn = 0   # length of the status line on screen, to erase it fully
        self.first: Dict[str, Tuple[float, int]] = {}   # per source: when it was first seen read
        self.status = ""

    def draw(self, metrics: Metrics, note: str = "", now: bool = False,
             reads: Optional[Reads] = None) -> None:
        """Show each step's headline count, with the share read and the time left of the
        sources in `reads` (and `note`, e.g. Spark's tasks done, or what the run is doing
        while no records move), if the last drawing is `interval` old or `now`."""
        at = time.monotonic()
        if not self.enabled or (not now and at - self.last < self.interval):
            return
        self.last = at
        reads = reads or {}
        parts = [f"{short(label.split('/')[-1])}={headline(m)}"
                 + (" " + self.share(label, *reads[label], at) if label in reads else "")
                 for label, m in metrics.items() if isinstance(m, dict) and label != PROGRESS]
        line = " ".join(filter(None, [f"[{at - self.start:6.1f}s]", note.strip(), self.status]
                               + parts))[:200]
        self.stream.write("\r" + line.ljust(self.drawn))
        self.drawn = max(self.drawn, len(line))
        self.stream.flush()

    def share(self, label: str, done: int, total: int, at: float) -> str:
        """`37%` of a source read, and `ETA 0:12` once it has read more since it was first
        seen reading: the rest at the rate it has read since then."""
        if done >= total:
            return "100%"
        text = f"{100 * done // total}%"
        if done > 0:
            since, then = self.first.setdefault(label, (at, done))
            if done > then and at > since:
                text += f" ETA {clock((total - done) * (at - since) / (done - then))}"
        return text

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


def clock(seconds: float) -> str:
    """A duration as `m:ss`, or `h:mm:ss` from an hour on."""
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def headline(m: Dict[str, int]) -> int:
    """The one count a step shows on the status line: read, else written, else received."""
    return m.get("read", m.get("written", m.get("received", 0)))


def format_summary(metrics: Metrics, elapsed: float) -> str:
    """A table of per-step metrics with totals of late, dropped and dead-lettered elements."""
    width = max((len(k) for k in metrics), default=5)
    lines = [f"pomset run finished in {elapsed:.2f}s"]
    totals = {"late": 0, "dropped": 0, "dead_lettered": 0}
    for label, m in metrics.items():
        if label == PROGRESS:
            continue
        cols = ", ".join(f"{k}={v}" for k, v in m.items())
        lines.append(f"  {label.ljust(width)}  {cols}")
        for k in totals:
            totals[k] += m.get(k, 0)
    lines.append("  " + ", ".join(f"{k}: {v}" for k, v in totals.items()))
    return "\n".join(lines)
