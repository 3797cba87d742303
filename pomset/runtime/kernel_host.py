"""The one host of the GroupAlsoByWindow kernel, under every runner: the keys' states (in a
store the runner provides), the wake-ups and watermark holds the kernel asks for, the order of
clock moves within a step, the batch run to the end, and kernel errors as `UserCodeError`s.

A runner moves the clocks of one step in this order, as every runner must for the same panes:
`processing_time` (the clock the step's elements arrive at; processing-time wake-ups now due
fire), `elements` (the step's input), then `watermark` (event-time wake-ups due fire, in time
order), and calls `end_step` once the step is over (a local propagation, a Spark micro-batch).
A step may move the processing clock once more after the watermark, before `end_step`: what
fell due while the step ran (Spark's micro-batches, which take seconds) fires in it.
`output_watermark` is the host's output watermark after the step: the minimum of its input
watermark and its holds, never going back.

Keys' states live in a keyed store (`timers.KeyedStore`): the local runner keeps them in
memory, Spark's stateful processor in state variables a shard at a time (it loads the shards of
the keys a step touches, and saves those that changed). Wake-ups and holds are the runtime's
timer service's (`timers.TimerService`), this host its client: an entry is (key, the window's
record), checked lazily against the record when due; saved, it names the key and the window,
by slots of time, so a store loads states on demand and a step reads only the slots it may
fire."""
from __future__ import annotations

from functools import reduce
from operator import attrgetter
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from ..triggers.definitions import EVENT_TIME, PROCESSING_TIME
from ..triggers.kernel import ElementError, GroupAlsoByWindow
from ..windowing import MAX_MICROS, MIN_MICROS, WindowedValue
from ..sdk.errors import UserCodeError
from .elementwise import user_code_error
from .lifting import split_tallied
from .timers import InMemoryStore, KeyedStore, SlotStore, TimerService
from .watermarks import output_watermark


# a record's wake-up time in each domain
_DUE = {EVENT_TIME: attrgetter("et"), PROCESSING_TIME: attrgetter("pt")}


def _same(key: Any) -> Any:
    return key


