"""Relational transforms over schema'd PCollections, with Beam's names: `Select`, `WithColumns`,
`GroupBy(...).aggregate_field(...)` (and `Filter` with an expression, in `core`).

Each is written in terms of the element-wise primitives, so it runs on every runner as it is:
a `Select` is a `Map` that evaluates its expressions on each row. A runner that keeps rows as
columns recognizes them by their classes and their expressions and computes them natively
(`runtime/columnar.py`): the Map's function is then never called.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from .combinefn import CombineFn, Count, Max, Mean, Min, Sum, as_combine_fn
from .core import CombinePerKey, GroupByKey, Map
from .expressions import Expr, col
from .group_keys import group_key
from .ptransform import PTransform
from .pvalue import PCollection
from .schema import Row, row_type

FieldLike = Union[str, Expr, Callable[[Any], Any]]


def as_expr(field: FieldLike) -> Union[Expr, Callable[[Any], Any]]:
    """A field name as its column; an expression or a function of the row as it is."""
    if isinstance(field, str):
        return col(field)
    if isinstance(field, Expr) or callable(field):
        return field
    raise TypeError(f"expected a field name, an expression (pm.col(...)) or a function of the "
                    f"row, got {field!r}")


def _evaluate(fields: Dict[str, Any], row: Any) -> Row:
    return Row({name: (f.eval(row) if isinstance(f, Expr) else f(row))
                for name, f in fields.items()})


def _output_schema(fields: Dict[str, Any], schema: Any, where: str) -> Any:
    """The schema of rows of these fields over rows of `schema`; None when a field is a
    Python function (its type is not known until it runs)."""
    import pyarrow as pa
    if schema is None or not all(isinstance(f, Expr) for f in fields.values()):
        return None
    for f in fields.values():
        f.check(schema, where)
    return pa.schema([pa.field(name, f.output_type(schema)) for name, f in fields.items()])


class FieldsMap(Map):
    """A Map from a row to a Row of named fields, each an expression or a function of the row;
    `fields` is what a columnar runner computes instead (`Select` and `WithColumns`)."""

    def __init__(self, fields: Dict[str, Any], keep_input: bool, label: Optional[str]) -> None:
        self.fields = fields
        self.keep_input = keep_input
        super().__init__(self._row, label=label)

    def _row(self, row: Any) -> Row:
        out = _evaluate(self.fields, row)
        if not self.keep_input:
            return out
        merged = Row(row)
        dict.update(merged, out)   # a new row: no kept hash to forget
        return merged

    def validate(self, node: Any) -> None:
        super().validate(node)
        schema = node.inputs[0].schema
        if schema is not None:
            for f in self.fields.values():
                if isinstance(f, Expr):
                    f.check(schema, node.label)

    def output_schema(self, main: PCollection) -> Any:
        import pyarrow as pa
        added = _output_schema(self.fields, main.schema, self.label or type(self).__name__)
        if added is None or not self.keep_input:
            return added
        kept = [f for f in main.schema if f.name not in self.fields]
        return pa.schema(kept + list(added))


class Select(FieldsMap):
    """Rows of the named fields: `Select("key", "value")` keeps those, and
    `Select("key", doubled=pm.col("value") * 2)` computes new ones (an expression, or a
    function of the row). The output's schema follows from the input's."""

    def __init__(self, *fields: str, label: Optional[str] = None, **named: FieldLike) -> None:
        chosen: Dict[str, Any] = {}
        for f in fields:
            if not isinstance(f, str):
                raise TypeError(f"Select takes field names and name=expression pairs, got {f!r}")
            chosen[f] = col(f)
        for name, f in named.items():
            chosen[name] = as_expr(f)
        if not chosen:
            raise TypeError("Select needs at least one field")
        super().__init__(chosen, keep_input=False, label=label)

    def default_label(self) -> str:
        return "Select"


class WithColumns(FieldsMap):
    """The input rows with fields added or replaced: `WithColumns(total=pm.col("a") + pm.col("b"))`."""

    def __init__(self, label: Optional[str] = None, **named: FieldLike) -> None:
        if not named:
            raise TypeError("WithColumns needs at least one name=expression")
        super().__init__({n: as_expr(f) for n, f in named.items()}, keep_input=True,
                         label=label)

    def default_label(self) -> str:
        return "WithColumns"


# --- aggregation -----------------------------------------------------------------------------

#: Combiners a columnar runner computes natively, by class.
NATIVE_COMBINERS = (Sum, Count, Mean, Min, Max)


class Aggregation:
    """One `aggregate_field`: the values (an expression over the row), the combiner, and the
    output field's name."""

    def __init__(self, values: Any, combiner: CombineFn, name: str) -> None:
        self.values, self.combiner, self.name = values, combiner, name

    def __repr__(self) -> str:
        return f"{self.name}={self.combiner!r}({self.values!r})"


