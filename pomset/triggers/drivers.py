"""How the kernel asks a window's trigger what to do, chosen once per grouping (as Beam's
`trigger.py` picks its driver at construction): through the trigger objects' slot protocol
for any trigger (`TriggerDriver`), or inlined for the streaming trigger users write most,
`AfterWatermark` with processing-time early and/or late firings (`TimedWatermarkDriver`),
where the protocol's calls through each child cost more than the decisions themselves.

A driver answers for a window's record `w` (its trigger state in `w.ts`, slot 0 the root) at
the kernel's clocks `k`: `on_element` (an element was added: `FIRE` if the trigger fires now,
`WAKES` if the wake-ups it asks for may have changed, `KEEP` if neither, so a host re-asks
`wakes` only when they can differ), `should_fire`, `on_fire` (the window fired: True when the trigger finished) and
`wakes` (the event-time and processing-time wake-ups the trigger asks for, or None). tests/test_fast_paths.py checks the inlined driver
against the general one."""
from __future__ import annotations

from typing import Any, Optional, Tuple

from .definitions import (EVENT_TIME, PROCESSING_TIME, WM_ARMED, WM_FIRED, AfterProcessingTime,
                          AfterWatermark, DefaultTrigger, Repeatedly, Trigger)


#: what `on_element` asks of the host: nothing (the wake-ups stand), ask `wakes` again, fire
KEEP, WAKES, FIRE = 0, 1, 2


class TriggerDriver:
    """Any trigger, through its slot protocol. `plain`: whether the trigger fires exactly once
    per window, when the watermark passes its end (the kernel's fast paths then apply)."""

    plain = False

    def __init__(self, trigger: Trigger) -> None:
        self.trigger = trigger

    def on_element(self, k: Any, w: Any, value: Any, ts: int) -> int:
        self.trigger.slot_on_element(k, w, 0, value, ts)
        return FIRE if self.trigger.slot_should_fire(k, w, 0) else WAKES

    def should_fire(self, k: Any, w: Any) -> bool:
        return self.trigger.slot_should_fire(k, w, 0)

    def on_fire(self, k: Any, w: Any) -> bool:
        return self.trigger.slot_on_fire(k, w, 0)

    def wakes(self, k: Any, w: Any) -> Tuple[Optional[int], Optional[int]]:
        trigger = self.trigger
        return trigger.slot_wake(k, w, 0, EVENT_TIME), trigger.slot_wake(k, w, 0, PROCESSING_TIME)


def _delay(t: Optional[Trigger]) -> Optional[int]:
    """A plain `AfterProcessingTime(delay)`'s delay (µs); None for no trigger."""
    return None if t is None else t.delay_us


def _timed(t: Optional[Trigger]) -> bool:
    return t is None or (type(t) is AfterProcessingTime and not t.period_us)


