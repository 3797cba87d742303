"""Beam's type hints: the hints (`typehints.Tuple[int, str]`, typing's own), what a function,
DoFn, CombineFn or PTransform declares it takes and returns (`with_input_types`,
`with_output_types`), and whether one type is consistent with another (what a pipeline's
construction-time check asks of a producer and its consumer)."""
from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from typing import Any, Callable, Dict, Optional, Tuple

from .errors import PipelineConstructionError

#: Beam's `typehints.TypeVariable`: typing's own TypeVar
TypeVariable = typing.TypeVar


class TypeCheckError(TypeError, PipelineConstructionError):
    """A pipeline's declared types do not fit: a consumer's input hint is not consistent with
    what its producer declares or is inferred to give (raised at construction, so a
    PipelineConstructionError too, or at run time with --runtime_type_check)."""


class _KV:
    """`KV[K, V]`: a key-value pair, the hint `Tuple[K, V]`."""

    def __getitem__(self, kv: Tuple[Any, Any]) -> Any:
        if not (isinstance(kv, tuple) and len(kv) == 2):
            raise TypeError(f"KV takes a key type and a value type, not {kv!r}")
        return typing.Tuple[kv[0], kv[1]]

    def __repr__(self) -> str:
        return "KV"


KV = _KV()


class IOTypeHints:
    """What a transform or function declares: `input_types` as (positional hints, keyword
    hints), `output_types` as ((hint,), {tag: hint} for the tagged outputs), each None where
    not declared (Beam's shape)."""

    def __init__(self, input_types: Optional[Tuple[tuple, dict]] = None,
                 output_types: Optional[Tuple[tuple, dict]] = None) -> None:
        self.input_types = input_types
        self.output_types = output_types

    def with_input_types(self, *hints: Any, **keyword_hints: Any) -> "IOTypeHints":
        return IOTypeHints((tuple(to_typing(h) for h in hints),
                            {k: to_typing(h) for k, h in keyword_hints.items()}),
                           self.output_types)

    def with_output_types(self, hint: Any, **tagged_hints: Any) -> "IOTypeHints":
        return IOTypeHints(self.input_types, ((to_typing(hint),),
                                              {k: to_typing(h) for k, h in tagged_hints.items()}))

    def with_defaults(self, other: Optional["IOTypeHints"]) -> "IOTypeHints":
        """These hints, each missing one taken from `other`."""
        if other is None:
            return self
        return IOTypeHints(self.input_types or other.input_types,
                           self.output_types or other.output_types)

    def simple_input(self) -> Any:
        """The main input's hint, or None."""
        if self.input_types and self.input_types[0]:
            return self.input_types[0][0]
        return None

    def simple_output(self) -> Any:
        """The output's hint, or None."""
        return self.output_types[0][0] if self.output_types and self.output_types[0] else None

    def tagged_output(self, tag: str) -> Any:
        """The hint of the tagged output `tag`, or None."""
        return self.output_types[1].get(tag) if self.output_types else None

    def simple_output_type(self, context: str = "") -> Any:
        """Beam's name for `simple_output`."""
        return self.simple_output()

    def first_input(self, fn: Any = None) -> Any:
        """The main input's hint: the first positional one, or the keyword one naming the
        first parameter of `fn` (the function or `process` method that takes the
        element); None where not declared."""
        if not self.input_types:
            return None
        args, kwargs = self.input_types
        if args:
            return args[0]
        first = first_parameter(fn) if fn is not None else None
        return kwargs.get(first) if first is not None else None

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, IOTypeHints) and self.input_types == other.input_types
                and self.output_types == other.output_types)

    def __repr__(self) -> str:
        return f"IOTypeHints(inputs={self.input_types}, outputs={self.output_types})"


HINTS_ATTR = "_pomset_type_hints"


def declared_hints(obj: Any) -> IOTypeHints:
    """What `obj` (a function, a DoFn, CombineFn or PTransform, or its class) declares by
    `with_input_types`/`with_output_types`, its own first, then its class's."""
    own = vars(obj).get(HINTS_ATTR) if hasattr(obj, "__dict__") else None
    hints = own if own is not None else IOTypeHints()
    for cls in (type(obj).__mro__ if not isinstance(obj, type) else obj.__mro__):
        hints = hints.with_defaults(vars(cls).get(HINTS_ATTR))
    return hints


