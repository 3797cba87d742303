"""The GroupAlsoByWindow kernel: per key, windows, their contents, triggers and panes.

Written once, hosted by every runner. The host owns storage, timers and the clock:

- it keeps one `KeyState` per key (a dict window -> `WindowRec`, plain picklable data) and
  passes it in with each call;
- it sets the kernel's time view `k` (input watermark `wm`, processing time `pt`, and the
  stage's last output watermark `out_wm`) before calling;
- it drains `timer_requests` ((domain, time, key, window): call `on_timer` for that key once
  the watermark or clock reaches `time`) and `hold_requests` ((hold, key, window): the output
  watermark must not pass `hold` while that window still has that hold), both lazily valid:
  `is_current_timer` / `is_current_hold` tell whether a request still stands.

Semantics follow Beam (default trigger, PaneInfo, timestamp combiners, allowed lateness,
garbage collection, ON_TIME panes emitted even when empty) and the paper where Beam is silent
(retracting mode: a firing first retracts the window's previous pane and the panes of windows
merged into it, then emits the new value).
"""
from __future__ import annotations

import pickle
from typing import Any, Dict, List, Optional

from ..windowing import MIN_MICROS, PaneInfo, PaneTiming, TimestampCombiner, WindowedValue
from .accumulation import AccumulationMode
from .definitions import EVENT_TIME, PROCESSING_TIME
from .strategy import WindowingStrategy

EARLY, ON_TIME, LATE = PaneTiming.EARLY, PaneTiming.ON_TIME, PaneTiming.LATE


class TimeView:
    """The clocks the host shows the kernel (µs)."""

    __slots__ = ("wm", "pt", "out_wm")

    def __init__(self) -> None:
        self.wm = MIN_MICROS
        self.pt = 0
        self.out_wm = MIN_MICROS


class WindowRec:
    """Everything one key keeps for one active window."""

    __slots__ = ("window", "acc", "pending", "hold", "ts", "fin", "closed", "index",
                 "nonspec", "nonearly", "last_out", "retract", "et", "pt")

    def __init__(self, window: Any, acc: Any, n_trigger: int) -> None:
        self.window = window
        self.acc = acc
        self.pending = False     # elements arrived since the last pane
        self.hold: Optional[int] = None   # output timestamp of the pending pane, if it holds the watermark
        self.ts: List[Any] = [None] * n_trigger     # trigger state, one slot per trigger node
        self.fin: List[bool] = [False] * n_trigger  # finished flags, one per trigger node
        self.closed = False      # root trigger finished: later elements are dropped
        self.index = 0           # next pane index
        self.nonspec = 0         # next non-speculative pane index
        self.nonearly = False    # an ON_TIME or LATE pane was emitted
        self.last_out: list = []   # (value, ts, window, diff) emitted by the last pane (retracting)
        self.retract: list = []    # last panes of windows merged into this one, to retract
        self.et: Optional[int] = None   # requested event-time wake-up
        self.pt: Optional[int] = None   # requested processing-time wake-up

    def __getstate__(self):
        return tuple(getattr(self, s) for s in self.__slots__)

    def __setstate__(self, state) -> None:
        for s, v in zip(self.__slots__, state):
            setattr(self, s, v)


KeyState = Dict[Any, WindowRec]


class Counters:
    """Elements the kernel did not put in a pane, by reason."""

    __slots__ = ("late", "dropped_expired", "dropped_closed")

    def __init__(self) -> None:
        self.late = 0
        self.dropped_expired = 0
        self.dropped_closed = 0


