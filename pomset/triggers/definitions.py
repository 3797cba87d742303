"""Triggers: when in processing time a window's pane is emitted.

Triggers are immutable values that compose to any depth. Their per-window state lives outside
them, in the kernel's window record: a list with one slot per node of the trigger tree (`w.ts`)
and the nodes' finished flags as the bits of an int (`w.fin`, bit `i` for node `i`), so the
state is plain data that pickles and merges.
Node `i`'s children sit at fixed slot offsets computed once from subtree sizes.

Built-in triggers implement the slot protocol (`slot_on_element`, `slot_should_fire`,
`slot_on_fire`, `slot_reset`, `slot_on_merge`, `slot_wake`, sized by `slot_count`), which the
kernel's drivers call. A custom, data-driven trigger subclasses `Trigger` and implements the
Beam-style protocol documented on it; the base class adapts one to the other.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from ..windowing.time import Timestamp, TimeLike, duration_micros, to_micros
from .data_loss import DataLossReason, loss_if, may_finish

EVENT_TIME = "event"
PROCESSING_TIME = "processing"


class TriggerContext:
    """What a custom trigger sees of one window: its own `state` dict, the window, the clocks."""

    __slots__ = ("_k", "_w", "_i")

    def __init__(self, k: Any, w: Any, i: int) -> None:
        self._k, self._w, self._i = k, w, i

    @property
    def state(self) -> dict:
        st = self._w.ts[self._i]
        if st is None:
            st = self._w.ts[self._i] = {}
        return st

    @property
    def window(self):
        return self._w.window

    @property
    def watermark(self) -> Timestamp:
        return Timestamp.from_micros(self._k.wm)

    @property
    def processing_time(self) -> Timestamp:
        return Timestamp.from_micros(self._k.pt)

    def set_timer(self, when: TimeLike, time_domain: str = EVENT_TIME) -> None:
        """Ask to be evaluated again once the watermark (or the processing clock) reaches `when`."""
        if time_domain not in (EVENT_TIME, PROCESSING_TIME):
            raise ValueError(f"time_domain must be {EVENT_TIME!r} or {PROCESSING_TIME!r}, not {time_domain!r}")
        self.state["__timer_" + time_domain] = to_micros(when)


class Trigger:
    """Base class of every trigger. Subclass it for a custom (e.g. data-driven) trigger:

    - ``on_element(ctx, value, timestamp)``: an element arrived in ``ctx.window``; update ``ctx.state``.
    - ``should_fire(ctx) -> bool``: whether the window should emit a pane now (required).
    - ``on_fire(ctx) -> bool``: the window fired; return True when this trigger is finished
      (a finished root trigger closes the window: its pane is the last).
    - ``reset(ctx)``: start over (``Repeatedly`` calls it after each finish); clears the state.
    - ``on_merge(ctx, source_states)``: merging windows (sessions) combine their states into
      ``ctx.state`` (the states of the windows merged that had one: a new element's own window
      brings none); a trigger that does not override it cannot be used with merging windows.
    - ``ctx.set_timer(t, "event" | "processing")`` asks for a re-evaluation at time ``t``.

    ``ctx.state`` is a dict of plain data (it is checkpointed with the window).
    """

    # --- public protocol for custom triggers --------------------------------------------------
    def on_element(self, ctx: TriggerContext, value: Any, timestamp: Timestamp) -> None:
        pass

    def should_fire(self, ctx: TriggerContext) -> bool:
        raise NotImplementedError(f"{type(self).__name__} must implement should_fire(ctx)")

    def on_fire(self, ctx: TriggerContext) -> bool:
        return True

    def reset(self, ctx: TriggerContext) -> None:
        ctx.state.clear()

    def on_merge(self, ctx: TriggerContext, source_states: List[dict]) -> None:
        raise NotImplementedError

    # --- composition metadata -----------------------------------------------------------------
    @property
    def children(self) -> Sequence["Trigger"]:
        return ()

    def slot_count(self) -> int:
        return 1 + sum(c.slot_count() for c in self.children)

    def can_merge(self) -> bool:
        """Whether this trigger's state can merge (needed by merging WindowFns)."""
        if _is_custom(self):
            return type(self).on_merge is not Trigger.on_merge
        return all(c.can_merge() for c in self.children)

    def fires_before_end_of_window(self) -> bool:
        """Whether it can fire before the watermark passes the window (else a global window
        over unbounded data would never emit)."""
        return _is_custom(self) or any(c.fires_before_end_of_window() for c in self.children)

    def counts_elements(self) -> bool:
        """Whether it looks at how many elements (or which) arrived: a runner that folds
        elements into partial accumulators before the kernel cannot then run it so."""
        return _is_custom(self) or any(c.counts_elements() for c in self.children)

    def continuation(self) -> "Trigger":
        """The trigger a downstream grouping uses: it fires when this one's output arrives."""
        return self

    def get_continuation_trigger(self) -> "Trigger":
        """Beam's name for `continuation()`."""
        return self.continuation()

    def may_lose_data(self, windowing: Any) -> DataLossReason:
        """Whether, as the trigger of `windowing` (a WindowingStrategy, as
        `WindowInto(...).windowing` gives), it may finish before its window expires, so that
        the window's later elements are dropped (Beam's `may_lose_data`). A trigger that does
        not say is taken to be safe, as Beam takes it."""
        return DataLossReason.NO_POTENTIAL_LOSS

    def folds_on_time_elements(self) -> bool:
        """Whether, as a window's trigger, it lets the kernel take a bundle's elements that
        arrive before the watermark passes their window in together, as one partial
        accumulator per window they make (`GroupAlsoByWindow` does so under Sessions): it
        neither looks at them nor fires on their arrival, and closes no window before its
        end, so the panes are those of the elements taken one by one."""
        return False

    def _waits(self) -> bool:
        """Whether, before the watermark passes the window, it fires only at a wake-up
        (never on an element's arrival) and looks at no element."""
        return False

    # --- slot protocol: adapt a custom trigger ---------------------------------------------------
    def slot_on_element(self, k, w, i: int, value: Any, ts: int) -> None:
        self.on_element(TriggerContext(k, w, i), value, Timestamp.from_micros(ts))

    def slot_should_fire(self, k, w, i: int) -> bool:
        return bool(self.should_fire(TriggerContext(k, w, i)))

    def slot_on_fire(self, k, w, i: int) -> bool:
        return bool(self.on_fire(TriggerContext(k, w, i)))

    def slot_reset(self, k, w, i: int) -> None:
        self.reset(TriggerContext(k, w, i))
        w.fin &= ~(1 << i)

    def slot_on_merge(self, k, w, i: int, sources: list) -> None:
        self.on_merge(TriggerContext(k, w, i), [s.ts[i] or {} for s in sources])

    def slot_wake(self, k, w, i: int, domain: str) -> Optional[int]:
        st = w.ts[i]
        return st.get("__timer_" + domain) if st else None

    # --- values -------------------------------------------------------------------------------
    def _key(self) -> tuple:
        return tuple(sorted(self.__dict__.items()))

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _is_custom(t: Trigger) -> bool:
    return type(t).slot_should_fire is Trigger.slot_should_fire