def _declare(obj: Any, hints: IOTypeHints) -> None:
    setattr(obj, HINTS_ATTR, hints)


def first_parameter(fn: Any) -> Optional[str]:
    """The name of the parameter of `fn` that takes the element (a bound method's first
    after self), or None when it has none or cannot be inspected."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            return p.name
    return None


def callable_hints(fn: Any) -> IOTypeHints:
    """What a function declares: its `with_input_types`/`with_output_types`, else its
    annotations (the element's parameter and the return; an annotation of Any says
    nothing, so what it returns is inferred)."""
    declared = declared_hints(fn) if hasattr(fn, "__dict__") or isinstance(fn, type) \
        else IOTypeHints()
    try:
        annotations = {} if isinstance(fn, type) else typing.get_type_hints(fn)
    except Exception:
        annotations = {}
    annotations = {k: v for k, v in annotations.items() if v is not typing.Any}
    first = first_parameter(fn)
    inputs = None
    if first is not None and first in annotations:
        inputs = ((to_typing(annotations[first]),), {})
    outputs = (((to_typing(annotations["return"]),), {})
               if "return" in annotations else None)
    return declared.with_defaults(IOTypeHints(inputs, outputs))


def with_input_types(*hints: Any, **keyword_hints: Any) -> Callable[[Any], Any]:
    """Decorator: the function, DoFn, CombineFn or PTransform (class) takes elements of these
    types (and side inputs of the keyword ones)."""
    for hint in list(hints) + list(keyword_hints.values()):
        validate_hint(hint)

    def decorate(obj: Any) -> Any:
        _declare(obj, declared_hints(obj).with_input_types(*hints, **keyword_hints))
        return obj
    return decorate


def with_output_types(hint: Any, **tagged_hints: Any) -> Callable[[Any], Any]:
    """Decorator: the function, DoFn, CombineFn or PTransform (class) gives elements of this
    type (and, a DoFn, to its tagged outputs of the keyword ones)."""
    for one in [hint] + list(tagged_hints.values()):
        validate_hint(one)

    def decorate(obj: Any) -> Any:
        _declare(obj, declared_hints(obj).with_output_types(hint, **tagged_hints))
        return obj
    return decorate


def validate_hint(hint: Any) -> None:
    """A TypeError unless `hint` is a type, a typing hint or a type alias."""
    if hint is None or isinstance(hint, (type, typing.TypeVar)) or _origin(hint) is not None \
            or hint is typing.Any or isinstance(hint, str) or _is_alias(hint):
        return
    raise TypeError(f"{hint!r} is not a type hint")


def _is_alias(hint: Any) -> bool:
    return type(hint).__name__ == "TypeAliasType"


_TYPING_OF = {tuple: typing.Tuple, list: typing.List, dict: typing.Dict, set: typing.Set,
              frozenset: typing.FrozenSet, type: typing.Type,
              collections.abc.Iterable: typing.Iterable,
              collections.abc.Iterator: typing.Iterator,
              collections.abc.Generator: typing.Generator,
              collections.abc.Sequence: typing.Sequence,
              collections.abc.Collection: typing.Collection,
              collections.abc.Mapping: typing.Mapping,
              collections.abc.MutableMapping: typing.MutableMapping,
              collections.abc.Set: typing.AbstractSet}


def rebuild(hint: Any, args: Tuple[Any, ...]) -> Any:
    """`hint` (tuple, list, a Union, an abc, a generic class) with parameters `args`, in
    typing's spelling; a hint of another form is kept as it is."""
    origin = _origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[args]
    generic = _TYPING_OF.get(origin)
    if generic is None:
        try:
            return origin[args] if isinstance(origin, type) else hint
        except TypeError:
            return hint
    if generic is typing.Tuple:
        return typing.Tuple[args] if args else typing.Tuple[()]
    return generic[args if len(args) > 1 else args[0]]


def to_typing(hint: Any) -> Any:
    """`hint` in typing's spelling, as Beam converts a hint to its own: `tuple[int, str]`
    is `typing.Tuple[int, str]`, `int | None` is `Optional[int]`, `collections.abc` generics
    typing's; a type alias's value."""
    while _is_alias(hint):
        hint = hint.__value__
    origin = _origin(hint)
    args = typing.get_args(hint)
    if not args or not (origin in _TYPING_OF or origin is typing.Union
                        or origin is types.UnionType):
        return hint
    return rebuild(hint, tuple(a if a is Ellipsis else to_typing(a) for a in args))


