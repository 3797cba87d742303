"""The one host of stateful DoFns (Beam's state and timers, `sdk/userstate.py`) under every
runner: per key and window, the DoFn's state cells and its timers; the elements in, the timers
firing as the clocks move, the state of an expired window collected, and the output watermark
held back by the timers still set.

A runner moves the clocks of a step in the kernel host's order (`kernel_host`):
`processing_time` (processing-time timers now due fire), `elements`, then `watermark`
(event-time timers due fire in time order, each seeing the state as the earlier ones left
it; then the windows whose end plus allowed lateness the watermark passed lose their state
and timers; an element for a window that expired so is dropped, as in Beam, and counted in
`dropped`, which the run reports). At the end of time the processing clock ends too: a bounded input's pending
processing-time timers fire once it is all read, as in Beam's batch runners. A timer set for time t fires once its clock reaches t (the watermark, or the
processing clock); setting it again moves it, `clear` removes it. A timer's output timestamp
(its `output_timestamp`, else its time for an event-time timer, else the input watermark when
it was set), clamped into its window, is the time of what its callback outputs, and holds the
output watermark until it fires.

The host is a client of the runtime's timer service (`timers.TimerService`): a key's state in
the keyed store is its windows' cells and its timers' settings (`timers.KeyedTimers`), the
service queues them and their holds, and a window's expiry is an event-time timer of its own,
whose firing drops the window's cells and timers once the event-time timers due have fired.
`save`/`load` give a runner the whole state as plain data (a checkpoint); a runner that stores
by key (Spark) gives the host its keyed store and slot store, and saves the queues alone
(`save_queues`)."""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from ..sdk.combinefn import copy_combine_fn
from ..sdk.core import ParDo
from ..sdk.dofn import DoFn
from ..sdk.errors import CheckpointError
from ..sdk.user_metrics import enter
from ..sdk.userstate import (BagStateSpec, CombiningValueStateSpec, OrderedListStateSpec,
                             ReadModifyWriteStateSpec, SetStateSpec, StateParam, TimeDomain,
                             TimerParam, get_dofn_specs, timer_callbacks)
from ..triggers.definitions import EVENT_TIME, PROCESSING_TIME
from ..windowing import (MAX_MICROS, MIN_MICROS, NO_FIRING, GlobalWindow, Timestamp,
                         WindowedValue, to_micros)
from .elementwise import (DoFnRunner, raised_here, returned_error, start_bundle,
                          user_code_error)
from .timers import InMemoryStore, KeyedStore, KeyedTimers, SlotStore, TimerService
from .watermarks import output_watermark

# a key's state: {window: [cells {state name: value}, timers {(name, tag): setting}]}; a
# timer's id in the service is (window, (name, tag)), a window's expiry's (window, None)
TimerId = Tuple[Any, Optional[Tuple[str, str]]]
# the user's time domains, as the timer service spells them
_DOMAINS = {TimeDomain.WATERMARK: EVENT_TIME, TimeDomain.REAL_TIME: PROCESSING_TIME,
            TimeDomain.DEPENDENT_REAL_TIME: PROCESSING_TIME}


def _same(key: Any) -> Any:
    return key


def _expiry_id(window: Any) -> TimerId:
    """The id of a window's expiry timer."""
    return (window, None)


# --- state cells: views of one (key, window)'s stored values -------------------------------

class _Cell:
    def __init__(self, store: Dict[str, Any], spec: Any) -> None:
        self.store, self.name, self.spec = store, spec.name, spec

    def clear(self) -> None:
        self.store.pop(self.name, None)


class _Bag(_Cell):
    def add(self, value: Any) -> None:
        self.store.setdefault(self.name, []).append(value)

    def read(self) -> List[Any]:
        return list(self.store.get(self.name, ()))


class _Set(_Cell):
    def add(self, value: Any) -> None:
        self.store.setdefault(self.name, {})[value] = None

    def read(self) -> set:
        return set(self.store.get(self.name, ()))


class _ReadModifyWrite(_Cell):
    def write(self, value: Any) -> None:
        self.store[self.name] = value

    def read(self) -> Any:
        return self.store.get(self.name)