def _min(a: Optional[int], b: Optional[int]) -> Optional[int]:
    if a is None:
        return b
    if b is None:
        return a
    return a if a < b else b


class _Composite(Trigger):
    """A trigger over sub-triggers, each at a fixed slot offset."""

    def __init__(self, *subs: Trigger) -> None:
        for t in subs:
            if not isinstance(t, Trigger):
                raise TypeError(f"{type(self).__name__} takes triggers, got {t!r}")
        self._subs = tuple(subs)
        offsets, at = [], 1
        for t in subs:
            offsets.append(at)
            at += t.slot_count()
        self._offsets = tuple(offsets)
        self._n = at

    @property
    def children(self) -> Sequence[Trigger]:
        return self._subs

    def slot_count(self) -> int:
        return self._n

    def _key(self) -> tuple:
        return self._subs

    def _waits(self) -> bool:
        return all(t._waits() for t in self._subs)

    def slot_on_merge(self, k, w, i, sources) -> None:
        for t, o in zip(self._subs, self._offsets):
            _merge_child(t, k, w, i + o, sources)

    def slot_reset(self, k, w, i) -> None:
        w.ts[i] = None
        w.fin &= ~(1 << i)
        for t, o in zip(self._subs, self._offsets):
            t.slot_reset(k, w, i + o)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self._subs))})"


