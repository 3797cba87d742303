"""A windowed combine under the streaming trigger users write most, with its state held a
window at a time: `AfterWatermark` with processing-time early and/or late firings
(`TimedWatermarkDriver.fits`), non-merging windows, panes output at the end of their window,
accumulating or discarding, no late output. It gives the panes `KernelHost` gives over the
general kernel, which keeps a `KeyState` per key and queues every record's wake-ups; where a
step touches most keys and windows (a Spark micro-batch that fires a pane per key and
window), that generality is most of the step's cost. Here a window's records (key -> a flat
record) sit in one table that a store loads and saves whole (`WindowTables`), and a window's
wake-ups are one summary: the earliest processing-time and event-time wake-ups its records
asked for (with none of the latter, the window is due at its garbage-collection time).

Every trigger decision is the trigger layer's, as the kernel makes it: the grouping's
`TimedWatermarkDriver` arms, fires and schedules each record (the record's first slots are the
driver's trigger state, read through `_Cursor`; the host is the driver's clocks), and
`kernel.next_pane` gives each pane's timing, index and whether it is the last.

No watermark holds are kept, because none can bind: a pending pane held the watermark at its
window's end, and is held only when that end is not before its key's output watermark (the
input watermark as of the step before, when nothing holds it back); a window whose end the
watermark then passes fires on time and lets go. So at the end of every step each hold is
at or after the input watermark, every key's output watermark is the input watermark of the
step before, and the host's is its input watermark. tests/test_timed_combine.py checks the
panes, watermarks and counters against `KernelHost` over random steps."""
from __future__ import annotations

from typing import Any, Dict, Optional, Protocol, Sequence

from ..sdk.errors import UserCodeError
from ..triggers.accumulation import AccumulationMode
from ..triggers.drivers import FIRE, TimedWatermarkDriver
from ..triggers.kernel import Counters, ElementError, element_error, expiry_watermark, next_pane
from ..triggers.reducers import AccumulatorReducer, CombineReducer
from ..windowing import MAX_MICROS, MIN_MICROS, TimestampCombiner, WindowedValue
from .elementwise import user_code_error
from .lifting import split_tallied

_raw = WindowedValue.raw
# A record: the driver's trigger state (`TRIGGER_SLOTS` slots, the trigger's own first, the
# rest None), then the accumulator, whether elements are pending, closed (the trigger
# finished), the next pane index and non-speculative index, and the event-time and
# processing-time wake-ups the driver asked for.
TRIGGER_SLOTS = 3
ACC, PENDING, CLOSED, INDEX, NONSPEC, ET, PT = range(TRIGGER_SLOTS, TRIGGER_SLOTS + 7)
_NEW = [None] * TRIGGER_SLOTS + [None, False, False, 0, 0, None, None]


class WindowTables(Protocol):
    """Where a host keeps its windows' tables between steps (window -> {key: record})."""

    def load(self, window: Any) -> Dict[Any, list]:
        """The window's table ({} if it has none)."""

    def save(self, tables: Dict[Any, Dict[Any, list]]) -> None:
        """Write back the tables changed in a step (an empty one leaves the store)."""


class InMemoryTables:
    """Windows' tables kept in memory."""

    def __init__(self) -> None:
        self.tables: Dict[Any, Dict[Any, list]] = {}

    def load(self, window: Any) -> Dict[Any, list]:
        return self.tables.get(window, {})

    def save(self, tables: Dict[Any, Dict[Any, list]]) -> None:
        for window, table in tables.items():
            if table:
                self.tables[window] = table
            else:
                self.tables.pop(window, None)


def fits(strategy: Any, reducer: Any, keep_late: bool = False) -> bool:
    """Whether a grouping with this windowing strategy and reducer can be hosted here."""
    return (TimedWatermarkDriver.fits(strategy.trigger)
            and strategy.trigger.slot_count() <= TRIGGER_SLOTS
            and not strategy.window_fn.is_merging()
            and strategy.timestamp_combiner is TimestampCombiner.OUTPUT_AT_EOW
            and strategy.accumulation_mode is not AccumulationMode.RETRACTING
            and type(reducer) is CombineReducer and not keep_late)


def _due(et: Optional[int], gc: int) -> int:
    """When the watermark wakes a record or window whose earliest event-time wake-up is `et`:
    then, or at the window's garbage-collection time `gc` if that is sooner or none is asked."""
    return gc if et is None or et > gc else et


class _Cursor:
    """The record the driver is asked about, in the shape it reads: `ts` the record itself
    (its first slots the trigger state), `window` its window, `fin` finished flags (the
    timed driver only clears them; a record keeps none)."""

    __slots__ = ("ts", "window", "fin")

    def __init__(self) -> None:
        self.ts: list = _NEW
        self.window: Any = None
        self.fin = 0


