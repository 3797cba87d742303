"""CSV columns from text to types without losing or changing data: each column's type is
decided once, from a sample of the first rows read, and a later value that is not of that
type makes its row a malformed record instead of turning the column into text.

A value is of a type only where converting it loses nothing: `"01234"` is no integer (its
leading zero would go), `"1e3"` is a float, `"true"`/`"false"` (any case) are bools, ISO-8601
dates and date-times are dates and timestamps (all with a zone, or all without). A column
whose sampled values are of one type except at most one in a hundred takes that type; any
other column stays text. Empty fields are null in typed columns and `""` in text ones."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

#: rows of the first file read that decide the columns' types
SAMPLE_ROWS = 1000
#: the share of sampled values that may be of another type, to become malformed records
TOLERATED = 0.01

_INT = r"^-?(0|[1-9][0-9]*)$"
_FLOAT = r"^[-+]?((0|[1-9][0-9]*)(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$"
_BOOL = r"^(?i:true|false)$"
_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_TIME = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?"
_ZONED = _TIME + r"(Z|[+-][0-9]{2}:?[0-9]{2})$"
_NAIVE = _TIME + r"$|" + _DATE   # a date is its midnight (a date-only column is a date)

#: the types a column may take, narrowest first: (name, pattern its values match)
_KINDS: Tuple[Tuple[str, str], ...] = (("int64", _INT), ("float64", _FLOAT), ("bool", _BOOL),
                                       ("date", _DATE), ("timestamp", _NAIVE),
                                       ("timestamp UTC", _ZONED))
_PATTERNS = dict(_KINDS)
#: what a user may declare in `column_types`, by Python type or name
_DECLARED = {str: "string", int: "int64", float: "float64", bool: "bool", "str": "string",
             "string": "string", "int": "int64", "int64": "int64", "float": "float64",
             "float64": "float64", "bool": "bool", "date": "date", "timestamp": "timestamp",
             "timestamp UTC": "timestamp UTC"}


def declared_types(column_types: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    """`column_types` as type names; a TypeError naming what is accepted otherwise."""
    out: Dict[str, str] = {}
    for name, kind in (column_types or {}).items():
        if not isinstance(name, str) or kind not in _DECLARED:
            raise TypeError(f"column_types maps column names to str, int, float, bool or one of "
                            f"'date', 'timestamp', 'timestamp UTC'; got {name!r}: {kind!r}")
        out[name] = _DECLARED[kind]
    return out


def _arrow_type(kind: str) -> Any:
    import pyarrow as pa
    return {"int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(),
            "date": pa.date32(), "timestamp": pa.timestamp("us"),
            "timestamp UTC": pa.timestamp("us", tz="UTC")}[kind]


def _matches(column: Any, kind: str) -> Any:
    import pyarrow.compute as pc
    return pc.fill_null(pc.match_substring_regex(column, _PATTERNS[kind]), False)


def infer_types(sample: Any) -> Dict[str, str]:
    """The type of each column of a table of text columns: the narrowest that all but at
    most `TOLERATED` of its non-empty values are of; "string" where none is (or where it
    holds no value at all)."""
    import pyarrow.compute as pc
    types: Dict[str, str] = {}
    for name in sample.column_names:
        column = sample.column(name)
        filled = pc.fill_null(pc.not_equal(column, ""), False)
        values = pc.sum(filled).as_py() or 0
        types[name] = "string"
        if not values:
            continue
        for kind, _ in _KINDS:
            fits = pc.sum(pc.and_(filled, _matches(column, kind))).as_py() or 0
            if values - fits <= TOLERATED * values:
                types[name] = kind
                break
    return types


def typed_columns(table: Any, types: Mapping[str, str]) -> Tuple[Any, Dict[int, str]]:
    """`table` (text columns) with each column converted to its type in `types` (a column
    not there stays text), and the rows that do not fit: {row index: what is wrong}, the
    first column that does not fit per row."""
    import pyarrow as pa
    import pyarrow.compute as pc
    bad: Dict[int, str] = {}
    columns: List[Any] = []
    table = table.combine_chunks()
    for name in table.column_names:
        column = table.column(name)
        kind = types.get(name, "string")
        if kind == "string":
            columns.append(column)
            continue
        empty = pc.fill_null(pc.equal(column, ""), True)
        fits = pc.or_(empty, _matches(column, kind))
        values = pc.if_else(pc.or_(empty, pc.invert(fits)), pa.scalar(None, pa.string()),
                            column)
        if kind == "bool":
            converted = pc.equal(pc.utf8_lower(values), "true")
        else:
            converted, failed = _cast(values, _arrow_type(kind))
            fits = pc.and_(fits, pc.invert(failed))
        for index in pc.indices_nonzero(pc.invert(fits)).to_pylist():
            bad.setdefault(index, f"column {name!r} holds {kind} values; "
                                  f"{column[index].as_py()!r} is not one")
        columns.append(converted)
    return pa.table(columns, names=table.column_names), bad


def _cast(values: Any, to: Any) -> Tuple[Any, Any]:
    """`values` cast to `to`, and which of them could not be (null in the result): a value
    can match its type's pattern and still not be one (a month 13, an integer too large)."""
    import pyarrow as pa
    try:
        return values.cast(to), pa.array([False] * len(values))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    out: List[Any] = []
    failed: List[bool] = []
    for value in values.to_pylist():
        try:
            out.append(None if value is None else pa.array([value]).cast(to)[0].as_py())
            failed.append(False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError):
            out.append(None)
            failed.append(True)
    return pa.array(out, type=to), pa.array(failed)