def _merge_child(t: Trigger, k, w, j: int, sources: list) -> None:
    """A child is finished in the merged window only if finished in every source (Beam)."""
    if all(s.fin >> j & 1 for s in sources):
        w.fin |= 1 << j
    else:
        w.fin &= ~(1 << j)
    t.slot_on_merge(k, w, j, sources)


class _Leaf(Trigger):
    def slot_reset(self, k, w, i) -> None:
        w.ts[i] = None
        w.fin &= ~(1 << i)

    def slot_wake(self, k, w, i, domain) -> Optional[int]:
        return None

    def fires_before_end_of_window(self) -> bool:
        return True

    def can_merge(self) -> bool:
        return True


# AfterWatermark's state values (its slot): armed before the watermark passes the window's end,
# and fired once the on-time pane is out (None: reset and unarmed)
WM_ARMED, WM_FIRED = 1, 2

class AfterWatermark(Trigger):
    """Fires when the watermark passes the end of the window; optionally `early` firings
    before (repeated) and `late` firings after (repeated)."""

    def __init__(self, early: Optional[Trigger] = None, late: Optional[Trigger] = None) -> None:
        for t in (early, late):
            if t is not None and not isinstance(t, Trigger):
                raise TypeError(f"AfterWatermark early/late must be triggers, got {t!r}")
        self.early, self.late = early, late
        self._eo = 1
        # the late trigger's first slot, past the early trigger's (the drivers read it)
        self.late_slot = 1 + (early.slot_count() if early else 0)
        self._n = self.late_slot + (late.slot_count() if late else 0)

    @property
    def children(self) -> Sequence[Trigger]:
        return tuple(t for t in (self.early, self.late) if t is not None)

    def slot_count(self) -> int:
        return self._n

    def _key(self) -> tuple:
        return (self.early, self.late)

    def fires_before_end_of_window(self) -> bool:
        return self.early is not None and self.early.fires_before_end_of_window()

    def _waits(self) -> bool:
        return self.early is None or self.early._waits()

    def folds_on_time_elements(self) -> bool:
        return self._waits()

    def continuation(self) -> Trigger:
        return AfterWatermark(self.early.continuation() if self.early else None,
                              self.late.continuation() if self.late else None)

    def may_lose_data(self, windowing: Any) -> DataLossReason:
        """Without allowed lateness nothing comes after the on-time pane; with it, the late
        trigger decides, and without one the on-time pane finishes the window."""
        if windowing.allowed_lateness_us == 0:
            return DataLossReason.NO_POTENTIAL_LOSS
        if self.late is None:
            return DataLossReason.MAY_FINISH
        return self.late.may_lose_data(windowing)

    # state: None = reset and unarmed, WM_ARMED before the watermark, WM_FIRED after the
    # on-time pane
    def slot_on_element(self, k, w, i, value, ts) -> None:
        st = w.ts[i]
        if st is None:
            w.ts[i] = st = WM_ARMED
        if st == WM_ARMED:
            if self.early is not None:
                self.early.slot_on_element(k, w, i + self._eo, value, ts)
        elif self.late is not None:
            self.late.slot_on_element(k, w, i + self.late_slot, value, ts)

    def slot_should_fire(self, k, w, i) -> bool:
        st = w.ts[i]
        if st == WM_ARMED:
            if k.wm > w.window.max_ts:
                return True
            return self.early is not None and self.early.slot_should_fire(k, w, i + self._eo)
        if st == WM_FIRED and self.late is not None:
            return self.late.slot_should_fire(k, w, i + self.late_slot)
        return False

    def slot_on_fire(self, k, w, i) -> bool:
        st = w.ts[i]
        if st == WM_ARMED:
            if k.wm > w.window.max_ts:
                # The on-time firing ends the early firings and clears their state (as Beam
                # Java's does): a merge that grows the window past the watermark starts them
                # afresh.
                w.ts[i] = WM_FIRED
                if self.early is not None:
                    self.early.slot_reset(k, w, i + self._eo)
                return self.late is None
            if self.early.slot_on_fire(k, w, i + self._eo):
                self.early.slot_reset(k, w, i + self._eo)
            return False
        if self.late.slot_on_fire(k, w, i + self.late_slot):
            self.late.slot_reset(k, w, i + self.late_slot)
        return False

    def slot_reset(self, k, w, i) -> None:
        w.ts[i] = None
        w.fin &= ~(1 << i)
        if self.early is not None:
            self.early.slot_reset(k, w, i + self._eo)
        if self.late is not None:
            self.late.slot_reset(k, w, i + self.late_slot)

    def slot_on_merge(self, k, w, i, sources) -> None:
        """The merged window is past its on-time firing when any source is (Beam ORs the
        sources' late flags), its late trigger merging those sources' state (the others have
        none), provided the watermark has passed the merged window too (Beam Java's check): a
        window that a merge grew past the watermark has not had its on-time pane, so it goes
        back to early firings. Without a late trigger, past the on-time firing is finished,
        which the merged window is only if every source is (as any finished flag)."""
        fired = [s for s in sources if s.ts[i] == WM_FIRED]
        if (fired and k.wm > w.window.max_ts
                and (self.late is not None or len(fired) == len(sources))):
            w.ts[i] = WM_FIRED
            if self.late is not None:
                _merge_child(self.late, k, w, i + self.late_slot, fired)
        else:
            w.ts[i] = WM_ARMED if any(s.ts[i] is not None for s in sources) else None
            if self.early is not None:
                _merge_child(self.early, k, w, i + self._eo, sources)
            if self.late is not None:
                self.late.slot_reset(k, w, i + self.late_slot)

    def slot_wake(self, k, w, i, domain) -> Optional[int]:
        st = w.ts[i]
        if st == WM_ARMED:
            own = w.window.max_ts + 1 if domain == EVENT_TIME else None
            early = self.early.slot_wake(k, w, i + self._eo, domain) if self.early else None
            return _min(own, early)
        if st == WM_FIRED and self.late is not None:
            return self.late.slot_wake(k, w, i + self.late_slot, domain)
        return None

    def __repr__(self) -> str:
        args = [f"{n}={t!r}" for n, t in (("early", self.early), ("late", self.late)) if t is not None]
        return f"AfterWatermark({', '.join(args)})"


