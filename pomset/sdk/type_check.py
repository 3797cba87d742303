"""Beam's construction-time type check: as each transform is applied, its declared input
hint is checked against what its input's producer gives or is inferred to give (a
`TypeCheckError` at construction, worded as Beam's), and each PCollection's
`element_type` is what its producer declares, else what it infers from its input's.

Nothing is inferred until something asks: a PCollection's element type is worked out (and
kept) when read, and a transform's input is looked at only when it declares a hint, so a
pipeline that declares no hints costs nothing more to build, and nothing per element."""
from __future__ import annotations

import typing
from typing import Any, List, Optional

from .type_hints import (TypeCheckError, beam_str, bind_type_variables, is_consistent_with,
                         match_type_variables, union_of)

#: what an element type not yet worked out holds
UNSET = object()


def checking(pipeline: Any) -> bool:
    """Whether `pipeline` checks types as it is built (`--pipeline_type_check`, the default;
    `--no_pipeline_type_check` turns it off)."""
    return bool(getattr(pipeline.options, "pipeline_type_check", True))


def input_type(pcolls: List[Any]) -> Any:
    """The element type of what a transform is applied to: its one input's, or the Union
    of its inputs' (None where unknown)."""
    types = [p.element_type for p in pcolls]
    if not types:
        return None
    if len(types) == 1:
        return types[0]
    return union_of(typing.Any if t is None else t for t in types)


def check_input(transform: Any, pcolls: List[Any]) -> None:
    """Raise TypeCheckError when `transform` declares an input hint its one input's element
    type is not consistent with."""
    if len(pcolls) != 1:
        return
    transform.type_check_inputs(pcolls[0])


def generic_violation(label: str, hint: Any, actual: Any, pcoll: Any = None) -> TypeCheckError:
    """Beam's message for a composite's input that does not fit its hint; for a grouping's
    input that is not of pairs (`pcoll`), what it needs and where the input comes from."""
    why = ""
    if pcoll is not None:
        why = (f" ({label} needs (key, value) pairs, but {pcoll.label} holds elements of type "
               f"{beam_str(actual)}: map them to (key, value) first)")
    return TypeCheckError(f"Input type hint violation at {label}: expected {beam_str(hint)}, "
                          f"got {beam_str(actual)}{why}")


def element_violation(label: str, hint: Any, pcoll: Any) -> TypeCheckError:
    """Beam's message for a ParDo (or a combine) whose input does not fit its hint."""
    producer = pcoll.producer.label if pcoll.producer is not None else "?"
    depth = label.count("/")
    producer = "/".join(producer.split("/")[:depth + 1])
    return TypeCheckError(
        f"The transform '{label}' requires PCollections of type '{beam_str(hint)}' but was "
        f"applied to a PCollection of type '{beam_str(pcoll.element_type)}' (produced by the "
        f"transform '{producer}'). ")


def fits(actual: Any, hint: Any) -> bool:
    """Whether elements of type `actual` (None: unknown) may go where `hint` is expected."""
    return actual is None or hint is None or is_consistent_with(actual, hint)


def result_type(transform: Any, in_type: Any) -> Any:
    """The element type of what `transform` gives for input elements of `in_type`: its
    declared (or its function's) output hint, its TypeVars bound by matching its input hint
    with `in_type`, else what it infers; TypeVars left unbound are Any."""
    hints = transform.get_type_hints()
    declared = hints.simple_output()
    if declared is not None:
        bindings = match_type_variables(hints.first_input(), in_type) if in_type else {}
        out = bind_type_variables(declared, bindings)
    else:
        out = transform.infer_output_type(typing.Any if in_type is None else in_type)
    return bind_type_variables(out, {}, typing.Any)


def infer(pcoll: Any) -> Optional[Any]:
    """`pcoll`'s element type, worked out from its producer (and the producers before it,
    each kept once found); None when its pipeline was not checking types as it was made."""
    pending = [pcoll]
    while pending:
        top = pending[-1]
        if top.known_type is not UNSET:   # reached twice, by two paths
            pending.pop()
            continue
        node = top.producer
        if node is None or not getattr(node, "type_checked", False):
            top.known_type = None
            pending.pop()
            continue
        unknown = [p for p in node.inputs if p.known_type is UNSET]
        if unknown:
            pending.extend(unknown)
            continue
        pending.pop()
        top.known_type = _own_type(top, node)
    return pcoll.known_type


def _own_type(pcoll: Any, node: Any) -> Any:
    """The element type of one of `node`'s outputs, its inputs' already known."""
    in_type = input_type(node.inputs)
    if pcoll.tag is not None:
        return node.transform.infer_tagged_output_type(
            pcoll.tag, typing.Any if in_type is None else in_type, pcoll.pipeline.options)
    out = result_type(node.transform, in_type)
    for transform, inputs in pcoll.type_fallbacks:   # the innermost composite's first
        if out is not None and out is not typing.Any:
            break
        out = result_type(transform, input_type(inputs))
    return out


def note_composite(transform: Any, inputs: List[Any], result: Any) -> None:
    """After a composite's expansion: what it gives must fit the output type it declares
    (a TypeCheckError, worded as Beam's, if not); where what its expansion gives has no type
    of its own, its output hint is the type (worked out when asked)."""
    from .pvalue import PCollection
    if not (isinstance(result, PCollection) and result.tag is None):
        return
    declared = transform.type_hints.simple_output()
    if declared is not None:
        actual = result.element_type
        if actual is not None and not is_consistent_with(actual, declared):
            raise TypeCheckError(f"Output type hint violation at "
                                 f"{transform.label or transform.default_label()}: expected "
                                 f"{beam_str(declared)}, got {beam_str(actual)}")
    if transform.get_type_hints().simple_output() is None:
        return
    if result.known_type is UNSET:
        result.type_fallbacks.append((transform, inputs))
    elif result.known_type is typing.Any and result.producer is not None \
            and result.producer.type_checked:
        result.known_type = result_type(transform, input_type(inputs))


def check_strictness(pipeline: Any, transform: Any, full_label: str) -> None:
    """With `--type_check_strictness=ALL_REQUIRED`, a transform must declare its output
    type (Beam's check, and message)."""
    if getattr(pipeline.options, "type_check_strictness", None) != "ALL_REQUIRED":
        return
    if transform.get_type_hints().output_types is None:
        from .core import ParDo
        name = "ParDo" if isinstance(transform, ParDo) else type(transform).__name__
        raise TypeCheckError("Pipeline type checking is enabled, however no output type-hint "
                             f"was found for the PTransform {name}({full_label})")


def runtime_checked(pipeline: Any, transform: Any, full_label: str) -> Any:
    """With `--runtime_type_check` (or Beam's `--performance_runtime_type_check`), a
    ParDo-like primitive whose function checks the types it declares as it runs (a
    CombinePerKey whose CombineFn checks the values it adds); else the transform itself."""
    options = pipeline.options
    if not (getattr(options, "runtime_type_check", False)
            or getattr(options, "performance_runtime_type_check", False)):
        return transform
    from .core import CombinePerKey, ParDo
    from .runtime_type_check import with_combine_checks, with_runtime_checks
    if isinstance(transform, ParDo):
        return with_runtime_checks(transform, full_label)
    if isinstance(transform, CombinePerKey):
        return with_combine_checks(transform, full_label)
    return transform