class _Combining(_Cell):
    """A combining state, folded by its host's copy of the spec's CombineFn."""

    def __init__(self, store: Dict[str, Any], spec: Any, fn: Any) -> None:
        super().__init__(store, spec)
        self.fn = fn

    def add(self, value: Any) -> None:
        fn = self.fn
        acc = self.store.get(self.name)
        self.store[self.name] = fn.add_input(fn.create_accumulator() if acc is None else acc,
                                             value)

    def read(self) -> Any:
        fn = self.fn
        acc = self.store.get(self.name)
        return fn.extract_output(fn.create_accumulator() if acc is None else acc)


class _OrderedList(_Cell):
    def add(self, item: Tuple[Any, Any]) -> None:
        ts, value = item
        self.store.setdefault(self.name, []).append((to_micros(ts), value))

    def read(self) -> List[Tuple[Timestamp, Any]]:
        return self.read_range(MIN_MICROS, MAX_MICROS + 1)

    def read_range(self, min_timestamp: Any, limit_timestamp: Any) -> List[Tuple[Timestamp, Any]]:
        lo, hi = to_micros(min_timestamp), to_micros(limit_timestamp)
        items = sorted((e for e in self.store.get(self.name, ()) if lo <= e[0] < hi),
                       key=lambda e: e[0])
        return [(Timestamp.from_micros(t), v) for t, v in items]

    def clear_range(self, min_timestamp: Any, limit_timestamp: Any) -> None:
        lo, hi = to_micros(min_timestamp), to_micros(limit_timestamp)
        kept = [e for e in self.store.get(self.name, ()) if not lo <= e[0] < hi]
        if kept:
            self.store[self.name] = kept
        else:
            self.clear()


_CELLS = {BagStateSpec: _Bag, SetStateSpec: _Set, ReadModifyWriteStateSpec: _ReadModifyWrite,
          CombiningValueStateSpec: _Combining, OrderedListStateSpec: _OrderedList}


#: the context parameters a stateful DoFn's methods may ask for, by what they give
_CONTEXT = {id(DoFn.KeyParam): "key", id(DoFn.WindowParam): "window",
            id(DoFn.TimestampParam): "ts", id(DoFn.PaneInfoParam): "pane",
            id(DoFn.DynamicTimerTagParam): "tag", id(DoFn.DiffParam): "diff"}


class _Timer:
    """A timer of one (key, window): `set(timestamp, dynamic_timer_tag='',
    output_timestamp=None)` and `clear(dynamic_timer_tag='')`."""

    def __init__(self, host: "StatefulDoFnHost", key: Any, window: Any, spec: Any) -> None:
        self.host, self.key, self.window, self.spec = host, key, window, spec

    def set(self, timestamp: Any, dynamic_timer_tag: str = "",
            output_timestamp: Any = None) -> None:
        self.host.set_timer(self.key, (self.window, (self.spec.name, dynamic_timer_tag)),
                            _DOMAINS[self.spec.time_domain], to_micros(timestamp),
                            None if output_timestamp is None else to_micros(output_timestamp))

    def clear(self, dynamic_timer_tag: str = "") -> None:
        self.host.keyed.clear(self.key, (self.window, (self.spec.name, dynamic_timer_tag)))