class AfterProcessingTime(_Leaf):
    """Fires once the processing clock is `delay` seconds past the first element of the pane;
    with `align_to`, at the next processing-time boundary of that period instead."""

    def __init__(self, delay: float = 0, align_to: Optional[float] = None, offset: float = 0) -> None:
        self.delay_us = duration_micros(delay)
        if self.delay_us < 0:
            raise ValueError(f"AfterProcessingTime delay must be >= 0, got {delay!r}")
        self.period_us = duration_micros(align_to) if align_to is not None else 0
        if align_to is not None and self.period_us <= 0:
            raise ValueError(f"an aligned period must be positive, got {align_to!r}")
        self.offset_us = duration_micros(offset)

    def continuation(self) -> Trigger:
        return AfterSynchronizedProcessingTime()

    def may_lose_data(self, windowing: Any) -> DataLossReason:
        return DataLossReason.MAY_FINISH

    def _waits(self) -> bool:
        return self.delay_us > 0   # else it fires on the first element's arrival

    def slot_on_element(self, k, w, i, value, ts) -> None:
        if w.ts[i] is None:
            t = k.pt + self.delay_us
            if self.period_us:
                t += (self.offset_us - t) % self.period_us
            w.ts[i] = t

    def slot_should_fire(self, k, w, i) -> bool:
        t = w.ts[i]
        return t is not None and k.pt >= t

    def slot_on_fire(self, k, w, i) -> bool:
        return True

    def slot_on_merge(self, k, w, i, sources) -> None:
        times = [s.ts[i] for s in sources if s.ts[i] is not None]
        w.ts[i] = min(times) if times else None

    def slot_wake(self, k, w, i, domain) -> Optional[int]:
        return w.ts[i] if domain == PROCESSING_TIME else None

    def __repr__(self) -> str:
        offset = f", offset={self.offset_us / 1e6:g}" if self.offset_us else ""
        if self.period_us and self.delay_us:
            return (f"AfterProcessingTime({self.delay_us / 1e6:g}, "
                    f"align_to={self.period_us / 1e6:g}{offset})")
        if self.period_us:
            return f"AtPeriod({self.period_us / 1e6:g}{offset})"
        return f"AfterProcessingTime({self.delay_us / 1e6:g})"


