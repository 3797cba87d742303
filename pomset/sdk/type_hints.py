"""Beam's type hints: the hints (`typehints.Tuple[int, str]`, typing's own), what a function,
DoFn, CombineFn or PTransform declares it takes and returns (`with_input_types`,
`with_output_types`), and whether one type is consistent with another (what a pipeline's
construction-time check asks of a producer and its consumer)."""
from __future__ import annotations

import collections.abc
import typing
from typing import Any, Callable, Dict, Optional, Tuple



class TypeCheckError(TypeError):
    """A pipeline's declared types do not fit: a consumer's input hint is not consistent with
    what its producer declares or is inferred to give (raised at construction, or at run time
    with --runtime_type_check)."""


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
    hints), `output_types` as ((hint,), {}), each None where not declared (Beam's shape)."""

    def __init__(self, input_types: Optional[Tuple[tuple, dict]] = None,
                 output_types: Optional[Tuple[tuple, dict]] = None) -> None:
        self.input_types = input_types
        self.output_types = output_types

    def with_input_types(self, *hints: Any, **keyword_hints: Any) -> "IOTypeHints":
        return IOTypeHints((hints, keyword_hints), self.output_types)

    def with_output_types(self, hint: Any) -> "IOTypeHints":
        return IOTypeHints(self.input_types, ((hint,), {}))

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
        return self.output_types[0][0] if self.output_types else None

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


def with_input_types(*hints: Any, **keyword_hints: Any) -> Callable[[Any], Any]:
    """Decorator: the function, DoFn, CombineFn or PTransform (class) takes elements of these
    types (and side inputs of the keyword ones)."""
    for hint in list(hints) + list(keyword_hints.values()):
        validate_hint(hint)

    def decorate(obj: Any) -> Any:
        _declare(obj, declared_hints(obj).with_input_types(*hints, **keyword_hints))
        return obj
    return decorate


def with_output_types(hint: Any) -> Callable[[Any], Any]:
    """Decorator: the function, DoFn, CombineFn or PTransform (class) gives elements of this
    type."""
    validate_hint(hint)

    def decorate(obj: Any) -> Any:
        _declare(obj, declared_hints(obj).with_output_types(hint))
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
    """The Union of some hints (Any for none, the hint itself for one)."""
    unique: list = []
    for h in hints:
        if h not in unique:
            unique.append(h)
    if not unique:
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
    "Any": typing.Any, "Union": typing.Union, "Optional": typing.Optional,
    "Tuple": typing.Tuple, "List": typing.List, "Dict": typing.Dict, "Set": typing.Set,
    "FrozenSet": typing.FrozenSet, "Iterable": typing.Iterable, "Iterator": typing.Iterator,
    "Generator": typing.Generator, "Sequence": typing.Sequence, "Collection": typing.Collection,
    "Mapping": typing.Mapping, "KV": KV,
}