class FieldsCombineFn(CombineFn):
    """The combiners of a `GroupBy`'s aggregations, side by side over tuples of their values;
    nulls are skipped, as SQL aggregates do (so `Count` counts the non-null values)."""

    def __init__(self, aggregations: List[Aggregation]) -> None:
        self.aggregations = aggregations
        self.fns = [a.combiner for a in aggregations]

    def create_accumulator(self) -> List[Any]:
        return [fn.create_accumulator() for fn in self.fns]

    def add_input(self, acc: List[Any], values: Tuple[Any, ...]) -> List[Any]:
        return [a if v is None else fn.add_input(a, v)
                for fn, a, v in zip(self.fns, acc, values)]

    def retract_input(self, acc: List[Any], values: Tuple[Any, ...]) -> List[Any]:
        return [a if v is None else fn.retract_input(a, v)
                for fn, a, v in zip(self.fns, acc, values)]

    def can_retract(self) -> bool:
        return all(fn.can_retract() for fn in self.fns)

    def can_merge(self) -> bool:
        return all(fn.can_merge() for fn in self.fns)

    def merge_accumulators(self, accs: Any) -> List[Any]:
        if len(self.fns) == 1:   # the common case, without the transposition
            return [self.fns[0].merge_accumulators([a[0] for a in accs])]
        return [fn.merge_accumulators(list(column))
                for fn, column in zip(self.fns, zip(*accs))]

    def extract_output(self, acc: List[Any]) -> Tuple[Any, ...]:
        if len(self.fns) == 1:
            return (self.fns[0].extract_output(acc[0]),)
        return tuple([fn.extract_output(a) for fn, a in zip(self.fns, acc)])

    def native(self) -> bool:
        """Whether a columnar runner can compute every aggregation without calling Python."""
        return all(type(fn) in NATIVE_COMBINERS and isinstance(a.values, Expr)
                   for fn, a in zip(self.fns, self.aggregations))

    def __repr__(self) -> str:
        return f"FieldsCombineFn({self.aggregations!r})"


class KeyFields(Map):
    """A row as (key, tuple of the aggregations' values), the first step of a `GroupBy`; the
    key is the key field's value, or the tuple of the key fields' values (`key_values`): a
    plain value hashes and pickles several times faster than a row, and the key stays inside
    the GroupBy. Without aggregations, (key, row) pairs, the key as Beam's GroupBy gives it
    (`group_key`: one field's value, else a named tuple; always one with `force_tuple`)."""

    def __init__(self, keys: Dict[str, Any], aggregations: List[Aggregation],
                 force_tuple: bool = False) -> None:
        self.keys, self.aggregations, self.force_tuple = keys, aggregations, force_tuple
        super().__init__(self._pair, label="KeyFields")

    def _pair(self, row: Any) -> Tuple[Any, Any]:
        fields = [f.eval(row) if isinstance(f, Expr) else f(row) for f in self.keys.values()]
        if not self.aggregations:
            return group_key(list(self.keys), fields, self.force_tuple), row
        return (fields[0] if len(fields) == 1 else tuple(fields),
                tuple(a.values.eval(row) if isinstance(a.values, Expr) else a.values(row)
                      for a in self.aggregations))


def key_values(columns: List[List[Any]]) -> List[Any]:
    """The keys `KeyFields` gives rows with these key columns' values."""
    return columns[0] if len(columns) == 1 else list(zip(*columns))


class FieldsToRow(Map):
    """(key, aggregated values) as one Row of the key fields (`key_names`) and the
    aggregations' names: the last step of a `GroupBy`."""

    def __init__(self, key_names: List[str], names: List[str], schema: Any) -> None:
        self.key_names, self.names, self.schema = key_names, names, schema
        self.fields = tuple(key_names) + tuple(names)
        super().__init__(self._row, label="ToRows")

    def _row(self, kv: Tuple[Any, Tuple[Any, ...]]) -> Row:
        key, values = kv
        names = self.key_names
        make = row_type(self.fields)   # looked up, not kept: a transform pickles plainly
        out = make({names[0]: key}) if len(names) == 1 else make(zip(names, key))
        dict.update(out, zip(self.names, values))   # a new row: no kept hash to forget
        return out

    def output_schema(self, main: PCollection) -> Any:
        return self.schema