class AfterSynchronizedProcessingTime(AfterProcessingTime):
    """The continuation of a processing-time trigger (Beam's
    `_AfterSynchronizedProcessingTime`): downstream of a grouping that fired by processing
    time, it fires as that grouping's panes arrive, as AfterProcessingTime(0) does."""

    def __init__(self) -> None:
        super().__init__(0)

    def continuation(self) -> Trigger:
        return self

    def __repr__(self) -> str:
        return "AfterSynchronizedProcessingTime()"


def AtPeriod(period: float, offset: float = 0) -> AfterProcessingTime:
    """The paper's aligned processing-time trigger: fires at the next boundary of `period`
    (seconds since the epoch of the processing clock, plus `offset`) after the first element."""
    return AfterProcessingTime(0, align_to=period, offset=offset)


class AfterCount(_Leaf):
    """Fires once at least `n` elements have arrived in the pane."""

    def __init__(self, n: int) -> None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"AfterCount needs a positive integer, got {n!r}")
        self.n = n

    def counts_elements(self) -> bool:
        return True

    def continuation(self) -> Trigger:
        return AfterCount(1)

    def may_lose_data(self, windowing: Any) -> DataLossReason:
        return DataLossReason.MAY_FINISH

    def slot_on_element(self, k, w, i, value, ts) -> None:
        w.ts[i] = (w.ts[i] or 0) + 1

    def slot_should_fire(self, k, w, i) -> bool:
        return (w.ts[i] or 0) >= self.n

    def slot_on_fire(self, k, w, i) -> bool:
        return True

    def slot_on_merge(self, k, w, i, sources) -> None:
        w.ts[i] = sum(s.ts[i] or 0 for s in sources)

    def __repr__(self) -> str:
        return f"AfterCount({self.n})"


class Never(_Leaf):
    """Never fires; the window emits only its final pane when it is garbage-collected."""

    def slot_on_element(self, k, w, i, value, ts) -> None:
        pass

    def slot_should_fire(self, k, w, i) -> bool:
        return False

    def slot_on_merge(self, k, w, i, sources) -> None:
        pass

    def fires_before_end_of_window(self) -> bool:
        return False

    def _waits(self) -> bool:
        return True


class Repeatedly(_Composite):
    """Fires whenever its sub-trigger does, restarting it each time; never finishes."""

    def __init__(self, trigger: Trigger) -> None:
        super().__init__(trigger)

    def folds_on_time_elements(self) -> bool:
        return self._waits()

    def continuation(self) -> Trigger:
        return Repeatedly(self._subs[0].continuation())

    def slot_on_element(self, k, w, i, value, ts) -> None:
        self._subs[0].slot_on_element(k, w, i + 1, value, ts)

    def slot_should_fire(self, k, w, i) -> bool:
        return self._subs[0].slot_should_fire(k, w, i + 1)

    def slot_on_fire(self, k, w, i) -> bool:
        if self._subs[0].slot_on_fire(k, w, i + 1):
            self._subs[0].slot_reset(k, w, i + 1)
        return False

    def slot_wake(self, k, w, i, domain) -> Optional[int]:
        return self._subs[0].slot_wake(k, w, i + 1, domain)


