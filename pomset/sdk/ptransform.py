"""PTransform: the unit of pipeline construction; primitives become graph nodes."""
from __future__ import annotations

import copy
import functools
import inspect
import typing
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from .type_hints import (HINTS_ATTR, IOTypeHints, bind_type_variables, declared_hints,
                         match_type_variables)


class PTransform:
    """A transform from PCollections to PCollections. Composites implement `expand`;
    apply with `pcoll | t`, `pcoll.apply(t)`, or label it with `"Name" >> t`. A subclass
    need not call `super().__init__()`: the label then defaults to `default_label()`."""

    #: its label, where given; a class default, for a subclass that never calls __init__
    label: Optional[str] = None
    #: the pipeline it applies to when its input holds no PCollection (Beam's attribute:
    #: `() | Flatten(pipeline=p)`)
    pipeline: Any = None
    #: where it was labelled with `"Name" >> t`, the transform it is a labelled copy of
    labeled_from: Optional["PTransform"] = None

    def __init__(self, label: Optional[str] = None) -> None:
        self.label = label

    def __setattr__(self, name: str, value: Any) -> None:
        # a labelled copy's annotations are its original's too (Beam's `"Name" >> t` wraps t)
        if name == "annotations" and self.labeled_from is not None:
            setattr(self.labeled_from, name, value)
        object.__setattr__(self, name, value)

    def annotations(self) -> Dict[str, Any]:
        """Beam's annotations of the transform (a user may assign a function giving more):
        pomset records none of its own."""
        return {}

    def __str__(self) -> str:
        return f"<{self._str_internal()}>"

    def __repr__(self) -> str:
        return f"<{self._str_internal()} at {hex(id(self))}>"

    def _str_internal(self) -> str:
        """Beam's description: the class, the label, and the inputs and side inputs where
        set on the transform."""
        text = f"{type(self).__name__}(PTransform) label=[{self.label or self.default_label()}]"
        inputs = vars(self).get("inputs")
        side_inputs = self.side_inputs
        side_inputs = side_inputs() if callable(side_inputs) else side_inputs
        if inputs:
            text += f" inputs={inputs}"
        if side_inputs:
            text += f" side_inputs={side_inputs}"
        return text

    def side_inputs(self) -> Any:
        """The side inputs it reads (a primitive's views; none for a composite)."""
        return []

    def default_label(self) -> str:
        return type(self).__name__

    def default_label_for(self, options: Any) -> str:
        """Its default label in a pipeline of `options` (where `--update_compatibility_version`
        may ask for an earlier release's): `default_label()` unless it labels itself so."""
        return self.default_label()

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

    def with_output_types(self, hint: Any, **tagged_hints: Any) -> "PTransform":
        """Declare the output's type: the element type of what the transform gives, checked
        against what its consumers take (and, by keyword, its tagged outputs' types). Returns
        self, as Beam's does."""
        setattr(self, HINTS_ATTR, self.type_hints.with_output_types(hint, **tagged_hints))
        return self

    def infer_tagged_output_type(self, tag: str, input_type: Any, options: Any = None) -> Any:
        """The element type of its tagged output `tag` for input elements of `input_type`
        (in a pipeline of `options`): what it declares for the tag, else Any."""
        hint = self.get_type_hints().tagged_output(tag)
        return typing.Any if hint is None else hint

    def with_resource_hints(self, **hints: Any) -> "PTransform":
        """Beam's resource hints (`min_ram='4GB'`, `accelerator=...`, a registered
        `ResourceHint`'s name), added to those set before; recorded, for pomset's runners
        place no work by resources (`sdk/resource_hints.py`). Returns self, as Beam's does."""
        from .resource_hints import parse_resource_hints
        self._resource_hints = {**self.get_resource_hints(), **parse_resource_hints(hints)}
        return self

    def get_resource_hints(self) -> Dict[str, bytes]:
        """The resource hints set on this transform, {urn: value as bytes}."""
        return dict(getattr(self, "_resource_hints", {}))

    def _extract_input_pvalues(self, pvalueish: Any) -> Tuple[Any, List[Any]]:
        """Beam's hook: the input as the transform takes it, and its parts, each a PValue or
        plain values (which a pipeline gets with a Create). By default the parts are what the
        tuples and dicts (and lists of PCollections) in the input hold; a list of anything
        else is one part, its values."""
        return pvalueish, list(input_parts(pvalueish))

    def input_pvalues(self, pvalueish: Any) -> Tuple[Any, List[Any]]:
        """The input as the transform takes it, and its parts: what the transform's
        `_extract_input_pvalues` (Beam's name, which a subclass may override) says."""
        return self._extract_input_pvalues(pvalueish)

    def __ror__(self, left: Any) -> Any:
        from .pipeline import Pipeline
        from .pvalue import PBegin, PValue
        if isinstance(left, Pipeline):
            return left.apply(self, PBegin(left))
        if isinstance(left, PValue):
            return left.pipeline.apply(self, left)
        from .eager import apply_to_pvalueish   # tuples, dicts, plain values (eager)
        return apply_to_pvalueish(self, left)

    def __or__(self, right: Any) -> Any:
        """`t1 | t2`: the transform that applies t1, then t2 to its output (Beam's)."""
        if not isinstance(right, PTransform):
            return NotImplemented
        return ChainedPTransform(self, right)

    def __rrshift__(self, label: str) -> "PTransform":
        if not isinstance(label, str):
            return NotImplemented
        labeled = copy.copy(self)
        labeled.label = label
        labeled.labeled_from = self
        return labeled