class GroupAlsoByWindow:
    """Groups one key's elements by window and emits panes as the trigger says."""

    def __init__(self, strategy: WindowingStrategy, reducer: Any) -> None:
        self.strategy = strategy
        self.reducer = reducer
        self.trigger = strategy.trigger
        self.n_trigger = self.trigger._size()
        self.window_fn = strategy.window_fn
        self.merging = self.window_fn.is_merging()
        self.lateness = strategy.allowed_lateness_us
        self.mode = strategy.accumulation_mode
        self.discarding = self.mode is AccumulationMode.DISCARDING
        self.retracting = self.mode is AccumulationMode.RETRACTING
        self.combiner = strategy.timestamp_combiner
        self.eow = self.combiner is TimestampCombiner.OUTPUT_AT_EOW
        self.k = TimeView()
        self.counters = Counters()
        self.timer_requests: list = []
        self.hold_requests: list = []

    # --- inputs ---------------------------------------------------------------------------
    def process(self, ks: KeyState, key: Any, value: Any, ts: int, window: Any, diff: int,
                out: list) -> None:
        """One element of `key` in its assigned `window`; panes it causes go to `out`."""
        k = self.k
        if window.max_ts + self.lateness < k.wm:
            self.counters.dropped_expired += 1
            return
        if ts < k.wm:
            self.counters.late += 1
        if self.merging:
            window = self._merge(ks, key, window)
        rec = ks.get(window)
        if rec is None:
            rec = ks[window] = WindowRec(window, self.reducer.create(), self.n_trigger)
        elif rec.closed:
            self.counters.dropped_closed += 1
            return
        rec.acc = self.reducer.add(rec.acc, value, diff)
        rec.pending = True
        self._hold(rec, key, ts)
        trigger = self.trigger
        trigger._on_element(k, rec, 0, value, ts)
        if trigger._should_fire(k, rec, 0):
            self._fire(ks, key, rec, out)
        self._schedule(key, rec)

    def on_timer(self, ks: KeyState, key: Any, window: Any, domain: str, out: list) -> None:
        """A requested wake-up for `window` is due: fire if the trigger says so, collect garbage."""
        rec = ks.get(window)
        if rec is None:
            return
        if domain == EVENT_TIME:
            rec.et = None
        else:
            rec.pt = None
        k = self.k
        if not rec.closed and self.trigger._should_fire(k, rec, 0):
            self._fire(ks, key, rec, out)
        if rec.window.max_ts + self.lateness < k.wm:
            if not rec.closed and (rec.pending or not rec.nonearly):
                self._fire(ks, key, rec, out, final=True)
            del ks[window]
            return
        self._schedule(key, rec)

    # --- host helpers ---------------------------------------------------------------------
    def is_current_timer(self, ks: Optional[KeyState], domain: str, time: int, window: Any) -> bool:
        rec = ks.get(window) if ks else None
        return rec is not None and (rec.et if domain == EVENT_TIME else rec.pt) == time

    def is_current_hold(self, ks: Optional[KeyState], hold: int, window: Any) -> bool:
        rec = ks.get(window) if ks else None
        return rec is not None and rec.hold == hold

    @staticmethod
    def state_to_bytes(ks: KeyState) -> bytes:
        return pickle.dumps(ks, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def state_from_bytes(data: bytes) -> KeyState:
        return pickle.loads(data)

    # --- internals ------------------------------------------------------------------------
    def _hold(self, rec: WindowRec, key: Any, ts: int) -> None:
        """Where the pending pane will be output, and whether that holds the watermark."""
        k = self.k
        if self.eow:
            t = rec.window.max_ts
        else:
            t = ts if ts >= k.wm else rec.window.max_ts
            if rec.hold is not None:
                t = self.combiner.combine(rec.hold, t)
        if t != rec.hold and t >= k.out_wm:
            rec.hold = t
            self.hold_requests.append((t, key, rec.window))

    def _schedule(self, key: Any, rec: WindowRec) -> None:
        k = self.k
        et = pt = None
        if not rec.closed:
            # A wake-up already due was just evaluated; asking again would spin.
            et = self.trigger._wake(k, rec, 0, EVENT_TIME)
            if et is not None and et <= k.wm:
                et = None
            pt = self.trigger._wake(k, rec, 0, PROCESSING_TIME)
            if pt is not None and pt <= k.pt:
                pt = None
        gc = rec.window.max_ts + self.lateness + 1
        if et is None or et > gc:
            et = gc
        if et != rec.et:
            rec.et = et
            self.timer_requests.append((EVENT_TIME, et, key, rec.window))
        if pt != rec.pt:
            rec.pt = pt
            if pt is not None:
                self.timer_requests.append((PROCESSING_TIME, pt, key, rec.window))

    def _fire(self, ks: KeyState, key: Any, rec: WindowRec, out: list, final: bool = False) -> None:
        k = self.k
        window = rec.window
        finished = final or self.trigger._on_fire(k, rec, 0)
        if k.wm <= window.max_ts:
            timing = EARLY
        elif rec.nonearly or k.out_wm > window.max_ts:
            timing = LATE
        else:
            timing = ON_TIME
        if rec.pending or timing is ON_TIME:
            is_last = finished or window.max_ts + self.lateness < k.wm
            if timing is EARLY:
                pane = PaneInfo(rec.index == 0, is_last, timing, rec.index, -1)
            else:
                pane = PaneInfo(rec.index == 0, is_last, timing, rec.index, rec.nonspec)
                rec.nonspec += 1
                rec.nonearly = True
            rec.index += 1
            ts = window.max_ts if self.eow or rec.hold is None else rec.hold
            if self.retracting:
                for value, rts, rwin, diff in rec.retract:
                    out.append(WindowedValue.raw(value, rts, rwin, pane, -diff))
                for value, rts, rwin, diff in rec.last_out:
                    out.append(WindowedValue.raw(value, rts, rwin, pane, -diff))
                rec.retract = []
                rec.last_out = last = []
            for value, diff in self.reducer.outputs(rec.acc):
                kv = (key, value)
                out.append(WindowedValue.raw(kv, ts, window, pane, diff))
                if self.retracting:
                    last.append((kv, ts, window, diff))
            if self.discarding:
                rec.acc = self.reducer.create()
        rec.pending = False
        rec.hold = None
        if finished:
            rec.closed = True
            rec.acc = None
            rec.last_out = []

    def _merge(self, ks: KeyState, key: Any, window: Any) -> Any:
        """MergeWindows with the new element's window; returns the window it now belongs to."""
        if window in ks:
            return window
        fresh = WindowRec(window, self.reducer.create(), self.n_trigger)
        ks[window] = fresh
        target = window
        for group, merged in self.window_fn.merge_windows(list(ks)):
            sources = [ks.pop(w) for w in group]
            rec = WindowRec(merged, self.reducer.merge([s.acc for s in sources if s.acc is not None]),
                            self.n_trigger)
            rec.pending = any(s.pending for s in sources)
            holds = [s.hold for s in sources if s.hold is not None]
            rec.hold = min(holds) if holds else None
            self.trigger._on_merge(self.k, rec, 0, sources)
            rec.closed = all(s.closed for s in sources)
            rec.index = max(s.index for s in sources)
            rec.nonspec = max(s.nonspec for s in sources)
            rec.nonearly = any(s.nonearly for s in sources)
            for s in sources:
                rec.retract.extend(s.retract)
                if s.window == merged:
                    rec.last_out = s.last_out
                else:
                    rec.retract.extend(s.last_out)
            if merged in ks:
                raise ValueError(f"{self.window_fn!r}.merge_windows produced {merged!r}, which is "
                                 f"already an active window outside the merged group {group!r}")
            ks[merged] = rec
            if rec.hold is not None:
                self.hold_requests.append((rec.hold, key, merged))
            if window in group:
                target = merged
        if target is window and ks.get(window) is not fresh:
            raise ValueError(f"{self.window_fn!r}.merge_windows lost window {window!r}")
        return target