class DefaultTrigger(Repeatedly):
    """Fires when the watermark passes the window, then once per late element (Beam's default)."""

    def __init__(self) -> None:
        super().__init__(AfterWatermark())

    def continuation(self) -> Trigger:
        return DefaultTrigger()

    def __repr__(self) -> str:
        return "DefaultTrigger()"


class Always(Repeatedly):
    """Fires at every element and never finishes (Beam's `Always`: Repeatedly(AfterCount(1)))."""

    def __init__(self) -> None:
        super().__init__(AfterCount(1))

    def continuation(self) -> Trigger:
        return Always()

    def __repr__(self) -> str:
        return "Always()"


class AfterAny(_Composite):
    """Fires when any sub-trigger fires; finishes when any finishes."""

    def slot_on_element(self, k, w, i, value, ts) -> None:
        for t, o in zip(self._subs, self._offsets):
            if not w.fin >> (i + o) & 1:
                t.slot_on_element(k, w, i + o, value, ts)

    def slot_should_fire(self, k, w, i) -> bool:
        return any(not w.fin >> (i + o) & 1 and t.slot_should_fire(k, w, i + o)
                   for t, o in zip(self._subs, self._offsets))

    def slot_on_fire(self, k, w, i) -> bool:
        ready = [(t, o) for t, o in zip(self._subs, self._offsets)
                 if not w.fin >> (i + o) & 1 and t.slot_should_fire(k, w, i + o)]
        finished = False
        for t, o in ready:
            if t.slot_on_fire(k, w, i + o):
                w.fin |= 1 << (i + o)
                finished = True
        return finished

    def slot_wake(self, k, w, i, domain) -> Optional[int]:
        out = None
        for t, o in zip(self._subs, self._offsets):
            if not w.fin >> (i + o) & 1:
                out = _min(out, t.slot_wake(k, w, i + o, domain))
        return out

    def continuation(self) -> Trigger:
        return type(self)(*(t.continuation() for t in self._subs))

    def may_lose_data(self, windowing: Any) -> DataLossReason:
        """It finishes when any sub-trigger does."""
        return loss_if(any(may_finish(t.may_lose_data(windowing)) for t in self._subs))


class AfterAll(AfterAny):
    """Fires once every sub-trigger is ready to fire; finishes when all have finished."""

    def fires_before_end_of_window(self) -> bool:
        return all(c.fires_before_end_of_window() for c in self.children)

    def may_lose_data(self, windowing: Any) -> DataLossReason:
        """It finishes only when every sub-trigger has."""
        return loss_if(all(may_finish(t.may_lose_data(windowing)) for t in self._subs))

    def slot_should_fire(self, k, w, i) -> bool:
        return all(w.fin >> (i + o) & 1 or t.slot_should_fire(k, w, i + o)
                   for t, o in zip(self._subs, self._offsets))

    def slot_on_fire(self, k, w, i) -> bool:
        for t, o in zip(self._subs, self._offsets):
            if not w.fin >> (i + o) & 1 and t.slot_on_fire(k, w, i + o):
                w.fin |= 1 << (i + o)
        return all(w.fin >> (i + o) & 1 for o in self._offsets)