def match_type_variables(hint: Any, actual: Any) -> Dict[Any, Any]:
    """The TypeVars of `hint` bound to what they stand for in `actual` (a
    `Tuple[K, V]` matched with `Tuple[str, int]` binds K to str and V to int; matched with
    a Union, each to the Union of what it stands for in each member)."""
    if isinstance(hint, typing.TypeVar):
        return {} if actual is None or actual is typing.Any else {hint: actual}
    if _origin(actual) is typing.Union:
        found: Dict[Any, list] = {}
        for member in typing.get_args(actual):
            for var, bound in match_type_variables(hint, member).items():
                found.setdefault(var, []).append(bound)
        return {var: union_of(bounds) for var, bounds in found.items()}
    h_args, a_args = typing.get_args(hint), typing.get_args(actual)
    if not h_args or not a_args:
        return {}
    h_origin, a_origin = _origin(hint), _origin(actual)
    if h_origin is tuple:
        if a_origin is not tuple:
            return {}
        if Ellipsis in h_args:
            h_args, a_args = h_args[:1], (element_of_iterable(actual),)
        elif Ellipsis in a_args:
            a_args = a_args[:1] * len(h_args)
        elif len(h_args) != len(a_args):
            return {}
    elif len(h_args) == 1:
        a_args = (element_of_iterable(actual),)
    elif len(h_args) != len(a_args) or a_origin is tuple:
        return {}
    bindings: Dict[Any, Any] = {}
    for h, a in zip(h_args, a_args):
        for var, bound in match_type_variables(h, a).items():
            bindings.setdefault(var, bound)
    return bindings


def bind_type_variables(hint: Any, bindings: Dict[Any, Any], default: Any = None) -> Any:
    """`hint` with its TypeVars replaced by their `bindings`; an unbound one by `default`
    where given, else left."""
    if isinstance(hint, typing.TypeVar):
        return bindings.get(hint, hint if default is None else default)
    args = typing.get_args(hint)
    if not args or _origin(hint) is None:
        return hint
    return rebuild(hint, tuple(a if a is Ellipsis else bind_type_variables(a, bindings, default)
                               for a in args))


def beam_str(hint: Any) -> str:
    """A hint as Beam's messages write it: `<class 'int'>`, `Tuple[<class 'str'>,
    TypeVariable[V]]`, `Iterable[Any]`."""
    if hint is None or hint is type(None):
        return "None"
    if hint is typing.Any:
        return "Any"
    if isinstance(hint, typing.TypeVar):
        return f"TypeVariable[{hint.__name__}]"
    origin, args = _origin(hint), typing.get_args(hint)
    if origin is None or not args:
        return str(hint)
    if origin is typing.Union:
        return f"Union[{', '.join(beam_str(a) for a in args)}]"
    name = {tuple: "Tuple", list: "List", dict: "Dict", set: "Set", frozenset: "FrozenSet"
            }.get(origin, getattr(origin, "__name__", str(origin)))
    return f"{name}[{', '.join('...' if a is Ellipsis else beam_str(a) for a in args)}]"


def normalize(hint: Any) -> Any:
    """The hint with type aliases resolved and None as NoneType."""
    while _is_alias(hint):
        hint = hint.__value__
    if hint is None:
        return type(None)
    return hint


def _origin(hint: Any) -> Any:
    return typing.get_origin(hint)


_ABSTRACT = {collections.abc.Iterable, collections.abc.Iterator, collections.abc.Generator,
             collections.abc.Sequence, collections.abc.Collection, collections.abc.Mapping}


