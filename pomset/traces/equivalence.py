"""When two sequences are the same data trace: a normal form that equivalent sequences share.

For the key-value types: per block between markers, a multiset of items (U) or, per key, the
sequence of its values (O). For a general type, by the projection lemma of trace theory: two
sequences are equivalent when, for every pair of dependent tags, their projections onto
those two tags agree once runs of mutually independent items (same tag, not self-dependent)
are taken as multisets.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, List, Tuple

from .types import KeyValueType, Marker, TraceType


def freeze(value: Any) -> Any:
    """A hashable stand-in for a value (lists, dicts and sets by their contents)."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), freeze(v)) for k, v in value.items())))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(repr(v) for v in value)))
    try:
        hash(value)
    except TypeError:
        return ("repr", repr(value))
    return value


def _blocks(sequence: Iterable[Any]) -> List[Tuple[list, Any]]:
    """The sequence cut at its markers: (items before a marker, that marker), and a last
    block with marker None."""
    out, block = [], []
    for x in sequence:
        if isinstance(x, Marker):
            out.append((block, x))
            block = []
        else:
            block.append(x)
    out.append((block, None))
    return out


def normal_form(trace_type: TraceType, sequence: Iterable[Any]) -> Any:
    """The normal form of a sequence (items and `Marker`s) as a trace of `trace_type`."""
    if isinstance(trace_type, KeyValueType):
        return tuple(_kv_block(trace_type, items) + (marker,) for items, marker in _blocks(sequence))
    return _general(trace_type, list(sequence))


def equivalent(trace_type: TraceType, a: Iterable[Any], b: Iterable[Any]) -> bool:
    """Whether two sequences are the same trace of `trace_type`."""
    return normal_form(trace_type, a) == normal_form(trace_type, b)


def _kv_block(t: KeyValueType, items: list) -> tuple:
    if not t.ordered:
        return (frozenset(Counter(freeze(x) for x in items).items()),)
    per_key: dict = {}
    for x in items:
        k, v = t.key_value(x)
        per_key.setdefault(freeze(k), []).append(freeze(v))
    return (frozenset((k, tuple(vs)) for k, vs in per_key.items()),)


def _general(t: TraceType, seq: list) -> Any:
    items = [x for x in seq if not isinstance(x, Marker)]
    if len(items) != len(seq):
        raise ValueError("a general trace type has no markers; tag them as items instead")
    for x in items:
        if t.tag_of(x) not in t.tags:
            raise ValueError(f"item {x!r} has tag {t.tag_of(x)!r}, not in {sorted(map(repr, t.tags))}")
    tags = {t.tag_of(x) for x in items}
    form = [("bag", frozenset(Counter(freeze(x) for x in items).items()))]
    for a in tags:
        for b in tags:
            if repr(a) <= repr(b) and t.depends(a, b):
                form.append(((a, b), _projection(t, items, {a, b})))
    return tuple(sorted(form, key=repr))


def _projection(t: TraceType, items: list, tags: set) -> tuple:
    """The items with tags in `tags`, in order, with each run of adjacent items that commute
    with each other (one tag that is not self-dependent) as a multiset."""
    out: list = []
    run: list = []
    run_tag = None
    for x in items:
        tag = t.tag_of(x)
        if tag not in tags:
            continue
        if run and (tag != run_tag or t.depends(tag, tag)):
            out.append(frozenset(Counter(run).items()))
            run = []
        run.append(freeze(x))
        run_tag = tag
    if run:
        out.append(frozenset(Counter(run).items()))
    return tuple(out)
