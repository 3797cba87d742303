"""Beam's state and timers for DoFns: a stateful DoFn declares state cells and timers as class
attributes (`BagStateSpec`, `TimerSpec`, ...), asks for them in `process` with
`DoFn.StateParam(spec)` / `DoFn.TimerParam(spec)`, and handles a timer's firing in a method
decorated `@on_timer(spec)`. Its input must be (key, value) pairs: state and timers are per key
and window. The runtime's `StatefulDoFnHost` runs it the same way on every runner."""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Optional, Tuple

from .combinefn import CombineFn, as_combine_fn


class TimeDomain:
    """The clocks a timer can follow: the input watermark (event time) or processing time."""

    WATERMARK = "WATERMARK"
    REAL_TIME = "REAL_TIME"
    DEPENDENT_REAL_TIME = "DEPENDENT_REAL_TIME"

    @staticmethod
    def from_string(domain: str) -> str:
        if domain not in (TimeDomain.WATERMARK, TimeDomain.REAL_TIME,
                          TimeDomain.DEPENDENT_REAL_TIME):
            raise ValueError(f"unknown time domain {domain!r}: WATERMARK or REAL_TIME")
        return domain


def _spec_name(kind: str, name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a {kind}'s name must be a non-empty str, got {name!r}")
    return name


def _coder(who: str, coder: Any) -> Any:
    from .coders import Coder
    if coder is not None and not isinstance(coder, Coder):
        raise TypeError(f"{who}: coder must be a Coder (pomset.coders, Beam's names) or None, "
                        f"got {coder!r}")
    return coder


class StateSpec:
    """A state cell a stateful DoFn declares; its coder is accepted for Beam's sake (pomset
    keeps state as Python values)."""

    def __init__(self, name: str, coder: Any = None) -> None:
        self.name = _spec_name(type(self).__name__, name)
        self.coder = _coder(f"{type(self).__name__}({name!r})", coder)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class BagStateSpec(StateSpec):
    """A bag: `add(value)`, `read()` (in the order added), `clear()`."""


class SetStateSpec(StateSpec):
    """A set of hashable values: `add(value)`, `read()`, `clear()`."""


class ReadModifyWriteStateSpec(StateSpec):
    """One value: `read()` (None when unset), `write(value)`, `clear()`."""


class OrderedListStateSpec(StateSpec):
    """(timestamp, value) pairs read in time order: `add((ts, value))`, `read()`,
    `read_range(min_ts, limit_ts)`, `clear_range(min_ts, limit_ts)`, `clear()`."""


class CombiningValueStateSpec(StateSpec):
    """A value folded by a CombineFn (or a function of an iterable): `add(value)`, `read()`
    (the combined output), `clear()`. As in Beam, the CombineFn may be given in place of the
    coder."""

    def __init__(self, name: str, coder: Any = None, combine_fn: Any = None) -> None:
        if combine_fn is None and (isinstance(coder, CombineFn) or callable(coder)
                                   and not isinstance(coder, type)):
            coder, combine_fn = None, coder
        super().__init__(name, coder)
        if not (isinstance(combine_fn, CombineFn) or callable(combine_fn)):
            raise TypeError(f"CombiningValueStateSpec({name!r}) needs a combine_fn: a "
                            f"CombineFn or a function of an iterable, got {combine_fn!r}")
        self.combine_fn = as_combine_fn(combine_fn)


class TimerSpec:
    """A timer a stateful DoFn declares, in `time_domain` (`TimeDomain.WATERMARK` or
    `TimeDomain.REAL_TIME`); a method decorated `@on_timer(spec)` handles its firings."""

    def __init__(self, name: str, time_domain: str) -> None:
        self.name = _spec_name("TimerSpec", name)
        self.time_domain = TimeDomain.from_string(time_domain)
        self._attached_callback: Optional[Callable] = None   # set by @on_timer

    def __repr__(self) -> str:
        return f"TimerSpec({self.name})"


def on_timer(timer_spec: TimerSpec) -> Callable[[Callable], Callable]:
    """Mark a DoFn method as the callback of `timer_spec` (stackable: one method may serve
    several timers; a timer has one callback)."""
    if not isinstance(timer_spec, TimerSpec):
        raise ValueError(f"on_timer takes a TimerSpec, got {timer_spec!r}")

    def decorate(method: Callable) -> Callable:
        if timer_spec._attached_callback is not None:
            raise ValueError(f"Multiple on_timer callbacks registered for {timer_spec!r}.")
        timer_spec._attached_callback = method
        return method
    return decorate


class StateParam:
    """`DoFn.StateParam(spec)`: the default of a `process` (or timer callback) parameter
    that receives the state cell `spec` of the element's key and window."""

    def __init__(self, spec: StateSpec) -> None:
        if not isinstance(spec, StateSpec):
            raise ValueError(f"DoFn.StateParam takes a state spec (BagStateSpec, ...), got "
                            f"{spec!r}")
        self.spec = spec


class TimerParam:
    """`DoFn.TimerParam(spec)`: the default of a parameter that receives the timer `spec`
    of the element's key and window."""

    def __init__(self, spec: TimerSpec) -> None:
        if not isinstance(spec, TimerSpec):
            raise ValueError(f"DoFn.TimerParam takes a TimerSpec, got {spec!r}")
        self.spec = spec


def _params(fn: Callable) -> List[Tuple[str, Any]]:
    try:
        return [(name, p.default) for name, p in inspect.signature(fn).parameters.items()]
    except (TypeError, ValueError):
        return []


def get_dofn_specs(dofn: Any) -> Tuple[List[StateSpec], List[TimerSpec]]:
    """The state and timer specs a DoFn's methods ask for (`DoFn.StateParam(spec)`,
    `DoFn.TimerParam(spec)`)."""
    states: Dict[str, StateSpec] = {}
    timers: Dict[str, TimerSpec] = {}
    methods = [m for m in (getattr(type(dofn), n, None) for n in dir(type(dofn))
                           if not n.startswith("__")) if inspect.isfunction(m)]
    found = [default.spec for method in methods
             for _, default in _params(method) if isinstance(default, (StateParam, TimerParam))]
    for spec in found:
        into = timers if isinstance(spec, TimerSpec) else states
        if into.setdefault(spec.name, spec) is not spec:
            raise ValueError(f"{type(dofn).__name__}: two {'timers' if into is timers else 'state cells'} "
                             f"are named {spec.name!r}: {into[spec.name]!r} and {spec!r}")
    return list(states.values()), list(timers.values())


def timer_callbacks(dofn: Any) -> Dict[str, Callable]:
    """Timer name -> the bound method that handles its firings."""
    return {spec.name: getattr(dofn, spec._attached_callback.__name__)
            for spec in get_dofn_specs(dofn)[1] if spec._attached_callback is not None}


def is_stateful_dofn(dofn: Any) -> bool:
    """Whether a DoFn uses state or timers."""
    states, timers = get_dofn_specs(dofn)
    return bool(states or timers)


def validate_stateful_dofn(dofn: Any) -> None:
    """Raise a ValueError naming what is wrong (in Beam's words): two specs of one name, a
    timer without a callback, a callback another method of the same name replaced."""
    for spec in get_dofn_specs(dofn)[1]:
        callback = spec._attached_callback
        if callback is None:
            raise ValueError(f"DoFn {dofn!r} has a TimerSpec without an associated on_timer "
                             f"callback: {spec!r}. Decorate the method that handles it with "
                             f"@on_timer(<that TimerSpec>).")
        if getattr(type(dofn), callback.__name__, None) is not callback:
            raise ValueError(f"The on_timer callback for {spec!r} is not the specified "
                             f".{callback.__name__} method for DoFn {dofn!r} (perhaps it was "
                             f"overwritten?).")
