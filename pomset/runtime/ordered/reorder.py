"""Reorder buffers: outputs produced concurrently, each with the serial number of the unit
that made it, are sent downstream in serial order, each once.

`NonBlockingReorder` is the paper's scheme (Fig. 4): a bounded ring indexed by serial number,
and a try-lock flag for the one thread that sends; a worker whose output cannot be sent yet
leaves it in the ring and goes back to work instead of waiting. `LockedReorder` is the
lock-based scheme it is measured against (Fig. 2): every sender waits on one lock while
another sends.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict

_EMPTY = object()


class NonBlockingReorder:
    """Sends outputs to `downstream` in serial order, starting at serial `first`.

    `send(serial, output)` never waits for another sender: it stores the output in its slot
    of the ring (when the serial is within `size` of the next to send; else it returns False
    and the caller retries later), then sends whatever is ready if no other thread is
    sending. After clearing the flag the sender looks at the next slot once more, so an
    output stored while it was sending is not left behind with nobody inside `send`."""

    def __init__(self, size: int, downstream: Callable[[Any], None], first: int = 1) -> None:
        if size < 1:
            raise ValueError(f"a reorder buffer needs at least one slot, got size={size}")
        self.size = size
        self.next = first
        self._slots = [_EMPTY] * size
        self._flag = threading.Lock()
        self._downstream = downstream

    def send(self, serial: int, output: Any) -> bool:
        """Offer the output of unit `serial`; False when the ring has no slot for it yet."""
        added = self._try_add(serial, output)
        self._send_pending()
        return added

    def _try_add(self, serial: int, output: Any) -> bool:
        n = self.next
        if n <= serial < n + self.size:
            self._slots[serial % self.size] = output
            return True
        return False

    def _send_pending(self) -> None:
        slots, size = self._slots, self.size
        while self._flag.acquire(blocking=False):
            try:
                while True:
                    i = self.next % size
                    output = slots[i]
                    if output is _EMPTY:
                        break
                    self._downstream(output)
                    slots[i] = _EMPTY
                    self.next += 1
            finally:
                self._flag.release()
            if slots[self.next % size] is _EMPTY:
                return


class LockedReorder:
    """The lock-based baseline: one lock around adding an output and sending what is ready,
    so every sender waits while another sends. The buffer of waiting outputs is unbounded."""

    def __init__(self, downstream: Callable[[Any], None], first: int = 1) -> None:
        self.next = first
        self._waiting: Dict[int, Any] = {}
        self._lock = threading.Lock()
        self._downstream = downstream

    def send(self, serial: int, output: Any) -> bool:
        """Offer the output of unit `serial`; always taken."""
        with self._lock:
            if serial != self.next:
                self._waiting[serial] = output
                return True
            self._downstream(output)
            self.next += 1
            waiting = self._waiting
            while self.next in waiting:
                self._downstream(waiting.pop(self.next))
                self.next += 1
        return True
