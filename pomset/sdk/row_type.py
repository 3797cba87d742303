"""Beam's `RowTypeConstraint`: the type of rows with named, typed fields (a `Row`, a
NamedTuple or a dataclass), what a Create of Rows gives as its element type."""
from __future__ import annotations

import dataclasses
import typing
from typing import Any, Dict, Optional, Sequence, Tuple

from .type_hints import beam_str, is_consistent_with, to_typing


class RowTypeConstraint:
    """Rows whose fields are `fields`, (name, type) pairs in order; `user_type` the class
    that holds them in user code (None: a `Row`). Two are equal when their fields are."""

    def __init__(self, fields: Sequence[Tuple[str, Any]], user_type: Any = None,
                 schema_options: Optional[Sequence[Tuple[str, Any]]] = None,
                 field_options: Optional[Dict[str, Sequence[Tuple[str, Any]]]] = None,
                 field_descriptions: Optional[Dict[str, str]] = None) -> None:
        self._fields = tuple((name, to_typing(hint)) for name, hint in fields)
        self._user_type = user_type
        self._schema_options = list(schema_options or [])
        self._field_options = dict(field_options or {})
        self._field_descriptions = dict(field_descriptions or {})

    @staticmethod
    def from_fields(fields: Sequence[Tuple[str, Any]], schema_id: Optional[str] = None,
                    schema_options: Optional[Sequence[Tuple[str, Any]]] = None,
                    field_options: Optional[Dict[str, Sequence[Tuple[str, Any]]]] = None,
                    schema_registry: Any = None,
                    field_descriptions: Optional[Dict[str, str]] = None
                    ) -> "RowTypeConstraint":
        """The type of rows of these (name, type) fields (Beam's; `schema_id` and
        `schema_registry` are accepted, pomset keeps no registry of schemas)."""
        return RowTypeConstraint(fields, None, schema_options, field_options,
                                 field_descriptions)

    @staticmethod
    def from_user_type(user_type: type, schema_options: Optional[Sequence[Tuple[str, Any]]]
                       = None, field_options: Optional[Dict[str, Sequence[Tuple[str, Any]]]]
                       = None) -> Optional["RowTypeConstraint"]:
        """The row type of a NamedTuple or dataclass `user_type` (its annotated fields), or
        None for any other type."""
        if isinstance(user_type, type) and issubclass(user_type, tuple) \
                and hasattr(user_type, "_fields"):
            hints = typing.get_type_hints(user_type)
            fields = [(name, hints.get(name, typing.Any)) for name in user_type._fields]
        elif dataclasses.is_dataclass(user_type) and isinstance(user_type, type):
            hints = typing.get_type_hints(user_type)
            fields = [(f.name, hints.get(f.name, typing.Any))
                      for f in dataclasses.fields(user_type)]
        else:
            return None
        return RowTypeConstraint(fields, user_type, schema_options, field_options)

    @property
    def user_type(self) -> Any:
        """The class of the rows in user code (a `Row` where none was given)."""
        if self._user_type is None:
            from .schema import Row
            return Row
        return self._user_type

    def get_type_for(self, name: str) -> Any:
        """The type of the field `name`."""
        return dict(self._fields)[name]

    def consistent_with(self, base: Any) -> bool:
        """Whether such rows may go where `base` is expected: a row type of the same field
        names, each field's type consistent with its; or a class the rows are instances of."""
        if isinstance(base, RowTypeConstraint):
            return [n for n, _ in self._fields] == [n for n, _ in base._fields] and all(
                is_consistent_with(a, b) for (_, a), (_, b) in zip(self._fields, base._fields))
        origin = typing.get_origin(base) or base
        return isinstance(origin, type) and issubclass(self.user_type, origin)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowTypeConstraint) and self._fields == other._fields

    def __hash__(self) -> int:
        return hash(self._fields)

    def __repr__(self) -> str:
        return "Row(%s)" % ", ".join(f"{name}={beam_str(hint)}" for name, hint in self._fields)


def row_type_of(rows: Sequence[Any]) -> Optional[RowTypeConstraint]:
    """The row type of some `Row`s of the same fields: each field's the Union of its values'
    types (Optional where one is None); None unless every value is such a Row. A TypeError
    (Beam's) for a field whose values are all None."""
    from .schema import Row
    from .type_hints import type_of, union_of
    if not rows or not all(type(r) is Row for r in rows):
        return None
    names = list(rows[0])
    if any(list(r) != names for r in rows):
        return None
    fields = []
    for name in names:
        kinds = [type_of(r[name]) for r in rows if r[name] is not None]
        if not kinds:
            raise TypeError("No types found for field %s", name)   # Beam's words and args
        hint = union_of(kinds)
        fields.append((name, typing.Optional[hint] if len(kinds) < len(rows) else hint))
    return RowTypeConstraint.from_fields(fields)
