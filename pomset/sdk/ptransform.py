"""PTransform: the unit of pipeline construction; primitives become graph nodes."""
from __future__ import annotations

import copy
import functools
import inspect
import typing
from typing import Any, Callable, Dict, List, Optional

from .type_hints import (HINTS_ATTR, IOTypeHints, bind_type_variables, declared_hints,
                         match_type_variables)


class PTransform:
    """A transform from PCollections to PCollections. Composites implement `expand`;
    apply with `pcoll | t`, `pcoll.apply(t)`, or label it with `"Name" >> t`. A subclass
    need not call `super().__init__()`: the label then defaults to `default_label()`."""

    label: Optional[str] = None

    #: its label, where given; a class default, for a subclass that never calls __init__
    label: Optional[str] = None

    def __init__(self, label: Optional[str] = None) -> None:
        self.label = label

    def default_label(self) -> str:
        return type(self).__name__

    def expand(self, pvalue: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement expand(pvalue)")

    @property
    def type_hints(self) -> IOTypeHints:
        """The input and output types this transform declares (`with_input_types`,
        `with_output_types`, or its class's decorators)."""
        return declared_hints(self)

    def default_type_hints(self) -> IOTypeHints:
        """The input and output types the transform has when none are declared (a Map's
        are its function's)."""
        return IOTypeHints()

    def get_type_hints(self) -> IOTypeHints:
        """The types it declares, each one not declared its default (Beam's name)."""
        return self.type_hints.with_defaults(self.default_type_hints())

    def infer_output_type(self, input_type: Any) -> Any:
        """The element type of its output for input elements of `input_type`: its output
        hint with its TypeVars bound by its input hint's match with `input_type`; Any where
        it has none."""
        hints = self.get_type_hints()
        out = hints.simple_output()
        if out is None:
            return typing.Any
        return bind_type_variables(out, match_type_variables(hints.first_input(), input_type),
                                   typing.Any)

    def type_check_inputs(self, pvalue: Any) -> None:
        """Raise TypeCheckError when its input's element type does not fit its input hint
        (Beam's check, and message, for a transform that takes a PCollection)."""
        hint = self.get_type_hints().first_input()
        if hint is None:
            return
        from .type_check import fits, generic_violation
        if not fits(pvalue.element_type, hint):
            raise generic_violation(self.label or self.default_label(), hint,
                                    pvalue.element_type)

    def with_input_types(self, *hints: Any, **keyword_hints: Any) -> "PTransform":
        """Declare the input's type (and the side inputs', by keyword): the pipeline checks
        it against what the input's producer gives when the transform is applied. Returns
        self, as Beam's does."""
        setattr(self, HINTS_ATTR, self.type_hints.with_input_types(*hints, **keyword_hints))
        return self

    def with_output_types(self, hint: Any) -> "PTransform":
        """Declare the output's type: the element type of what the transform gives, checked
        against what its consumers take. Returns self, as Beam's does."""
        setattr(self, HINTS_ATTR, self.type_hints.with_output_types(hint))
        return self

    def __ror__(self, left: Any) -> Any:
        from .pipeline import Pipeline, pipeline_of
        from .pvalue import PBegin, PCollection, PValue
        if isinstance(left, Pipeline):
            return left.apply(self, PBegin(left))
        if isinstance(left, (PValue, dict)):
            return pipeline_of(left).apply(self, left)
        items = left if isinstance(left, (list, tuple)) else list(left)
        if items and all(isinstance(p, PCollection) for p in items):
            return pipeline_of(items).apply(self, items)
        from .eager import apply_eagerly   # plain values: Beam's eager application
        return apply_eagerly(self, items)

    def __rrshift__(self, label: str) -> "PTransform":
        if not isinstance(label, str):
            return NotImplemented
        labeled = copy.copy(self)
        labeled.label = label
        return labeled


class Primitive(PTransform):
    """A transform a runner executes directly. `outputs(node)` builds its output PCollections
    (tag None is the main output) after `validate(node)` checked its inputs."""

    #: the output tag its dead letters go to, where it sends them one (`with_exception_handling`)
    dead_letter_tag: Optional[str] = None

    def validate(self, node: Any) -> None:
        pass

    def outputs(self, node: Any) -> Dict[Optional[str], Any]:
        raise NotImplementedError

    def result(self, node: Any) -> Any:
        return node.outputs[None]

    def side_inputs(self) -> List[Any]:
        return []

    def plan_kind(self) -> Optional[str]:
        """The execution-plan node this primitive lowers to (`sdk.plan_kinds`); None for one
        no runner executes."""
        return None


class _PTransformFn(PTransform):
    """The transform `@ptransform_fn` makes of a function: its expansion calls the function
    with the input and the arguments it was made with."""

    def __init__(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
        super().__init__()
        self._fn, self._args, self._kwargs = fn, args, kwargs

    def default_label(self) -> str:
        """The function's name, with its first argument where it has one, shortened as
        Beam's labels are: `MyTransform(suffix)`, `F(looooooooo...oooong)`."""
        if not self._args:
            return self._fn.__name__
        arg = self._args[0]
        text = getattr(arg, "__name__", None) or str(arg)
        if len(text) > 20:
            text = f"{text[:10]}...{text[-6:]}"
        return f"{self._fn.__name__}({text})"

    def expand(self, pvalue: Any) -> Any:
        args = self._args
        if "type_hints" in inspect.signature(self._fn).parameters:
            args = (self.get_type_hints(),) + args   # Beam's: after the input, before the rest
        return self._fn(pvalue, *args, **self._kwargs)


def ptransform_fn(fn: Callable[..., Any]) -> Callable[..., PTransform]:
    """Decorator: a function `fn(pcoll, *args, **kwargs)` becomes a transform constructor,
    so `pcoll | F(*args, **kwargs)` (or `'label' >> F(...)`) applies it as a composite named
    for the function. A `type_hints` parameter receives the transform's declared hints."""
    @functools.wraps(fn)
    def make(*args: Any, **kwargs: Any) -> PTransform:
        return _PTransformFn(fn, args, kwargs)
    return make
