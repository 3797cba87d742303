"""Beam's `Regex` transforms: match, find, replace and split strings with a regular
expression (a pattern string or a compiled `re.Pattern`), each a Map or FlatMap."""
from __future__ import annotations

import re
from typing import Any, Iterator, List, Tuple, Union

from .core import FlatMap, Map

Pattern = Union[str, "re.Pattern[str]"]


def _compiled(regex: Pattern) -> "re.Pattern[str]":
    return regex if isinstance(regex, re.Pattern) else re.compile(regex)


def _label(what: str, regex: Pattern) -> str:
    return f"Regex.{what}({_compiled(regex).pattern!r})"


class Regex:
    """Beam's `Regex`: each method returns the transform for one kind of match."""

    #: as `group`, every group: find_all gives (whole match, first group) pairs
    ALL = "__regex_all_groups"

    @staticmethod
    def matches(regex: Pattern, group: Union[int, str] = 0) -> FlatMap:
        """`group` of each element that matches `regex` from its start."""
        pattern = _compiled(regex)

        def match(element: str) -> Iterator[str]:
            m = pattern.match(element)
            if m:
                yield m.group(group)
        return FlatMap(match, label=_label("matches", regex))

    @staticmethod
    def all_matches(regex: Pattern) -> FlatMap:
        """Every group (0 first) of each element that matches `regex` from its start."""
        pattern = _compiled(regex)

        def match(element: str) -> Iterator[List[str]]:
            m = pattern.match(element)
            if m:
                yield [m.group(i) for i in range(pattern.groups + 1)]
        return FlatMap(match, label=_label("all_matches", regex))

    @staticmethod
    def matches_kv(regex: Pattern, keyGroup: Union[int, str],
                   valueGroup: Union[int, str] = 0) -> FlatMap:
        """(keyGroup, valueGroup) of each element that matches `regex` from its start."""
        pattern = _compiled(regex)

        def match(element: str) -> Iterator[Tuple[str, str]]:
            m = pattern.match(element)
            if m:
                yield m.group(keyGroup), m.group(valueGroup)
        return FlatMap(match, label=_label("matches_kv", regex))

    @staticmethod
    def find(regex: Pattern, group: Union[int, str] = 0) -> FlatMap:
        """`group` of the first match of `regex` anywhere in each element."""
        pattern = _compiled(regex)

        def find(element: str) -> Iterator[str]:
            m = pattern.search(element)
            if m:
                yield m.group(group)
        return FlatMap(find, label=_label("find", regex))

    @staticmethod
    def find_all(regex: Pattern, group: Union[int, str] = 0,
                 outputEmpty: bool = True) -> Map:
        """For each element, the list of `group` of every match (with `Regex.ALL`, (whole
        match, first group) pairs); empty ones dropped unless `outputEmpty`."""
        pattern = _compiled(regex)

        def find_all(element: str) -> List[Any]:
            found = pattern.finditer(element)
            if group == Regex.ALL:
                return [(m.group(), m.groups()[0]) for m in found
                        if outputEmpty or m.groups()[0]]
            return [m.group(group) for m in found if outputEmpty or m.group(group)]
        return Map(find_all, label=_label("find_all", regex))

    @staticmethod
    def find_kv(regex: Pattern, keyGroup: Union[int, str],
                valueGroup: Union[int, str] = 0) -> FlatMap:
        """(keyGroup, valueGroup) of every match of `regex` anywhere in each element."""
        pattern = _compiled(regex)

        def find_kv(element: str) -> Iterator[Tuple[str, str]]:
            for m in pattern.finditer(element):
                yield m.group(keyGroup), m.group(valueGroup)
        return FlatMap(find_kv, label=_label("find_kv", regex))

    @staticmethod
    def replace_all(regex: Pattern, replacement: str) -> Map:
        """Each element with every match of `regex` replaced by `replacement`."""
        pattern = _compiled(regex)
        return Map(lambda element: pattern.sub(replacement, element),
                   label=_label("replace_all", regex))

    @staticmethod
    def replace_first(regex: Pattern, replacement: str) -> Map:
        """Each element with its first match of `regex` replaced by `replacement`."""
        pattern = _compiled(regex)
        return Map(lambda element: pattern.sub(replacement, element, count=1),
                   label=_label("replace_first", regex))

    @staticmethod
    def split(regex: Pattern, outputEmpty: bool = False) -> Map:
        """For each element, the list of its pieces between matches of `regex` (empty ones
        only if `outputEmpty`)."""
        pattern = _compiled(regex)
        return Map(lambda element: [s for s in pattern.split(element) if outputEmpty or s],
                       label=_label("split", regex))