class StatefulDoFnHost:
    """Runs a stateful ParDo's DoFn (see the module docstring); `outs` are its output tags.
    Its DoFn lifecycle and outputs are a `DoFnRunner`'s (`runner`), so are its user
    metrics."""

    def __init__(self, transform: ParDo, tags: List[Optional[str]], label: str,
                 allowed_lateness_us: int) -> None:
        self.runner = DoFnRunner(transform, tags, label)
        self.tags, self.label = list(tags), label
        self.dofn = transform.fn
        self.lateness = allowed_lateness_us
        self.specs = {s.name: s for s in get_dofn_specs(self.dofn)[0]}
        # each combining state's CombineFn, a copy of this host's own (the spec is the DoFn
        # class's), set up and torn down with the DoFn
        self.combiners = {name: copy_combine_fn(s.combine_fn) for name, s in self.specs.items()
                          if isinstance(s, CombiningValueStateSpec)}
        self.runner.combine_fns.extend(self.combiners.values())
        self.callbacks = timer_callbacks(self.dofn)
        self.process = self._binder(self.dofn.process)
        self.on_timer = {name: self._binder(fn) for name, fn in self.callbacks.items()}
        self.args, self.kwargs = transform.args, transform.kwargs
        self.dropped = 0
        self.keyed = KeyedTimers(self._table)
        self.reset()

    def reset(self, store: Optional[KeyedStore] = None,
              slot_store: Optional[SlotStore] = None) -> None:
        """No state, no timers, the clocks at the start, over `store` (in memory by default)
        and `slot_store` (a runner storing by key gives its own)."""
        self.store: KeyedStore = store if store is not None else InMemoryStore()
        self.timers = TimerService(self.keyed, self.store, slot_store)
        self.wm = MIN_MICROS
        self.pt = MIN_MICROS
        self.out_wm = MIN_MICROS

    def _window(self, key: Any, window: Any, create: bool) -> Optional[list]:
        """The key's state of `window`, [cells, timers] (made if `create`, with the window's
        expiry timer; None if it has none)."""
        states = self.store.states
        ks = states.get(key)
        if ks is None:
            if not create:
                return None
            ks = states[key] = {}
        ws = ks.get(window)
        if ws is None and create:
            ws = ks[window] = [{}, {}]
            expiry = self._expiry(window)
            if expiry < MAX_MICROS:   # a global window's never comes
                self.keyed.set(self.timers, key, _expiry_id(window), EVENT_TIME, expiry + 1,
                               None)
        return ws

    def _table(self, key: Any, window: Any, create: bool) -> Optional[Dict[Any, Any]]:
        """The key's timers of `window` (`KeyedTimers`' table)."""
        ws = self._window(key, window, create)
        return None if ws is None else ws[1]

    # --- how user code is called ---------------------------------------------------------
    def _binder(self, fn: Callable) -> Callable[..., Dict[str, Any]]:
        """A function giving the keyword arguments `fn` asks for, for a key, window,
        timestamp and dynamic timer tag."""
        asks = []
        for name, p in inspect.signature(fn).parameters.items():
            d = p.default
            if isinstance(d, StateParam):
                asks.append((name, "state", d.spec))
            elif isinstance(d, TimerParam):
                asks.append((name, "timer", d.spec))
            elif id(d) in _CONTEXT:
                asks.append((name, _CONTEXT[id(d)], None))

        def bind(key: Any, window: Any, ts: int, pane: Any, tag: str,
                 diff: int = 1) -> Dict[str, Any]:
            out: Dict[str, Any] = {}
            store = None
            for name, what, spec in asks:
                if what == "state":
                    if store is None:
                        store = self._store(key, window)
                    out[name] = (_Combining(store, spec, self.combiners[spec.name])
                                 if spec.name in self.combiners
                                 else _CELLS[type(spec)](store, spec))
                elif what == "timer":
                    out[name] = _Timer(self, key, window, spec)
                elif what == "ts":
                    out[name] = Timestamp.from_micros(ts)
                else:
                    out[name] = {"key": key, "window": window, "pane": pane, "tag": tag,
                                 "diff": diff}[what]
            return out
        return bind

    def _store(self, key: Any, window: Any) -> Dict[str, Any]:
        return self._window(key, window, True)[0]

    def _expiry(self, window: Any) -> int:
        """When a window's state goes: once the watermark passes its end plus the allowed
        lateness (a global window's at the end of time)."""
        if isinstance(window, GlobalWindow):
            return MAX_MICROS
        return min(window.max_ts + self.lateness, MAX_MICROS)

    def set_timer(self, key: Any, tid: TimerId, domain: str, at: int,
                  output: Optional[int]) -> None:
        """Set the key's timer `tid` to `at` in `domain` (the service's spelling), its output
        timestamp `output` (None: its time for an event-time timer, else the watermark)."""
        window, (name, _) = tid
        if domain == EVENT_TIME:
            expiry = self._expiry(window)
            if at > expiry + 1:
                raise ValueError(
                    f"timer {name!r} set to {Timestamp.from_micros(at)}, after its window "
                    f"{window} expires at {Timestamp.from_micros(expiry + 1)} (its end plus the "
                    f"allowed lateness): it could never fire")
        if output is None:
            output = at if domain == EVENT_TIME else self.wm
        output = min(max(output, getattr(window, "start_us", MIN_MICROS)), window.max_ts)
        self.keyed.set(self.timers, key, tid, domain, at, output)

    def _call(self, fn: Callable[..., Any], args: tuple, kwargs: Dict[str, Any], what: Any,
              wv: WindowedValue, outs: Dict[Optional[str], list], element: bool = False
              ) -> None:
        """`fn(*args, **kwargs)`, its outputs emitted to `outs`; its failure fails the run,
        or, for an `element` with a dead-letter output, goes there (its outputs withdrawn
        unless `partial`; the state it wrote kept, as it was allowed to be)."""
        runner = self.runner
        prev = enter(runner.metrics)
        dead = element and runner.dead_tag is not None
        marks = [(items, len(items)) for items in outs.values()] if dead and runner.withdraws \
            else ()
        r = None
        try:
            r = fn(*args, **kwargs)
            if r is not None:
                if isinstance(r, (str, bytes, dict)):
                    raise returned_error(self.label, r)
                for item in r:
                    self.runner.emit(item, wv, outs)
        except Exception as e:
            if (r is not None and isinstance(e, TypeError)
                    and raised_here(e, StatefulDoFnHost._call.__code__)):
                e = returned_error(self.label, r)   # what it returned is not iterable
            if not dead or not isinstance(e, runner.catches):
                raise user_code_error(self.label, what, e) from e
            for items, n in marks:
                del items[n:]
            runner.dead_letter(what, wv, e, outs)
        finally:
            enter(prev)

    # --- a step --------------------------------------------------------------------------
    def _start_bundle(self) -> None:
        prev = enter(self.runner.metrics)
        try:
            start_bundle(self.dofn, self.label)
        except Exception as e:
            raise user_code_error(self.label, "<start_bundle>", e) from e
        finally:
            enter(prev)

    def _finish_bundle(self, outs: Dict[Optional[str], list]) -> None:
        """What finish_bundle outputs goes to `outs` (a failing bundle is not finished)."""
        prev = enter(self.runner.metrics)
        try:
            self.runner.finish_bundle_to(outs)
        finally:
            enter(prev)

    def elements(self, bundle: List[WindowedValue], outs: Dict[Optional[str], list],
                 keys: Optional[Iterable[Any]] = None) -> None:
        """A bundle of (key, value) elements, each processed with its key and window's state
        and timers; outputs go to `outs` by tag. `keys`, the bundle's keys, lets a store that
        loads states on demand load them first."""
        if bundle:
            if keys is not None:
                keys = list(keys)
                self.store.ensure(keys)
                for key in keys:
                    self.store.touch(key)
            self._start_bundle()
            self._elements(bundle, outs)
            self._finish_bundle(outs)

    def _elements(self, bundle: List[WindowedValue], outs: Dict[Optional[str], list]) -> None:
        process = self.dofn.process
        for wv in bundle:
            kv = wv.value
            if type(kv) is not tuple or len(kv) != 2:
                raise user_code_error(self.label, kv, TypeError(
                    "a stateful DoFn needs (key, value) pairs: state and timers are per key"))
            if self._expiry(wv.window) < self.wm:
                self.dropped += 1
                continue
            kwargs = self.process(kv[0], wv.window, wv.ts, wv.pane, "", wv.diff)
            if self.kwargs:
                kwargs.update(self.kwargs)
            self._call(process, (kv,) + tuple(self.args), kwargs, kv, wv, outs, element=True)
            self._tidy(kv[0], wv.window)

    def _tidy(self, key: Any, window: Any) -> None:
        """Forget a window whose state cells are all clear and which has no timer of its
        user's (nor then its expiry), and a key left with no window."""
        ks = self.store.states.get(key)
        ws = ks.get(window) if ks else None
        if ws is not None and not ws[0] and all(name is None for name in ws[1]):
            del ks[window]
            if not ks:
                del self.store.states[key]

    def processing_time(self, pt: int, outs: Dict[Optional[str], list]) -> None:
        """The processing clock moved to `pt`: fire the processing-time timers now due."""
        self.pt = max(self.pt, pt)
        self._fire(PROCESSING_TIME, self.pt, outs, [])

    def watermark(self, wm: int, outs: Dict[Optional[str], list]) -> None:
        """The input watermark moved to `wm`: fire the event-time timers due, in time order,
        then drop the state and timers of the windows that expired."""
        self.wm = max(self.wm, wm)
        expired: List[Tuple[Any, Any]] = []
        self._fire(EVENT_TIME, self.wm, outs, expired)
        if self.wm == MAX_MICROS:
            self.processing_time(MAX_MICROS, outs)
        states = self.store.states
        for key, window in expired:
            ks = states.get(key)
            if ks is not None and ks.pop(window, None) is not None and not ks:
                del states[key]

    def _fire(self, domain: str, now: int, outs: Dict[Optional[str], list],
              expired: List[Tuple[Any, Any]]) -> None:
        """The timers due by `now` in time order, in one bundle (none if no user timer
        fires); the windows whose expiry came go to `expired`."""
        keyed, started = self.keyed, False
        for at, entries in self.timers.due(domain, now):
            for i in range(0, len(entries), 2):
                key, tid = entries[i], entries[i + 1]
                window, name = tid
                if name is None:
                    if keyed.stands(domain, key, tid, at):
                        expired.append((key, window))
                    continue
                setting = keyed.take(domain, key, tid, at)
                if setting is None:
                    continue   # cleared, or set again for another time
                output = setting[2]
                name, tag = name
                if not started:
                    self._start_bundle()
                    started = True
                wv = WindowedValue.raw(None, output, window, NO_FIRING, 1)
                kwargs = self.on_timer[name](key, window, at, NO_FIRING, tag)
                self._call(self.callbacks[name], (), kwargs, f"<timer {name!r} of key {key!r}>",
                           wv, outs)
                self._tidy(key, window)
        if started:
            self._finish_bundle(outs)

    def next_processing_timer(self) -> Optional[int]:
        return self.timers.next_standing(PROCESSING_TIME)

    def hold(self) -> int:
        """The earliest output time of the timers still set (MAX when none)."""
        return self.timers.hold()

    def output_watermark(self) -> int:
        self.out_wm = output_watermark(self.out_wm, (self.wm, self.hold()))
        return self.out_wm

    def end_step(self) -> None:
        """The step is over: the keys' states that changed are saved."""
        self.store.save()

    def run_to_end(self, elements: List[WindowedValue], now: int) -> Dict[Optional[str], list]:
        """A bounded input's outputs: every element in, then the watermark from MIN to MAX."""
        outs: Dict[Optional[str], list] = {tag: [] for tag in self.tags}
        self.processing_time(now, outs)
        self.elements(elements, outs)
        self.watermark(MAX_MICROS, outs)
        return outs

    # --- saved form --------------------------------------------------------------------------
    def save(self) -> Dict[str, Any]:
        """Everything the host keeps, for a checkpoint: the keys' states and the queues."""
        return dict(states=self.store.states, queues=self.save_queues())

    def load(self, saved: Dict[str, Any]) -> None:
        """Put back what `save` gave, in memory; a `CheckpointError` for a save of another
        form (one whole dict of cells and one of timers)."""
        if "queues" not in saved:
            raise CheckpointError(
                f"stateful ParDo {self.label!r}: its saved state has the form of an earlier "
                f"version (keys {sorted(saved)}), which this one cannot resume: start it from "
                f"a new checkpoint directory")
        self.reset()
        self.store.states = saved["states"]
        self.restore_queues(saved["queues"])

    def save_queues(self, key_form: Callable[[Any], Any] = _same) -> Dict[str, Any]:
        """The clocks and the timer service's saved form (keys as `key_form` gives them)."""
        return dict(wm=self.wm, pt=self.pt, out_wm=self.out_wm, **self.timers.save(key_form))

    def restore_queues(self, saved: Dict[str, Any], key_of: Callable[[Any], Any] = _same) -> None:
        """Put back what `save_queues` gave (keys as `key_of` makes them of their saved form)."""
        self.wm, self.pt, self.out_wm = saved["wm"], saved["pt"], saved["out_wm"]
        self.timers.restore(saved, key_of)