class GroupBy(PTransform):
    """Group elements by fields (names, expressions or functions of the element) and aggregate
    fields per group and window, as Beam's `GroupBy`:
    `GroupBy("key").aggregate_field("value", pm.Sum, "total")` gives one Row(key, total) per
    key and window, fired by the input's trigger. Without aggregations, (key, elements) pairs,
    the key one field's value or a named tuple of several (`force_tuple_keys` for one always;
    `GroupBy()` groups everything under `()`)."""

    def __init__(self, *fields: FieldLike, label: Optional[str] = None,
                 **named: FieldLike) -> None:
        super().__init__(label)
        keys: Dict[str, Any] = {}
        for i, f in enumerate(fields):
            if isinstance(f, str):
                keys[f] = col(f)
            elif isinstance(f, Expr) or callable(f):
                keys[f"key{i}"] = f
            else:
                raise TypeError(f"GroupBy takes field names, functions of the element and "
                                f"name=expression pairs, got {f!r}")
        keys.update((n, as_expr(f)) for n, f in named.items())
        self.keys = keys
        self.aggregations: List[Aggregation] = []
        self.force_tuple = False

    def force_tuple_keys(self, value: bool = True) -> "GroupBy":
        """A new GroupBy whose keys are named tuples even for one key field (Beam's)."""
        out = self._copy()
        out.force_tuple = value
        return out

    def _copy(self) -> "GroupBy":
        out = GroupBy.__new__(GroupBy)
        out.label, out.keys = self.label, self.keys
        out.aggregations, out.force_tuple = self.aggregations, self.force_tuple
        return out

    def aggregate_field(self, field: FieldLike, combiner: Any, as_: str) -> "GroupBy":
        """A new GroupBy that also aggregates `field` (a name, an expression or a function of
        the row) with `combiner` (a CombineFn class or instance, or a function of an iterable,
        as `CombinePerKey` takes) into the output field `as_`."""
        if not isinstance(as_, str) or not as_:
            raise TypeError(f"aggregate_field needs an output field name as as_, got {as_!r}")
        taken = list(self.keys) + [a.name for a in self.aggregations]
        if as_ in taken:
            raise ValueError(f"aggregate_field: output field {as_!r} is already one of {taken}")
        out = self._copy()
        out.aggregations = self.aggregations + [
            Aggregation(as_expr(field), as_combine_fn(combiner), as_)]
        return out

    def default_label(self) -> str:
        return "GroupBy(" + ", ".join(self.keys) + ")"

    def expand(self, pcoll: PCollection) -> PCollection:
        where = self.label or self.default_label()
        schema = pcoll.schema
        if schema is not None:
            for f in list(self.keys.values()) + [a.values for a in self.aggregations]:
                if isinstance(f, Expr):
                    f.check(schema, where)
        keyed = pcoll | KeyFields(self.keys, self.aggregations, self.force_tuple)
        if not self.aggregations:
            return keyed | GroupByKey()
        fn = FieldsCombineFn(self.aggregations)
        combined = keyed | CombinePerKey(fn)
        names = [a.name for a in self.aggregations]
        return combined | FieldsToRow(list(self.keys), names, _aggregate_schema(
            self.keys, self.aggregations, schema, where))


def _aggregate_schema(keys: Dict[str, Any], aggregations: List[Aggregation], schema: Any,
                      where: str) -> Any:
    """The output rows' schema: the keys' types, then each aggregation's (a sum of integers
    is an int64, a mean a float64, a count an int64, a min or max its input's type); None
    when a key or aggregation is a Python function or its combiner is not a built-in."""
    import pyarrow as pa
    key_schema = _output_schema(keys, schema, where)
    if key_schema is None:
        return None
    fields = list(key_schema)
    for a in aggregations:
        if not isinstance(a.values, Expr) or type(a.combiner) not in NATIVE_COMBINERS:
            return None
        kind = a.values.output_type(schema)
        if isinstance(a.combiner, Count):
            kind = pa.int64()
        elif isinstance(a.combiner, Mean):
            kind = pa.float64()
        elif isinstance(a.combiner, Sum):
            kind = pa.int64() if pa.types.is_integer(kind) else pa.float64()
        fields.append(pa.field(a.name, kind))
    return pa.schema(fields)