class AfterEach(_Composite):
    """Runs its sub-triggers in sequence: each fires until it finishes, then the next takes over."""

    def _current(self, w, i) -> int:
        return w.ts[i] or 0

    def fires_before_end_of_window(self) -> bool:
        return bool(self._subs) and self._subs[0].fires_before_end_of_window()

    def slot_on_element(self, k, w, i, value, ts) -> None:
        c = self._current(w, i)
        if c < len(self._subs):
            self._subs[c].slot_on_element(k, w, i + self._offsets[c], value, ts)

    def slot_should_fire(self, k, w, i) -> bool:
        c = self._current(w, i)
        return c < len(self._subs) and self._subs[c].slot_should_fire(k, w, i + self._offsets[c])

    def slot_on_fire(self, k, w, i) -> bool:
        c = self._current(w, i)
        if self._subs[c].slot_on_fire(k, w, i + self._offsets[c]):
            w.fin |= 1 << (i + self._offsets[c])
            c += 1
            w.ts[i] = c
        return c >= len(self._subs)

    def slot_on_merge(self, k, w, i, sources) -> None:
        """Beam's AfterEach goes on from the furthest source: the merged window is at the
        furthest step any source reached, its sub-trigger merging the state of the sources at
        that step (the others have none there). A source that finished the sequence counts
        only when every source did, as the finished flags say."""
        steps = [self._current(s, i) for s in sources]
        going = [c for c in steps if c < len(self._subs)]
        c = w.ts[i] = max(going) if going else len(self._subs)
        if going:
            at = [s for s, step in zip(sources, steps) if step == c]
            _merge_child(self._subs[c], k, w, i + self._offsets[c], at)

    def slot_wake(self, k, w, i, domain) -> Optional[int]:
        c = self._current(w, i)
        if c >= len(self._subs):
            return None
        return self._subs[c].slot_wake(k, w, i + self._offsets[c], domain)

    def continuation(self) -> Trigger:
        """Downstream cannot tell which step a pane came from: it fires whenever any step's
        continuation would, and goes on (Beam Java's)."""
        return Repeatedly(AfterAny(*(t.continuation() for t in self._subs)))

    def may_lose_data(self, windowing: Any) -> DataLossReason:
        """It finishes once every step has finished in turn: it may when every step may."""
        return loss_if(all(may_finish(t.may_lose_data(windowing)) for t in self._subs))


class OrFinally(_Composite):
    """Fires as `trigger` does until `until` fires; then fires a last time and finishes."""

    def __init__(self, trigger: Trigger, until: Trigger) -> None:
        super().__init__(trigger, until)

    def fires_before_end_of_window(self) -> bool:
        return any(c.fires_before_end_of_window() for c in self.children)

    def slot_on_element(self, k, w, i, value, ts) -> None:
        self._subs[0].slot_on_element(k, w, i + self._offsets[0], value, ts)
        self._subs[1].slot_on_element(k, w, i + self._offsets[1], value, ts)

    def slot_should_fire(self, k, w, i) -> bool:
        return (self._subs[0].slot_should_fire(k, w, i + self._offsets[0])
                or self._subs[1].slot_should_fire(k, w, i + self._offsets[1]))

    def slot_on_fire(self, k, w, i) -> bool:
        until, uo = self._subs[1], i + self._offsets[1]
        if until.slot_should_fire(k, w, uo):
            until.slot_on_fire(k, w, uo)
            return True
        return self._subs[0].slot_on_fire(k, w, i + self._offsets[0])

    def slot_wake(self, k, w, i, domain) -> Optional[int]:
        return _min(self._subs[0].slot_wake(k, w, i + self._offsets[0], domain),
                    self._subs[1].slot_wake(k, w, i + self._offsets[1], domain))

    def continuation(self) -> Trigger:
        return OrFinally(self._subs[0].continuation(), self._subs[1].continuation())

    def may_lose_data(self, windowing: Any) -> DataLossReason:
        """It finishes when `until` fires, or when its trigger finishes (Beam counts either)."""
        return loss_if(any(may_finish(t.may_lose_data(windowing)) for t in self._subs))


def RepeatUntil(trigger: Trigger, until: Trigger) -> OrFinally:
    """The paper's RepeatUntil: fire repeatedly as `trigger` does until `until` fires."""
    return OrFinally(Repeatedly(trigger), until)


# The paper's names.
AtWatermark = AfterWatermark
AtCount = AfterCount
Repeat = Repeatedly
SequenceOf = AfterEach
