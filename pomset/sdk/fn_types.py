"""The types of what the core transforms run: a Map's, FlatMap's, Filter's or ParDo's
function or DoFn, and a combine's CombineFn (their declared hints, else their annotations,
else what their bytecode shows), for the construction-time type check (sdk/type_check.py)."""
from __future__ import annotations

import inspect
import types
import typing
from typing import Any, Optional, Tuple

from .type_hints import (IOTypeHints, TypeCheckError, beam_str, callable_hints, declared_hints,
                         element_of_iterable, is_consistent_with, to_typing, type_of,
                         union_of)
from .combinefn import CallableCombineFn, K, V
from .dofn import TaggedOutput
from .type_inference import infer_return_type


def pardo_hints(call: str, fn: Any) -> IOTypeHints:
    """What a ParDo-like step declares through what it runs: the element's type, and the
    type of each element it outputs (a FlatMap's function and a DoFn's `process` return
    iterables of them; a Filter outputs what it takes)."""
    if call == "dofn":
        own = declared_hints(fn)
        process = callable_hints(fn.process)
        out = process.simple_output()
        process = IOTypeHints(process.input_types, None if out is None else split_tagged(
            element_of_iterable(out)))
        hints = own.with_defaults(process)
        if hints.input_types:
            hints = IOTypeHints((positional_hints(hints, fn.process), {}), hints.output_types)
        return hints
    hints = callable_hints(fn)
    main = hints.first_input(fn)
    inputs = None if main is None else (positional_hints(hints, fn), {})
    if call == "filter":
        return IOTypeHints(inputs, None if main is None else ((main,), {}))
    out = hints.simple_output()
    if out is not None and call == "flat_map":
        out = element_of_iterable(out)
    return IOTypeHints(inputs, None if out is None else ((out,), {}))


def split_tagged(hint: Any) -> Tuple[tuple, dict]:
    """A DoFn's output hints from the type of what its `process` yields: the members of its
    union that are `TaggedOutput[Literal[tag], T]` give the tagged outputs' types (`{tag:
    T}`), the others the main output's."""
    members = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union,
                                                                  types.UnionType) else (hint,)
    main, tagged = [], {}
    for member in members:
        args = typing.get_args(member)
        if typing.get_origin(member) is TaggedOutput and len(args) == 2 \
                and typing.get_origin(args[0]) is typing.Literal:
            for tag in typing.get_args(args[0]):
                tagged[tag] = union_of([tagged[tag], args[1]]) if tag in tagged else args[1]
        else:
            main.append(member)
    return (union_of(main),), tagged


def positional_hints(hints: IOTypeHints, fn: Any) -> Tuple[Any, ...]:
    """The input hints of `fn` in the order of its parameters (the element's first), the
    keyword ones put in place of the parameters they name; None for one without a hint."""
    args, kwargs = hints.input_types or ((), {})
    if not kwargs:
        return tuple(args)
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return tuple(args)
    out = [args[i] if i < len(args) else kwargs.get(name) for i, name in enumerate(names)]
    while out and out[-1] is None:
        out.pop()
    return tuple(out)


def pardo_output(call: str, fn: Any, args: tuple, input_type: Any) -> Any:
    """A ParDo-like step's output element type for inputs of `input_type`, when what it
    runs declares none: inferred from its bytecode (Any where that shows nothing)."""
    if call == "filter":
        return input_type
    arg_types = [input_type] + [_arg_type(a) for a in args]
    if call == "dofn":
        return element_of_iterable(infer_return_type(fn.process, arg_types))
    out = infer_return_type(fn, arg_types)
    return element_of_iterable(out) if call == "flat_map" else out


def _arg_type(arg: Any) -> Any:
    from .pvalue import SideInput
    return typing.Any if isinstance(arg, SideInput) else type_of(arg)


def combine_fn_types(fn: Any) -> Tuple[Optional[Any], Optional[Any]]:
    """(the type of each value a CombineFn takes, the type of its output), each None where
    unknown. A function of an iterable must take one compatible with `Iterable[Any]`
    (Beam's check and message)."""
    if isinstance(fn, CallableCombineFn):
        hints = callable_hints(fn.fn)
        taken = hints.first_input(fn.fn)
        if taken is not None and not is_consistent_with(taken, typing.Iterable[typing.Any]):
            raise TypeCheckError("All functions for a Combine PTransform must accept a single "
                                 "argument compatible with: Iterable[Any]. Instead a function "
                                 f"with input type: {beam_str(taken)} was received.")
        value = None if taken is None else element_of_iterable(taken)
        return value, hints.simple_output()
    hints = declared_hints(fn)
    return hints.first_input(), hints.simple_output()


def per_key_hints(fn: Any) -> IOTypeHints:
    """A CombinePerKey's hints: (K, what its CombineFn takes) in, (K, what it gives) out."""
    value, out = combine_fn_types(fn)
    return IOTypeHints(((typing.Tuple[K, V if value is None else to_typing(value)],), {}),
                       ((typing.Tuple[K, typing.Any if out is None else out],), {}))