class TimedWatermarkDriver(TriggerDriver):
    """`AfterWatermark(early=AfterProcessingTime(d), late=AfterProcessingTime(d'))` (either
    may be absent; not aligned to a period), what `AfterWatermark` and `AfterProcessingTime`
    do through the slot protocol, inlined. Slots: 0 the watermark trigger (None reset, 1
    armed, 2 on-time pane fired), then the early trigger's time, then the late one's."""

    def __init__(self, trigger: AfterWatermark) -> None:
        super().__init__(trigger)
        self.early, self.late = _delay(trigger.early), _delay(trigger.late)
        self.lo = trigger.late_slot

    @staticmethod
    def fits(trigger: Trigger) -> bool:
        """Whether `trigger` is one this driver inlines."""
        return (type(trigger) is AfterWatermark and _timed(trigger.early) and _timed(trigger.late)
                and (trigger.early is not None or trigger.late is not None))

    def on_element(self, k: Any, w: Any, value: Any, ts: int) -> int:
        s = w.ts
        st = s[0]
        act = KEEP
        if st is None:
            s[0] = st = WM_ARMED
            act = WAKES
        if st == WM_ARMED:
            if k.wm > w.window.max_ts:
                return FIRE
            early = self.early
            if early is None:
                return act
            t = s[1]
            if t is None:
                s[1] = t = k.pt + early
                act = WAKES
            return FIRE if k.pt >= t else act
        late = self.late
        if late is None:
            return act
        t = s[self.lo]
        if t is None:
            s[self.lo] = t = k.pt + late
            act = WAKES
        return FIRE if k.pt >= t else act

    def should_fire(self, k: Any, w: Any) -> bool:
        s = w.ts
        st = s[0]
        if st == WM_ARMED:
            if k.wm > w.window.max_ts:
                return True
            return self.early is not None and s[1] is not None and k.pt >= s[1]
        if st == WM_FIRED and self.late is not None:
            t = s[self.lo]
            return t is not None and k.pt >= t
        return False

    def on_fire(self, k: Any, w: Any) -> bool:
        s = w.ts
        if s[0] == WM_ARMED:
            if k.wm > w.window.max_ts:
                # the on-time firing ends the early firings and clears their state
                s[0] = WM_FIRED
                if self.early is not None:
                    s[1] = None
                    w.fin &= ~2
                return self.late is None
            s[1] = None
            w.fin &= ~2
            return False
        s[self.lo] = None
        w.fin &= ~(1 << self.lo)
        return False

    def wakes(self, k: Any, w: Any) -> Tuple[Optional[int], Optional[int]]:
        s = w.ts
        st = s[0]
        if st == WM_ARMED:
            return w.window.max_ts + 1, (s[1] if self.early is not None else None)
        if st == WM_FIRED and self.late is not None:
            return None, s[self.lo]
        return None, None


class WatermarkDriver(TriggerDriver):
    """A plain `AfterWatermark()` (its state in slot 0), or `Repeatedly`/`DefaultTrigger` of
    one (slot 1, Beam's default trigger): its firing decisions inlined. Windows that have not
    fired share one armed state, `armed` (a tuple), which `on_fire` copies before changing."""

    plain = True

    def __init__(self, trigger: Trigger) -> None:
        super().__init__(trigger)
        self.slot = slot = self.slot_of(trigger)
        self.armed = tuple(WM_ARMED if i == slot else None for i in range(trigger.slot_count()))

    @staticmethod
    def slot_of(trigger: Trigger) -> Optional[int]:
        """The slot of the plain watermark trigger in `trigger`; None if it is not one this
        driver inlines."""
        def plain(t: Trigger) -> bool:
            return type(t) is AfterWatermark and t.early is None and t.late is None
        if plain(trigger):
            return 0
        if type(trigger) in (Repeatedly, DefaultTrigger) and plain(trigger.children[0]):
            return 1
        return None

    @classmethod
    def fits(cls, trigger: Trigger) -> bool:
        """Whether `trigger` is one this driver inlines."""
        return cls.slot_of(trigger) is not None

    def arm(self, w: Any) -> bool:
        """What an element does to an unarmed window (one new from merging): arms it. Returns
        whether it was unarmed."""
        s = w.ts
        if s[self.slot] is None:
            s[self.slot] = WM_ARMED
            return True
        return False

    def should_fire(self, k: Any, w: Any) -> bool:
        return k.wm > w.window.max_ts and w.ts[self.slot] == WM_ARMED

    def on_fire(self, k: Any, w: Any) -> bool:
        if type(w.ts) is tuple:   # the shared armed state: this window's own copy changes
            w.ts = list(w.ts)
        slot = self.slot
        if k.wm > w.window.max_ts and w.ts[slot] == WM_ARMED:
            # the on-time firing: AfterWatermark finishes; Repeatedly then resets it, goes on
            if slot:
                w.ts[slot] = None
                w.fin &= ~(1 << slot)
                return False
            w.ts[0] = WM_FIRED
            return True
        return super().on_fire(k, w)


def driver(trigger: Trigger) -> TriggerDriver:
    """The driver of `trigger`, chosen once per grouping: inlined where one fits, else the
    general one."""
    for inlined in (WatermarkDriver, TimedWatermarkDriver):
        if inlined.fits(trigger):
            return inlined(trigger)
    return TriggerDriver(trigger)
