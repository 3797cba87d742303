"""Stopping a streaming run on Ctrl-C (SIGINT) or SIGTERM, the same on every runner.

The first signal asks the runner to stop at its next safe point: it commits what it did,
cleans up, and the run ends with one line on stderr saying whether the input was caught up
(`runtime.backlog`), what it committed and how to resume, and exit status 130 for SIGINT, 143
for SIGTERM (128 + the signal's number, as a shell reports a process those signals end). A second signal while it stops ends the process at
once with one line: what is not committed yet is redone when the run resumes. Nothing else
reaches the terminal: no traceback, no summary."""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from .backlog import Record, input_state

SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: how each signal is named on the stop line
_NAMES = {signal.SIGINT: "Ctrl-C (SIGINT)", signal.SIGTERM: "SIGTERM"}


def exit_status(signum: int) -> int:
    """The exit status of a run a signal stopped: 128 + its number (130, 143)."""
    return 128 + signum


@dataclass
class Committed:
    """What a run has committed, as far as its runner can tell: the last checkpoint (`unit`
    `last` in `directory`, which is None when the run cannot resume) and the last Kafka
    transaction (`kafka`, e.g. its transactional id and mark; None without one)."""
    unit: str
    last: Optional[int] = None
    directory: Optional[str] = None
    kafka: Optional[str] = None


def describe(committed: Committed) -> str:
    """The stop line's account of what is committed and how to resume."""
    c = committed
    text = (f"committed {c.unit} {c.last}" if c.last is not None
            else f"no {c.unit} committed yet")
    if c.directory is not None and c.last is not None:
        text += f" to {c.directory}"
    if c.kafka is not None:
        text += f", Kafka transaction {c.kafka}"
    if c.directory is not None:
        return f"{text}; resume with --checkpoint_dir={c.directory}"
    return f"{text}; it cannot resume: run with --checkpoint_dir to make a run resumable"


class StopRequest:
    """A streaming run's stop: `requested` once a signal came; the runner sets `committed`
    (what it can say it committed) and calls `end` once it has stopped and cleaned up."""

    def __init__(self) -> None:
        self.signum: Optional[int] = None
        self.committed: Callable[[], Committed] = lambda: Committed("epoch")
        #: the run's progress record at its stop (`runtime.backlog`), when it has one
        self.progress: Optional[Record] = None

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def handle(self, signum: int, frame: Any) -> None:
        """The signal handler: the first signal asks for a stop, the next ends the process."""
        if self.signum is None:
            self.signum = signum
            return
        line = (f"pomset: stopping now on a second {_NAMES.get(signum, signal.strsignal(signum))}"
                f"; {self._describe()}; work not committed is redone on resume")
        _write_line(line)
        os._exit(exit_status(self.signum))

    def end(self) -> None:
        """If a signal stopped the run: print the stop line and exit with its status."""
        if self.signum is None:
            return
        name = _NAMES.get(self.signum, signal.strsignal(self.signum))
        behind = f"; {input_state(self.progress)}" if self.progress else ""
        _write_line(f"pomset: stopped on {name}{behind}; {self._describe()}")
        raise SystemExit(exit_status(self.signum))

    def _describe(self) -> str:
        try:
            return describe(self.committed())
        except Exception as e:   # what it committed could not be read: say so, briefly
            return f"what it committed could not be read ({type(e).__name__}: {e})"


def _write_line(line: str) -> None:
    """One line on stderr, over the status line a terminal shows (written directly: this runs
    in a signal handler, where stderr's buffer may be mid-write)."""
    erase = "\r\x1b[K" if sys.stderr is not None and sys.stderr.isatty() else ""
    os.write(2, (erase + line + "\n").encode("utf-8", "replace"))


@contextmanager
def stopping(streaming: bool = True) -> Iterator[StopRequest]:
    """A `StopRequest` with SIGINT and SIGTERM routed to it while the run goes (in the main
    thread, where signals are handled, and for a streaming run; otherwise they stay as they
    are, and the request is never made)."""
    stop = StopRequest()
    if not streaming or threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {s: signal.signal(s, stop.handle) for s in SIGNALS}
    try:
        yield stop
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