def label_from_callable(fn: Any) -> str:
    """The name a transform of `fn` is labelled with (Beam's `label_from_callable`): its
    `default_label()` where it has one (a DoFn, a CombineFn), else its `__name__` (`sum`,
    `<lambda>`: without its file and line, so a step's label, a checkpoint's key, does not
    change when the code above it moves), else its class's name."""
    if isinstance(fn, type):   # a class (a CombineFn's): its name
        return fn.__name__
    if hasattr(fn, "default_label"):
        return fn.default_label()
    return getattr(fn, "__name__", type(fn).__name__)


def input_parts(pvalueish: Any) -> Iterator[Any]:
    """The parts of a transform's input (`PTransform._extract_input_pvalues`): its PValues,
    and the plain values in it, found through tuples (named ones too), dicts and lists of
    PValues; anything else, a list of values among them, is one part."""
    from .pvalue import DoOutputsTuple, PValue
    if isinstance(pvalueish, dict):
        pvalueish = tuple(pvalueish.values())
    if isinstance(pvalueish, DoOutputsTuple):
        pvalueish = tuple(pvalueish)
    if isinstance(pvalueish, list) and pvalueish and all(
            isinstance(p, PValue) for p in pvalueish):
        pvalueish = tuple(pvalueish)
    if isinstance(pvalueish, tuple):
        for part in pvalueish:
            yield from input_parts(part)
    else:
        yield pvalueish


class ChainedPTransform(PTransform):
    """Transforms applied one after another (`t1 | t2 | t3`), as one composite labelled
    with theirs joined by `|`."""

    def __init__(self, *parts: PTransform) -> None:
        super().__init__()
        self.parts: Tuple[PTransform, ...] = ()
        for part in parts:   # a chain in a chain, unlabelled, is its parts
            nested = type(part) is ChainedPTransform and not part.label
            self.parts += part.parts if nested else (part,)

    def default_label(self) -> str:
        return "|".join(p.label or p.default_label() for p in self.parts)

    def __or__(self, right: Any) -> Any:
        if not isinstance(right, PTransform):
            return NotImplemented
        return ChainedPTransform(self, right)

    def expand(self, pvalue: Any) -> Any:
        for part in self.parts:
            pvalue = pvalue | part
        return pvalue


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
        return self._label(shorten=True)

    def default_label_for(self, options: Any) -> str:
        """Before Beam 2.68 (`--update_compatibility_version`), its argument in full."""
        from .options import compatible_before
        return self._label(shorten=not compatible_before(options, "2.68.0"))

    def _label(self, shorten: bool) -> str:
        if not self._args:
            return self._fn.__name__
        arg = self._args[0]
        text = getattr(arg, "__name__", None) or str(arg)
        if shorten and len(text) > 20:
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