class KernelHost:
    """One grouping's kernel with its keys' states, wake-ups, holds and clocks (see the module
    docstring). `label` names the transform in errors."""

    def __init__(self, strategy: Any, reducer: Any, label: str,
                 states: Optional[KeyedStore] = None, keep_late: bool = False,
                 slot_store: Optional[SlotStore] = None) -> None:
        self.kernel = GroupAlsoByWindow(strategy, reducer)
        if keep_late:
            self.kernel.late_out = []
        self.label = label
        self.store: KeyedStore = states if states is not None else InMemoryStore()
        self.timers = TimerService(self, self.store, slot_store, self.kernel.moved)
        self.out_wm = MIN_MICROS

    @property
    def counters(self) -> Any:
        return self.kernel.counters

    @property
    def input_watermark(self) -> int:
        return self.kernel.k.wm

    # --- a step ------------------------------------------------------------------------------
    def elements(self, bundle: Sequence[WindowedValue], out: list,
                 keys: Optional[Iterable[Any]] = None) -> None:
        """A bundle of (key, value) elements; panes go to `out`. `keys`, the bundle's keys,
        lets a store that loads states on demand load them first."""
        self._load(keys)
        try:
            self.kernel.process_bundle(self.store.states, bundle, out)
        except ElementError as e:
            raise self._error(e) from e.cause
        self._drain()

    def _load(self, keys: Optional[Iterable[Any]]) -> None:
        if keys is not None:
            store = self.store
            keys = list(keys)
            store.ensure(keys)
            for key in keys:
                store.touch(key)

    def partials(self, bundle: Sequence[WindowedValue], out: list,
                 keys: Optional[Iterable[Any]] = None) -> None:
        """A bundle of (key, partial accumulator) elements, each folded by the grouping's
        CombineFn from some of a window's inputs elsewhere (combiner lifting, columnar
        aggregation): merged into the windows' accumulators, as `elements` adds values. A
        `Tallied` partial's late and dropped elements are counted by its elements' times."""
        plain, tallied = split_tallied(bundle)
        with self.kernel.folding_partials():
            if plain:
                self.elements(plain, out, keys)
                keys = None
            if tallied:
                self._tallied(tallied, out, keys)

    def _tallied(self, bundle: Sequence[WindowedValue], out: list,
                 keys: Optional[Iterable[Any]]) -> None:
        """`Tallied` partials, one at a time: the kernel counts each as one element, late if
        its time is behind the input watermark, dropped if its window expired or closed; the
        counts then become those of the elements it folded (a combine is lifted only where no
        element can fire or close its window on arrival, `lifting.liftable_in_streams`, so
        one partial's elements share its window's fate)."""
        self._load(keys)
        k, states = self.kernel, self.store.states
        c, wm, combine = k.counters, k.k.wm, k.combiner.combine
        try:
            for wv in bundle:
                key, t = wv.value
                late, expired, closed = c.late, c.dropped_expired, c.dropped_closed
                # where the elements would have put the pane: each at its time, or at the
                # window's end if the watermark had passed it (`GroupAlsoByWindow._hold`)
                end = wv.window.max_ts
                if t.lo >= wm:
                    ts = combine(t.lo, t.hi)
                elif t.hi < wm:
                    ts = end
                else:
                    ts = reduce(combine, [x if x >= wm else end for x in t.time_list()])
                k.process_bundle(states, (WindowedValue.raw((key, t.acc), ts, wv.window,
                                                            wv.pane, 1),), out)
                n = t.rows()
                if c.dropped_expired > expired:
                    c.dropped_expired += n - 1
                    continue
                c.late = late + t.late(wm)
                if c.dropped_closed > closed:
                    c.dropped_closed += n - 1
        except ElementError as e:
            raise self._error(e) from e.cause
        self._drain()

    def processing_time(self, pt: int, out: list) -> None:
        """The processing clock moved to `pt` (it never goes back): fire what is due."""
        k = self.kernel.k
        if pt > k.pt:
            k.pt = pt
        self._fire(PROCESSING_TIME, k.pt, out)

    def watermark(self, wm: int, out: list) -> None:
        """The input watermark moved to `wm` (it never goes back): fire what is due."""
        k = self.kernel.k
        if wm > k.wm:
            k.wm = wm
        self._fire(EVENT_TIME, k.wm, out)

    def key_count(self) -> int:
        """The keys with a state in `states` now."""
        return len(self.store.states)

    def output_watermark(self) -> int:
        """The output watermark after this step's clock moves: the minimum of the input
        watermark and the holds, never going back."""
        self.out_wm = output_watermark(self.out_wm, (self.kernel.k.wm, self.hold()))
        return self.out_wm

    def end_step(self) -> None:
        """The step is over: the keys' output watermarks settle from here, and the states
        that changed are saved."""
        self.kernel.end_step()
        self.store.save()

    def take_late(self) -> List[WindowedValue]:
        """The elements kept out of panes since the last call, as they came (too late for
        their window, or for one a finished trigger closed), for a grouping whose late
        output keeps them (`keep_late`)."""
        late = self.kernel.late_out
        if not late:
            return []
        self.kernel.late_out = []
        return late

    def run_to_end(self, elements: Sequence[WindowedValue], now: int) -> List[WindowedValue]:
        """A bounded input's panes: every element in, then the watermark from MIN to MAX
        (the paper's batch execution), at processing time `now`."""
        out: List[WindowedValue] = []
        self.kernel.k.pt = now
        self.elements(elements, out)
        self.watermark(MAX_MICROS, out)
        return out

    # --- what a host asks ---------------------------------------------------------------------
    def next_processing_timer(self) -> Optional[int]:
        return self.next_wake_up(PROCESSING_TIME)

    def next_wake_up(self, domain: str) -> Optional[int]:
        """The earliest queued wake-up's time in `domain`."""
        return self.timers.next(domain)

    def hold(self) -> int:
        """The earliest watermark hold that still stands."""
        return self.timers.hold()

    @property
    def firing(self) -> Any:
        """The instant of the wake-ups now firing: a partitioned host orders outputs by it."""
        return self.timers.firing

    @firing.setter
    def firing(self, instant: Any) -> None:
        self.timers.firing = instant

    # --- the timer service's client -----------------------------------------------------------
    def saved_ref(self, domain: str, key: Any, rec: Any, time: int) -> Any:
        """A queued record's window, if its wake-up in `domain` is still at `time` (a record
        the kernel dropped, expired or merged away, has none)."""
        return rec.window if _DUE[domain](rec) == time else None

    def resolve(self, domain: str, key: Any, window: Any, time: int) -> Any:
        """The key's record of a restored wake-up's window, if it still wakes at `time`."""
        ks = self.store.states.get(key)
        rec = ks.get(window) if ks else None
        return rec if rec is not None and _DUE[domain](rec) == time else None

    def holds(self, key: Any, window: Any, time: int) -> bool:
        return self.kernel.is_current_hold(self.store.states.get(key), time, window)

    # --- state ---------------------------------------------------------------------------------
    def save(self) -> Dict[str, Any]:
        """Everything the host keeps, for a checkpoint: the keys' states, the clocks, wake-ups
        and holds, and the counters."""
        return dict(states=self.store.states, queues=self.save_queues(), counters=self.counters)

    def load(self, saved: Dict[str, Any]) -> None:
        """Put back what `save` gave."""
        self.store.states = saved["states"]
        self.restore_queues(saved["queues"])
        self.kernel.counters = saved["counters"]

    def save_queues(self, key_form: Callable[[Any], Any] = _same) -> Dict[str, Any]:
        """The clocks and the timer service's saved form (`TimerService.save`: wake-ups by
        slot, holds), naming keys as `key_form` gives them and windows, for a store that keeps
        states apart (`restore_queues`). A session's every merged-away window left a wake-up,
        which is left out where its key's state is at hand. With a slot store, call this once
        a step."""
        k = self.kernel.k
        return dict(wm=k.wm, pt=k.pt, settled_wm=k.settled_wm, step=k.step, out_wm=self.out_wm,
                    **self.timers.save(key_form))

    def restore_queues(self, saved: Dict[str, Any], key_of: Callable[[Any], Any] = _same) -> None:
        """Put back what `save_queues` gave (keys as `key_of` makes them of their saved form)."""
        k = self.kernel.k
        k.wm, k.pt, k.settled_wm, k.step = saved["wm"], saved["pt"], saved["settled_wm"], saved["step"]
        self.out_wm = saved["out_wm"]
        self.timers.restore(saved, key_of)

    # --- internals -----------------------------------------------------------------------------
    def _drain(self) -> None:
        """Hand the wake-ups and holds the kernel asked for to the timer service."""
        k, timers = self.kernel, self.timers
        for domain, at in k.timer_requests.items():
            if at:
                timers.add_all(domain, at)
                at.clear()
        if k.hold_requests:
            timers.add_holds(k.hold_requests)
            k.hold_requests.clear()

    def _fire(self, domain: str, now: int, out: list) -> None:
        """The wake-ups due by `now`, in time order. The kernel only asks for wake-ups later
        than the clock it was shown, so nothing requested while firing is due now; the
        service still takes late additions in order."""
        kernel, states = self.kernel, self.store.states
        for time, entries in self.timers.due(domain, now):
            try:
                kernel.on_timers(states, domain, time, entries, out)
            except ElementError as e:
                raise self._error(e) from e.cause
            self._drain()

    def _error(self, e: ElementError) -> UserCodeError:
        if e.cause is None:
            return UserCodeError(f"transform {self.label!r}: {e}")
        return user_code_error(self.label, e.element, e.cause)
