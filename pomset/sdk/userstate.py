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


class StateSpec:
    """A state cell a stateful DoFn declares; its coder is accepted for Beam's sake (pomset
    keeps state as Python values)."""

    kind = "state"

    def __init__(self, name: str, coder: Any = None) -> None:
        self.name = _spec_name(type(self).__name__, name)
        self.coder = coder

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


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
        if combine_fn is None:
            raise TypeError(f"CombiningValueStateSpec({name!r}) needs a combine_fn")
        self.combine_fn = as_combine_fn(combine_fn)


class TimerSpec:
    """A timer a stateful DoFn declares, in `time_domain` (`TimeDomain.WATERMARK` or
    `TimeDomain.REAL_TIME`); a method decorated `@on_timer(spec)` handles its firings."""

    def __init__(self, name: str, time_domain: str) -> None:
        self.name = _spec_name("TimerSpec", name)
        self.time_domain = TimeDomain.from_string(time_domain)

    def __repr__(self) -> str:
        return f"TimerSpec({self.name!r}, {self.time_domain})"


def on_timer(timer_spec: TimerSpec) -> Callable[[Callable], Callable]:
    """Mark a DoFn method as the callback of `timer_spec` (stackable: one method may serve
    several timers)."""
    if not isinstance(timer_spec, TimerSpec):
        raise TypeError(f"on_timer takes a TimerSpec, got {timer_spec!r}")

    def decorate(method: Callable) -> Callable:
        specs = list(getattr(method, "_pomset_timers", ()))
        method._pomset_timers = specs + [timer_spec]
        return method
    return decorate


class StateParam:
    """`DoFn.StateParam(spec)`: the default of a `process` (or timer callback) parameter
    that receives the state cell `spec` of the element's key and window."""

    def __init__(self, spec: StateSpec) -> None:
        if not isinstance(spec, StateSpec):
            raise TypeError(f"DoFn.StateParam takes a state spec (BagStateSpec, ...), got "
                            f"{spec!r}")
        self.spec = spec


class TimerParam:
    """`DoFn.TimerParam(spec)`: the default of a parameter that receives the timer `spec`
    of the element's key and window."""

    def __init__(self, spec: TimerSpec) -> None:
        if not isinstance(spec, TimerSpec):
            raise TypeError(f"DoFn.TimerParam takes a TimerSpec, got {spec!r}")
        self.spec = spec


def _params(fn: Callable) -> List[Tuple[str, Any]]:
    try:
        return [(name, p.default) for name, p in inspect.signature(fn).parameters.items()]
    except (TypeError, ValueError):
        return []


def get_dofn_specs(dofn: Any) -> Tuple[List[StateSpec], List[TimerSpec]]:
    """The state and timer specs a DoFn uses: asked for by its `process` and timer callbacks,
    or handled by an `on_timer` method."""
    states: Dict[str, StateSpec] = {}
    timers: Dict[str, TimerSpec] = {}
    methods = [getattr(dofn, "process", None)] + [m for _, m in _callbacks(dofn)]
    found = [default.spec for method in methods if method is not None
             for _, default in _params(method) if isinstance(default, (StateParam, TimerParam))]
    found += [spec for m in _timer_methods(dofn) for spec in m._pomset_timers]
    for spec in found:
        into = timers if isinstance(spec, TimerSpec) else states
        if into.setdefault(spec.name, spec) is not spec:
            raise ValueError(f"{type(dofn).__name__}: two {'timers' if into is timers else 'state cells'} "
                             f"are named {spec.name!r}: {into[spec.name]!r} and {spec!r}")
    return list(states.values()), list(timers.values())


def _timer_methods(dofn: Any) -> List[Callable]:
    out = []
    for name in dir(type(dofn)):
        attr = getattr(type(dofn), name, None)
        if callable(attr) and getattr(attr, "_pomset_timers", None):
            out.append(getattr(dofn, name))
    return out


def _callbacks(dofn: Any) -> List[Tuple[str, Callable]]:
    return [(spec.name, m) for m in _timer_methods(dofn) for spec in m._pomset_timers]


def timer_callbacks(dofn: Any) -> Dict[str, Callable]:
    """Timer name -> the bound method that handles its firings."""
    return dict(_callbacks(dofn))


def is_stateful_dofn(dofn: Any) -> bool:
    """Whether a DoFn uses state or timers."""
    states, timers = get_dofn_specs(dofn)
    return bool(states or timers)


def validate_stateful_dofn(dofn: Any) -> None:
    """Raise a ValueError naming what is wrong: two specs of one name, a timer without a
    callback."""
    _, timers = get_dofn_specs(dofn)
    callbacks = timer_callbacks(dofn)
    for spec in timers:
        if spec.name not in callbacks:
            raise ValueError(f"{type(dofn).__name__}: timer {spec.name!r} has no callback; "
                             f"decorate the method that handles it with @on_timer(<its "
                             f"TimerSpec>)")
