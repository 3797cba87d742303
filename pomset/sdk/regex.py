"""Beam's `Regex` transforms: match, find, replace and split strings with a regular
expression (a pattern string or a compiled `re.Pattern`), each a Map or FlatMap."""
from __future__ import annotations

import re
from typing import Any, Callable, Iterator, List, Tuple, Union

from .core import FlatMap, Map

Pattern = Union[str, "re.Pattern[str]"]


def _compiled(regex: Pattern) -> "re.Pattern[str]":
    return regex if isinstance(regex, re.Pattern) else re.compile(regex)


def _label(what: str, regex: Pattern) -> str:
    return f"Regex.{what}({_compiled(regex).pattern!r})"


def _first_match(what: str, regex: Pattern, anywhere: bool,
                 project: Callable[["re.Match[str]", int], Any]) -> FlatMap:
    """Regex.`what`: for each element that `regex` matches from its start (or, `anywhere`,
    that it matches somewhere), `project(match, number of groups)` of its first match."""
    pattern = _compiled(regex)
    first = pattern.search if anywhere else pattern.match

    def each(element: str) -> Iterator[Any]:
        m = first(element)
        if m:
            yield project(m, pattern.groups)
    return FlatMap(each, label=_label(what, regex))


class Regex:
    """Beam's `Regex`: each method returns the transform for one kind of match."""

    #: as `group`, every group: find_all gives (whole match, first group) pairs
    ALL = "__regex_all_groups"

    @staticmethod
    def matches(regex: Pattern, group: Union[int, str] = 0) -> FlatMap:
        """`group` of each element that matches `regex` from its start."""
        return _first_match("matches", regex, False, lambda m, groups: m.group(group))

    @staticmethod
    def all_matches(regex: Pattern) -> FlatMap:
        """Every group (0 first) of each element that matches `regex` from its start."""
        return _first_match("all_matches", regex, False,
                            lambda m, groups: [m.group(i) for i in range(groups + 1)])

    @staticmethod
    def matches_kv(regex: Pattern, keyGroup: Union[int, str],
                   valueGroup: Union[int, str] = 0) -> FlatMap:
        """(keyGroup, valueGroup) of each element that matches `regex` from its start."""
        return _first_match("matches_kv", regex, False,
                            lambda m, groups: (m.group(keyGroup), m.group(valueGroup)))

    @staticmethod
    def find(regex: Pattern, group: Union[int, str] = 0) -> FlatMap:
        """`group` of the first match of `regex` anywhere in each element."""
        return _first_match("find", regex, True, lambda m, groups: m.group(group))

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