class TimedCombineHost:
    """One grouping's windows, clocks and wake-ups (see the module docstring), stepped as
    `KernelHost` is: `processing_time`, then `elements`/`partials`, then `watermark`, maybe
    `processing_time` again, then `end_step`. It is the driver's clocks: `wm`, `pt`."""

    def __init__(self, strategy: Any, reducer: CombineReducer, label: str,
                 tables: Optional[WindowTables] = None) -> None:
        driver = self.driver = TimedWatermarkDriver(strategy.trigger)
        # its answers, bound once: the hot path asks them for every element and pane
        self._on_element, self._should_fire = driver.on_element, driver.should_fire
        self._on_fire, self._wakes = driver.on_fire, driver.wakes
        self.lateness = strategy.allowed_lateness_us
        self.discarding = strategy.accumulation_mode is AccumulationMode.DISCARDING
        self.reducer, self.label = reducer, label
        self.store: WindowTables = tables if tables is not None else InMemoryTables()
        self.counters = Counters()
        self.wm, self.pt, self.settled_wm, self.out_wm = MIN_MICROS, 0, MIN_MICROS, MIN_MICROS
        # window -> [earliest processing-time wake-up of its records, earliest event-time
        # one] (each None if none asked for one)
        self.summary: Dict[Any, list] = {}
        self.tables: Dict[Any, Dict[Any, list]] = {}   # the windows loaded in this step
        self.cursor = _Cursor()

    @property
    def input_watermark(self) -> int:
        return self.wm

    def next_processing_timer(self) -> Optional[int]:
        """The earliest processing-time wake-up of the windows' records, if any."""
        return min((s[0] for s in self.summary.values() if s[0] is not None), default=None)

    # --- a step ------------------------------------------------------------------------------
    def processing_time(self, pt: int, out: list) -> None:
        """The processing clock moved to `pt` (it never goes back): fire what is due."""
        if pt > self.pt:
            self.pt = pt
        now = self.pt
        due = sorted((s[0], i, w) for i, (w, s) in enumerate(self.summary.items())
                     if s[0] is not None and s[0] <= now)
        for _, _, window in due:
            table = self._table(window)
            self.cursor.window = window
            due_records = sorted(((k, r) for k, r in table.items()
                                  if r[PT] is not None and r[PT] <= now),
                                 key=lambda kr: kr[1][PT])
            for _, r in due_records:
                r[PT] = None
            self._on_timers(window, table, due_records, out)

    def elements(self, bundle: Sequence[WindowedValue], out: list) -> None:
        """A bundle of (key, value) elements; panes go to `out`."""
        self._add(bundle, self.reducer, out)

    def partials(self, bundle: Sequence[WindowedValue], out: list) -> None:
        """A bundle of (key, partial accumulator) elements (combiner lifting), merged into the
        windows' accumulators; a `Tallied` partial's late and dropped counts are its rows'."""
        plain, tallied = split_tallied(bundle)
        reducer = AccumulatorReducer(self.reducer.fn)
        if plain:
            self._add(plain, reducer, out)
        if tallied:
            self._add(tallied, reducer, out, tallied=True)

    def watermark(self, wm: int, out: list) -> None:
        """The input watermark moved to `wm` (it never goes back): fire what is due, windows
        in the order of their wake-ups."""
        if wm > self.wm:
            self.wm = wm
        wm = self.wm
        due = []
        for i, (window, (_, et)) in enumerate(self.summary.items()):
            gc = self._gc(window)
            at = _due(et, gc)
            if at <= wm:
                due.append((at, i, window))
        for _, _, window in sorted(due):
            table = self._table(window)
            gc = self._gc(window)
            self._on_timers(window, table, [(key, r) for key, r in table.items()
                                            if _due(r[ET], gc) <= wm],
                            out)

    def output_watermark(self) -> int:
        """The output watermark after this step's clock moves: the input watermark (no hold
        binds, see the module docstring)."""
        if self.wm > self.out_wm:
            self.out_wm = self.wm
        return self.out_wm

    def end_step(self) -> None:
        """The step is over: the changed tables are saved; the input watermark now is every
        key's output watermark in the next step."""
        self.settled_wm = self.wm
        self.store.save(self.tables)
        self.tables = {}

    # --- state ---------------------------------------------------------------------------------
    def save_meta(self) -> Dict[str, Any]:
        """The clocks, window summaries and counters (the tables are in the store)."""
        return dict(wm=self.wm, pt=self.pt, settled_wm=self.settled_wm, out_wm=self.out_wm,
                    summary=self.summary)

    def restore_meta(self, saved: Dict[str, Any]) -> None:
        """Put back what `save_meta` gave."""
        self.wm, self.pt = saved["wm"], saved["pt"]
        self.settled_wm, self.out_wm = saved["settled_wm"], saved["out_wm"]
        self.summary = saved["summary"]

    # --- internals -----------------------------------------------------------------------------
    def _table(self, window: Any) -> Dict[Any, list]:
        table = self.tables.get(window)
        if table is None:
            table = self.tables[window] = (self.store.load(window) if window in self.summary
                                           else {})
        return table

    def _gc(self, window: Any) -> int:
        """When the watermark expires the window (its garbage-collection time)."""
        return min(window.max_ts + self.lateness + 1, MAX_MICROS)

    def _summarize(self, window: Any) -> None:
        """The window's summary from its records, after they changed (none left: gone)."""
        table = self.tables[window]
        if not table:
            self.summary.pop(window, None)
            return
        pts = [r[PT] for r in table.values() if r[PT] is not None]
        ets = [r[ET] for r in table.values() if r[ET] is not None]
        self.summary[window] = [min(pts) if pts else None, min(ets) if ets else None]

    def _add(self, bundle: Sequence[WindowedValue], reducer: Any, out: list,
             tallied: bool = False) -> None:
        """Each element into its window's record, as the kernel's `process_bundle` does; with
        `tallied`, each value is a `Tallied` partial, counted late and dropped as its rows
        (a partial's rows share its window's fate; each is late if behind the watermark)."""
        wm, lateness, counters, cursor = self.wm, self.lateness, self.counters, self.cursor
        on_element, fire, schedule = self._on_element, self._fire, self._schedule
        add, add_one, create, first = reducer.add, reducer.add_one, reducer.create, reducer.first
        gone = expiry_watermark(wm, lateness)
        touched = set()
        last: Any = None   # the window of the element before, whose table is `table`
        table: Dict[Any, list] = {}
        try:
            for wv in bundle:
                kv = wv.value
                if type(kv) is not tuple or len(kv) != 2:
                    raise element_error(kv, None)
                key, value = kv
                rows, tally = 1, value
                if tallied:
                    rows, value = tally.rows(), tally.acc
                window = wv.window
                if window.max_ts + lateness < gone:
                    counters.dropped_expired += rows
                    continue
                if tallied:
                    counters.late += tally.late(wm)
                elif wv.ts < wm:
                    counters.late += 1
                if window is not last:   # a bundle's elements mostly come a window at a time
                    if last is None or window != last:
                        table = self.tables.get(window)
                        if table is None:
                            table = self._table(window)
                        touched.add(window)
                    last = window
                r = table.get(key)
                if r is None:
                    r = table[key] = _NEW.copy()
                    r[ACC] = first(value) if wv.diff == 1 else add(create(), value, wv.diff)
                elif r[CLOSED]:
                    counters.dropped_closed += rows
                    continue
                else:
                    r[ACC] = add_one(r[ACC], value) if wv.diff == 1 else add(r[ACC], value, wv.diff)
                r[PENDING] = True
                cursor.ts, cursor.window = r, window
                act = on_element(self, cursor, value, wv.ts)
                if act:   # KEEP: its wake-ups stand (its windows never merge)
                    if act == FIRE:
                        fire(window, key, r, out)
                    schedule(r)
        except ElementError as e:   # not a (key, value) pair
            raise UserCodeError(f"transform {self.label!r}: {e}") from None
        except Exception as e:
            error = element_error(wv.value, e)
            if error.cause is None:   # its key is not hashable
                raise UserCodeError(f"transform {self.label!r}: {error}") from e
            raise user_code_error(self.label, wv.value, e) from e
        for window in touched:
            self._summarize(window)

    def _on_timers(self, window: Any, table: Dict[Any, list], due: list, out: list) -> None:
        """The window's records `due` ((key, record) pairs, in order) woke up: each fires if
        the trigger says so, and leaves the table once the watermark passes the window's
        garbage-collection time; then the window's summary is made again."""
        cursor, should_fire, fire, schedule = self.cursor, self._should_fire, self._fire, self._schedule
        cursor.window = window
        expired = window.max_ts + self.lateness < expiry_watermark(self.wm, self.lateness)
        key = None
        try:
            for key, r in due:
                cursor.ts = r
                if not r[CLOSED] and should_fire(self, cursor):
                    fire(window, key, r, out)
                if expired:
                    if not r[CLOSED] and (r[PENDING] or not r[NONSPEC]):
                        fire(window, key, r, out, final=True)
                    del table[key]
                else:
                    schedule(r)
        except Exception as e:
            raise user_code_error(self.label, key, e) from e
        self._summarize(window)

    def _schedule(self, r: list) -> None:
        """The record's wake-ups, as the driver asks (none once due, nor once closed); the
        cursor is at the record."""
        if r[CLOSED]:
            r[ET] = r[PT] = None
            return
        et, pt = self._wakes(self, self.cursor)
        r[ET] = None if et is not None and et <= self.wm else et
        r[PT] = None if pt is not None and pt <= self.pt else pt

    def _fire(self, window: Any, key: Any, r: list, out: list, final: bool = False) -> None:
        """Emit the window's pane as the trigger fires or (`final`) the window expires, as the
        kernel's `_fire` does (the cursor is at the record); a key's output watermark is the
        settled input watermark."""
        finished = True if final else self._on_fire(self, self.cursor)
        max_ts = window.max_ts
        fired = next_pane(self.wm, self.settled_wm, max_ts, self.lateness, r[INDEX], r[NONSPEC],
                          r[PENDING], finished)
        if fired is not None:
            pane, r[INDEX], r[NONSPEC] = fired
            out.append(_raw((key, self.reducer.output(r[ACC])), max_ts, window, pane, 1))
            if self.discarding and not pane.is_last:
                r[ACC] = self.reducer.create()
        r[PENDING] = False
        if finished:
            r[CLOSED] = True
            r[ACC] = None