def is_consistent_with(sub: Any, base: Any) -> bool:
    """Whether a value of type `sub` may be given where `base` is expected (Any fits both
    ways; a Union fits when each member does; containers by their parameters)."""
    sub, base = normalize(sub), normalize(base)
    if sub is base or sub == base or base is typing.Any or sub is typing.Any:
        return True
    if isinstance(base, typing.TypeVar) or isinstance(sub, typing.TypeVar):
        return True
    from .row_type import RowTypeConstraint
    if isinstance(sub, RowTypeConstraint):
        return sub.consistent_with(base)
    if _origin(sub) is typing.Union:
        return all(is_consistent_with(s, base) for s in typing.get_args(sub))
    if _origin(base) is typing.Union:
        return any(is_consistent_with(sub, b) for b in typing.get_args(base))
    sub_origin, base_origin = _origin(sub) or sub, _origin(base) or base
    if not (isinstance(sub_origin, type) and isinstance(base_origin, type)):
        return False
    if not issubclass(sub_origin, base_origin):
        return False
    sub_args, base_args = typing.get_args(sub), typing.get_args(base)
    if not base_args or not sub_args:
        return True
    if base_origin is tuple:
        if len(base_args) == 2 and base_args[1] is Ellipsis:
            items = sub_args[:1] if len(sub_args) == 2 and sub_args[1] is Ellipsis else sub_args
            return all(is_consistent_with(s, base_args[0]) for s in items)
        if len(sub_args) == 2 and sub_args[1] is Ellipsis:
            return False
        return len(sub_args) == len(base_args) and all(
            is_consistent_with(s, b) for s, b in zip(sub_args, base_args))
    if sub_origin is tuple and len(base_args) == 1:   # a tuple as an iterable of its items
        return all(is_consistent_with(s, base_args[0]) for s in sub_args if s is not Ellipsis)
    if base_origin in _ABSTRACT and len(base_args) >= 1 and sub_origin in (dict,) + tuple(
            c for c in _ABSTRACT if issubclass(c, collections.abc.Mapping)):
        return is_consistent_with(sub_args[0], base_args[0])
    return len(sub_args) == len(base_args) and all(
        is_consistent_with(s, b) for s, b in zip(sub_args, base_args))


def type_of(value: Any) -> Any:
    """The hint that best describes one value: tuples by their items' types, lists, sets and
    dicts by the Union of theirs."""
    if isinstance(value, tuple):
        return typing.Tuple[tuple(type_of(v) for v in value)] if value else tuple
    for cls, hint in ((list, typing.List), (set, typing.Set), (frozenset, typing.FrozenSet)):
        if type(value) is cls:
            return hint[union_of(type_of(v) for v in value)] if value else cls
    if type(value) is dict:
        if not value:
            return dict
        return typing.Dict[union_of(type_of(k) for k in value),
                           union_of(type_of(v) for v in value.values())]
    return type(value)


def union_of(hints: typing.Iterable[Any]) -> Any:
    """The Union of some hints (Any for none or where one is Any, the hint itself for
    one)."""
    unique: list = []
    for h in hints:
        if h not in unique:
            unique.append(h)
    if not unique or typing.Any in unique:
        return typing.Any
    return unique[0] if len(unique) == 1 else typing.Union[tuple(unique)]


def element_of_iterable(hint: Any) -> Any:
    """The element type of an iterable hint (what a FlatMap's function returns), Any when
    unknown."""
    hint = normalize(hint)
    origin, args = _origin(hint), typing.get_args(hint)
    if origin is None or not args:
        return typing.Any
    if origin is tuple:
        return union_of(a for a in args if a is not Ellipsis)
    if isinstance(origin, type) and issubclass(origin, collections.abc.Iterable):
        return args[0]
    return typing.Any


def return_hint(fn: Any) -> Any:
    """A callable's return annotation, or None when it has none."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        return None
    return hints.get("return")


def hint_name(hint: Any) -> str:
    """A hint as messages name it."""
    hint = normalize(hint)
    if isinstance(hint, type) and not _origin(hint):
        return hint.__name__
    return repr(hint).replace("typing.", "")


HINT_NAMES: Dict[str, Any] = {
    "TypeVariable": TypeVariable,
    "Any": typing.Any, "Union": typing.Union, "Optional": typing.Optional,
    "Tuple": typing.Tuple, "List": typing.List, "Dict": typing.Dict, "Set": typing.Set,
    "FrozenSet": typing.FrozenSet, "Iterable": typing.Iterable, "Iterator": typing.Iterator,
    "Generator": typing.Generator, "Sequence": typing.Sequence, "Collection": typing.Collection,
    "Mapping": typing.Mapping, "KV": KV,
}
