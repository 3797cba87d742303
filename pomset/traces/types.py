"""Data-trace types (the paper's Section 3): a tag alphabet, a value type per tag and a
symmetric dependence relation over tags; `U(K, V)` and `O(K, V)` are the key-value forms of
Section 4, whose tags are the keys plus the marker tag `#`.

Two sequences of items are the same trace when one becomes the other by swapping adjacent
items whose tags are independent; `equivalence.normal_form` decides it.
"""
from __future__ import annotations

from typing import Any, Dict, FrozenSet, Iterable, Optional, Tuple

MARKER = "#"


class _UnitType:
    """The unit type `Ut`: the key type of a stream whose items have no key. Items of such an
    edge are bare values (not pairs); templates see their key as None."""

    _instance: Optional["_UnitType"] = None

    def __new__(cls) -> "_UnitType":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "Unit"

    def __reduce__(self) -> Any:
        return (_UnitType, ())


Unit = _UnitType()


def type_name(tp: Any) -> str:
    if tp is Any:
        return "Any"
    return getattr(tp, "__name__", None) or repr(tp)


def value_fits(value: Any, tp: Any) -> bool:
    """Whether a value belongs to a declared value type (`Any` and non-class types admit
    everything; the runtime checks what it can)."""
    if tp is Any or tp is Unit or not isinstance(tp, type):
        return True
    return isinstance(value, tp)


def type_fits(got: Any, needed: Any) -> bool:
    """Whether values of type `got` can flow where `needed` is expected."""
    if needed is Any or got is needed:
        return True
    if got is Any:
        return True   # unknown statically; the runtime checks each value
    if isinstance(got, type) and isinstance(needed, type):
        return issubclass(got, needed)
    return got == needed


class TraceType:
    """A data-trace type: `tags` maps each tag to its value type; `depends` is the set of
    dependent tag pairs (made symmetric). Items of an edge of a general type are
    `(tag, value)` pairs; markers are not items but the watermark's (see `Marker`)."""

    def __init__(self, tags: Dict[Any, Any], depends: Iterable[Tuple[Any, Any]] = ()) -> None:
        self.tags = dict(tags)
        pairs = set()
        for a, b in depends:
            for t in (a, b):
                if t not in self.tags:
                    raise ValueError(f"dependence ({a!r}, {b!r}) names tag {t!r}, which is not "
                                     f"in the alphabet {sorted(map(repr, self.tags))}")
            pairs.add((a, b))
            pairs.add((b, a))
        self.depends_pairs: FrozenSet[Tuple[Any, Any]] = frozenset(pairs)

    def depends(self, a: Any, b: Any) -> bool:
        """Whether items tagged `a` and `b` keep their relative order."""
        return (a, b) in self.depends_pairs

    def tag_of(self, item: Any) -> Any:
        return item[0]

    def fits(self, needed: "TraceType") -> bool:
        """Whether a trace of this type may flow where `needed` is expected: the same tags
        with fitting values, and every order `needed` relies on is kept here."""
        if isinstance(needed, KeyValueType) or isinstance(self, KeyValueType):
            return False
        if set(self.tags) != set(needed.tags):
            return False
        return (all(type_fits(self.tags[t], needed.tags[t]) for t in self.tags)
                and needed.depends_pairs <= self.depends_pairs)

    def __eq__(self, other: object) -> bool:
        return (type(other) is type(self) and self.tags == other.tags
                and self.depends_pairs == other.depends_pairs)

    def __hash__(self) -> int:
        return hash((type(self), frozenset(self.tags), self.depends_pairs))

    def __repr__(self) -> str:
        tags = ", ".join(f"{t!r}: {type_name(v)}" for t, v in self.tags.items())
        dep = sorted({tuple(sorted((repr(a), repr(b)))) for a, b in self.depends_pairs})
        return f"TraceType({{{tags}}}, depends={[f'({a}, {b})' for a, b in dep]})"


class KeyValueType(TraceType):
    """The key-value trace types of Section 4: tags are the keys (of type `key`) and the
    marker; markers depend on everything. `ordered` adds (k, k) for every key: O(K, V)."""

    ordered = False

    def __init__(self, key: Any = Any, value: Any = Any) -> None:
        self.key = key
        self.value = value
        self.tags = {MARKER: int}
        self.depends_pairs = frozenset()

    def depends(self, a: Any, b: Any) -> bool:
        return a == MARKER or b == MARKER or (self.ordered and a == b)

    @property
    def keyed(self) -> bool:
        """Whether items are (key, value) pairs (not bare values of a Unit-keyed stream)."""
        return self.key is not Unit

    def tag_of(self, item: Any) -> Any:
        return item[0] if self.keyed else Unit

    def key_value(self, item: Any) -> Tuple[Any, Any]:
        """The (key, value) of an item: the pair itself, or (None, item) when unkeyed."""
        return item if self.keyed else (None, item)

    def item(self, key: Any, value: Any) -> Any:
        return (key, value) if self.keyed else value

    def fits(self, needed: TraceType) -> bool:
        if not isinstance(needed, KeyValueType):
            return False
        if needed.ordered and not self.ordered:
            return False
        return type_fits(self.key, needed.key) and type_fits(self.value, needed.value)

    def with_types(self, key: Any = None, value: Any = None) -> "KeyValueType":
        return type(self)(self.key if key is None else key,
                          self.value if value is None else value)

    def __eq__(self, other: object) -> bool:
        return (type(other) is type(self) and self.key == other.key
                and self.value == other.value)

    def __hash__(self) -> int:
        return hash((type(self), self.key, self.value))

    def __repr__(self) -> str:
        return f"{'O' if self.ordered else 'U'}({type_name(self.key)}, {type_name(self.value)})"


class U(KeyValueType):
    """U(K, V): key-value items, unordered between markers (a sequence of bags)."""


class O(KeyValueType):
    """O(K, V): per key, items ordered between markers; different keys independent."""

    ordered = True


def unordered(t: KeyValueType) -> U:
    """The same items with their order forgotten."""
    return U(t.key, t.value)


class Marker:
    """A synchronization marker: the `index`-th of its stream, at `timestamp` (the
    watermark it stands for: every item with an earlier timestamp came before it). The
    final marker of a finished stream that had items at the end of time has `final` set."""

    __slots__ = ("index", "micros", "final")

    def __init__(self, index: int, micros: int, final: bool = False) -> None:
        self.index = index
        self.micros = micros
        self.final = final

    @property
    def timestamp(self) -> Any:
        from ..windowing.time import timestamp_at
        return timestamp_at(self.micros)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Marker) and (self.index, self.micros) == (other.index, other.micros)

    def __hash__(self) -> int:
        return hash((self.index, self.micros))

    def __repr__(self) -> str:
        return f"Marker({self.index}, {self.timestamp!r})"
