"""Beam's `--runtime_type_check`: each element a Map, FlatMap, Filter or ParDo takes, and
each it outputs, checked against the types it declares as the pipeline runs (a
TypeCheckError naming the step, the hint and the value, worded as Beam's). Opt-in: a
pipeline without the flag runs its functions unwrapped, at no cost."""
from __future__ import annotations

import copy
import functools
import types
import typing
from typing import Any, Callable, Optional

from ..windowing import TimestampedValue, WindowedValue
from .dofn import TaggedOutput, copy_dofn
from .type_hints import (HINTS_ATTR, TypeCheckError, beam_str, declared_hints, first_parameter,
                         normalize)


def holds(value: Any, hint: Any) -> bool:
    """Whether `value` is an instance of the type `hint` (its items too, for a tuple, list,
    set or dict hint)."""
    hint = normalize(hint)
    if hint is typing.Any or isinstance(hint, typing.TypeVar) or isinstance(hint, str):
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        return any(holds(value, a) for a in args)
    if origin is None:
        return not isinstance(hint, type) or isinstance(value, hint)
    if isinstance(origin, type) and not isinstance(value, origin):
        return False
    if not args:
        return True
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(holds(v, args[0]) for v in value)
        return len(value) == len(args) and all(holds(v, a) for v, a in zip(value, args))
    if isinstance(value, dict) and len(args) == 2:
        return all(holds(k, args[0]) and holds(v, args[1]) for k, v in value.items())
    if isinstance(value, (list, set, frozenset)):
        return all(holds(v, args[0]) for v in value)
    return True


def _input_violation(label: str, name: Optional[str], hint: Any, value: Any) -> TypeCheckError:
    return TypeCheckError(f"Runtime type violation detected within {label}: Type-hint for "
                          f"argument: '{name}' violated. Expected an instance of "
                          f"{beam_str(hint)}, instead found {value}, an instance of "
                          f"{type(value)}.")


def _output_violation(label: str, hint: Any, value: Any) -> TypeCheckError:
    return TypeCheckError(f"Runtime type violation detected within {label}: According to "
                          f"type-hint expected output should be of type {beam_str(hint)}. "
                          f"Instead, received '{value}', an instance of type {type(value)}.")


def _check_output(label: str, hint: Any, item: Any) -> None:
    """Raise TypeCheckError unless one output (its value, where timestamped) fits `hint`;
    a side output's (TaggedOutput) is not checked: its type is not declared."""
    if isinstance(item, TaggedOutput):
        return
    value = item.value if isinstance(item, (TimestampedValue, WindowedValue)) else item
    if holds(value, hint):
        return
    if typing.get_origin(normalize(hint)) is tuple and not isinstance(value, tuple):
        raise TypeCheckError(f"Runtime type violation detected within {label}: Tuple type "
                             f"constraint violated. Valid object instance must be of type "
                             f"'tuple'. Instead, an instance of '{type(value).__name__}' was "
                             f"received.")
    raise _output_violation(label, hint, value)


def checked(fn: Callable[..., Any], call: str, label: str, inputs: tuple,
            output: Any) -> Callable[..., Any]:
    """`fn` (a ParDo's function) checking its element and extra arguments against `inputs`
    and what it returns (a Map) or each item of it (a FlatMap) against `output`."""
    name = first_parameter(fn)

    @functools.wraps(fn, updated=())
    def run(*args: Any, **kwargs: Any) -> Any:
        return _call_checked(fn, args, kwargs, call, label, name, inputs, output)
    setattr(run, HINTS_ATTR, declared_hints(fn))
    return run


def checked_process(dofn: Any, label: str, inputs: tuple, output: Any) -> Callable[..., Any]:
    """`dofn`'s `process` checking its arguments and each output, as `checked` does, bound
    to `dofn`: a copy of the DoFn (`copy_dofn`) binds it to itself, so that it calls the
    copy's process, with the copy's attributes."""
    bound = dofn.process
    func = bound.__func__
    name = first_parameter(bound)

    @functools.wraps(func, updated=())
    def process(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _call_checked(func.__get__(self), args, kwargs, "dofn", label, name, inputs,
                             output)
    setattr(process, HINTS_ATTR, declared_hints(bound))
    return types.MethodType(process, dofn)


def _call_checked(fn: Callable[..., Any], args: tuple, kwargs: dict, call: str, label: str,
                  name: Optional[str], inputs: tuple, output: Any) -> Any:
    for i, (value, hint) in enumerate(zip(args, inputs)):
        if hint is not None and not holds(value, hint):
            raise _input_violation(label, name if i == 0 else f"arg {i}", hint, value)
    result = fn(*args, **kwargs)
    if output is None or call == "filter":
        return result
    if call == "map":
        _check_output(label, output, result)
        return result
    if result is None:
        return result
    items = list(result)
    for item in items:
        _check_output(label, output, item)
    return items


def with_runtime_checks(transform: Any, full_label: str) -> Any:
    """A copy of the ParDo-like `transform` whose function checks the types it declares as
    it runs; the transform itself where it declares none (or keeps state, or is batched)."""
    hints = transform.get_type_hints()
    inputs = hints.input_types[0] if hints.input_types else ()
    output = hints.simple_output()
    if not inputs and output is None or transform.stateful or transform.batch_types:
        return transform
    label = f"ParDo({full_label})"
    out = copy.copy(transform)
    if transform.call == "dofn":
        dofn = copy_dofn(transform.fn)
        dofn.process = checked_process(dofn, label, inputs, output)
        out.fn = dofn
    else:
        out.fn = checked(transform.fn, transform.call, label, inputs, output)
    return out


def with_combine_checks(transform: Any, full_label: str) -> Any:
    """A copy of the CombinePerKey `transform` whose CombineFn checks each value it adds
    against the type it declares it takes; the transform itself where it declares none."""
    from .fn_types import combine_fn_types
    hint = combine_fn_types(transform.combine_fn)[0]
    if hint is None:
        return transform
    fn = copy.copy(transform.combine_fn)
    add = fn.add_input

    def add_input(accumulator: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        if not holds(value, hint):
            raise _input_violation(full_label, "value", hint, value)
        return add(accumulator, value, *args, **kwargs)
    fn.add_input = add_input
    out = copy.copy(transform)
    out.combine_fn = fn
    return out
