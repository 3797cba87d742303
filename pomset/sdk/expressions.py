"""Expressions over the fields of rows: `pm.col("v") * 2 > 10`.

An expression is one immutable tree (`Col`, `Lit`, `Op` nodes) that evaluates three ways with
the same results, nulls included: in plain Python over one row (`Expr.eval`), with
pyarrow.compute over a RecordBatch or Table (`Expr.to_arrow`, the local runner), and as a Spark
Column (`pomset.runners.spark.expressions.to_spark`). `Expr.check` types it against a schema
while the pipeline is built, so a misspelt field or `col("name") * 2` fails there.

The rules every evaluation follows:

- null (None) propagates through arithmetic, comparisons, casts and functions; `&`, `|`, `~`
  are SQL's three-valued logic (null & False is False, null | True is True);
- integer `+ - *` give int64, with a float operand float64; `/` always gives float64 and
  `x / 0` is null (Spark's non-ANSI rule), for floats too. int64 overflow is an error in Arrow
  and in Spark (ANSI mode, Spark's default); plain Python ints do not overflow;
- numbers of any kind compare with each other; strings, bools and timestamps with their own
  kind. NaN is a float, not null: `==`, `<`, ... with NaN are False and `!=` is True (IEEE, as
  Python), which the Spark compilation keeps although Spark itself orders NaN above all numbers;
- `cast` goes number -> number, int -> string and bool -> number only, so that no evaluation
  has to parse text or print a float (Python, Arrow and Spark write floats differently).
  float -> int truncates toward zero; NaN, infinity or a value outside int64 is an error;
- strings are compared by code point; `length` counts characters (code points). `upper` and
  `lower` agree on characters whose case mapping is one character and context-free (not on
  'ß': Python and Spark give 'SS', Arrow 'ẞ'; nor on a word-final 'Σ');
- `year`, `month`, `day`, `hour` read timestamps in UTC; a naive datetime is taken as UTC;
- a literal is never null: nulls come from the data (`col("v") == None` is refused; use
  `is_null()`).
"""
from __future__ import annotations

import datetime as _dt
import math
import operator
from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, Mapping, Tuple, Union

from .errors import PipelineConstructionError
from .schema import arrow_type

if TYPE_CHECKING:
    import pyarrow as pa

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
CAST_TARGETS = ("int64", "float64", "string", "bool")
BINARY = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "eq": "==", "ne": "!=",
          "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "&", "or": "|"}
UNARY = {"neg": "-", "not": "~"}
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
TIME_PARTS = ("year", "month", "day", "hour")


class Expr:
    """A node of an expression tree: `op` names it ("col", "lit", "add", "cast", ...),
    `args` are its operand expressions and `params` its plain values (a field name, a literal,
    a cast's target, a pattern). Immutable; hashable and comparable (`equals`) by structure.
    Python operators build bigger trees, so `==` gives an Expr, not a bool."""

    __slots__ = ("op", "args", "params")

    def __init__(self, op: str, args: Tuple["Expr", ...] = (), params: Tuple[Any, ...] = ()):
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "args", tuple(args))
        object.__setattr__(self, "params", tuple(params))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("an expression is immutable: build a new one")

    def __reduce__(self) -> Any:
        return (Op, (self.op, self.args, self.params))

    # --- structure ---

    def _key(self) -> Tuple[Any, ...]:
        # the params' types too, so lit(1), lit(1.0) and lit(True) differ
        return (self.op, tuple((type(p), p) for p in self.params),
                tuple(a._key() for a in self.args))

    def __hash__(self) -> int:
        return hash(self._key())

    def equals(self, other: Any) -> bool:
        """Whether `other` is an expression of the same structure (`==` builds a comparison)."""
        return isinstance(other, Expr) and self._key() == other._key()

    def __bool__(self) -> bool:
        raise TypeError(f"the truth value of the expression {self!r} is decided per row: "
                        f"combine conditions with &, | and ~ (not and, or, not), and use "
                        f".equals() to compare two expressions")

    def columns(self) -> FrozenSet[str]:
        """The names of the fields this expression reads."""
        return frozenset().union(*(a.columns() for a in self.args))

    # --- operators ---

    def __add__(self, other: Any) -> "Expr":
        return Op("add", (self, _wrap(other)))

    def __radd__(self, other: Any) -> "Expr":
        return Op("add", (_wrap(other), self))

    def __sub__(self, other: Any) -> "Expr":
        return Op("sub", (self, _wrap(other)))

    def __rsub__(self, other: Any) -> "Expr":
        return Op("sub", (_wrap(other), self))

    def __mul__(self, other: Any) -> "Expr":
        return Op("mul", (self, _wrap(other)))

    def __rmul__(self, other: Any) -> "Expr":
        return Op("mul", (_wrap(other), self))

    def __truediv__(self, other: Any) -> "Expr":
        return Op("truediv", (self, _wrap(other)))

    def __rtruediv__(self, other: Any) -> "Expr":
        return Op("truediv", (_wrap(other), self))

    def __neg__(self) -> "Expr":
        return Op("neg", (self,))

    def __eq__(self, other: Any) -> "Expr":  # type: ignore[override]
        return Op("eq", (self, _wrap(other, "compare")))

    def __ne__(self, other: Any) -> "Expr":  # type: ignore[override]
        return Op("ne", (self, _wrap(other, "compare")))

    def __lt__(self, other: Any) -> "Expr":
        return Op("lt", (self, _wrap(other, "compare")))

    def __le__(self, other: Any) -> "Expr":
        return Op("le", (self, _wrap(other, "compare")))

    def __gt__(self, other: Any) -> "Expr":
        return Op("gt", (self, _wrap(other, "compare")))

    def __ge__(self, other: Any) -> "Expr":
        return Op("ge", (self, _wrap(other, "compare")))

    def __and__(self, other: Any) -> "Expr":
        return Op("and", (self, _wrap(other)))

    def __rand__(self, other: Any) -> "Expr":
        return Op("and", (_wrap(other), self))

    def __or__(self, other: Any) -> "Expr":
        return Op("or", (self, _wrap(other)))

    def __ror__(self, other: Any) -> "Expr":
        return Op("or", (_wrap(other), self))

    def __invert__(self) -> "Expr":
        return Op("not", (self,))

    # --- methods ---

    def cast(self, to: Any) -> "Expr":
        """This value as another type: "int64", "float64", "string" or "bool" (or that pyarrow
        type). Number -> number, int -> string and bool -> number are the casts there are."""
        import pyarrow as pa
        try:
            target = {pa.int64(): "int64", pa.float64(): "float64", pa.string(): "string",
                      pa.bool_(): "bool"}.get(arrow_type(to))
        except TypeError:
            target = None
        if target is None:
            raise TypeError(f"cannot cast to {to!r}: an expression casts to one of "
                            f"{', '.join(CAST_TARGETS)}")
        return Op("cast", (self,), (target,))

    def is_null(self) -> "Expr":
        """True where this value is null (NaN is not null), never null itself."""
        return Op("is_null", (self,))

    def is_not_null(self) -> "Expr":
        """True where this value is not null, never null itself."""
        return Op("is_not_null", (self,))

    def fill_null(self, value: Any) -> "Expr":
        """This value, or `value` (a literal or an expression of the same type; an int for a
        float) where it is null. The type stays this expression's (in plain Python an int
        filled into a float stays the equal int)."""
        return Op("fill_null", (self, _wrap(value, "fill")))

    def upper(self) -> "Expr":
        """The string in upper case."""
        return Op("upper", (self,))

    def lower(self) -> "Expr":
        """The string in lower case."""
        return Op("lower", (self,))

    def length(self) -> "Expr":
        """The string's length in characters (code points), an int64."""
        return Op("length", (self,))

    def startswith(self, prefix: str) -> "Expr":
        """Whether the string starts with `prefix` (a Python string)."""
        return Op("startswith", (self,), (_pattern(prefix, "startswith"),))

    def contains(self, part: str) -> "Expr":
        """Whether the string contains `part` (a Python string; no pattern syntax)."""
        return Op("contains", (self,), (_pattern(part, "contains"),))

    def year(self) -> "Expr":
        """The timestamp's year in UTC, an int64."""
        return Op("year", (self,))

    def month(self) -> "Expr":
        """The timestamp's month in UTC (1-12), an int64."""
        return Op("month", (self,))

    def day(self) -> "Expr":
        """The timestamp's day of the month in UTC (1-31), an int64."""
        return Op("day", (self,))

    def hour(self) -> "Expr":
        """The timestamp's hour in UTC (0-23), an int64."""
        return Op("hour", (self,))

    # --- types ---

    def check(self, schema: "pa.Schema", where: str) -> None:
        """Raise PipelineConstructionError, naming `where`, unless this expression reads only
        fields of `schema` and applies every operator to values of types it takes."""
        self._types(schema, where)

    def output_type(self, schema: "pa.Schema") -> "pa.DataType":
        """The Arrow type of this expression's values over rows of `schema`."""
        return self._types(schema, f"the expression {self!r}")[id(self)]

    def _types(self, schema: "pa.Schema", where: str) -> Dict[int, Any]:
        types: Dict[int, Any] = {}
        _infer(self, schema, types, where, self)
        return types

    # --- evaluation ---

    def eval(self, row: Mapping[str, Any]) -> Any:
        """This expression's value for one row (a Row or any mapping); None is null. Assumes
        the expression checks against the rows' schema."""
        return _PYTHON[self.op](self, *(a.eval(row) for a in self.args))

    def to_arrow(self, data: Union["pa.RecordBatch", "pa.Table"]) -> Any:
        """This expression's values over `data`, one per row: a pyarrow Array (ChunkedArray
        for a Table's columns); a constant is repeated to the data's length."""
        import pyarrow as pa
        types = self._types(data.schema, "to_arrow")
        out = _arrow(self, data, types)
        return pa.repeat(out, data.num_rows) if isinstance(out, pa.Scalar) else out

    # --- repr ---

    def __repr__(self) -> str:
        return self._show(top=True)

    def _show(self, top: bool = False) -> str:
        if self.op in BINARY:
            left, right = self.args
            text = f"{_operand(left, literal_bare=False)} {BINARY[self.op]} {_operand(right)}"
            return text if top else f"({text})"
        if self.op in UNARY:
            return UNARY[self.op] + _operand(self.args[0], literal_bare=False, method=True)
        shown = [_operand(a) if isinstance(a, Lit) else a._show(True) for a in self.args[1:]]
        shown += [repr(p) for p in self.params]
        return f"{_operand(self.args[0], literal_bare=False, method=True)}.{self.op}" \
               f"({', '.join(shown)})"


class Col(Expr):
    """A reference to the field `name` of the row."""

    __slots__ = ()

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"a field name is a string, not {name!r}")
        super().__init__("col", (), (name,))

    @property
    def name(self) -> str:
        return self.params[0]

    def __reduce__(self) -> Any:
        return (Col, (self.name,))

    def columns(self) -> FrozenSet[str]:
        return frozenset((self.name,))

    def eval(self, row: Mapping[str, Any]) -> Any:
        try:
            value = row[self.name]
        except KeyError:
            raise KeyError(f"the row has no field {self.name!r}; its fields are "
                           f"{list(row)}") from None
        return _as_utc(value) if isinstance(value, _dt.datetime) else value

    def _show(self, top: bool = False) -> str:
        return f"col({self.name!r})"


class Lit(Expr):
    """A constant: a bool, an int within int64, a float, a string or a datetime (naive
    taken as UTC). Never None: nulls come from the data."""

    __slots__ = ()

    def __init__(self, value: Any):
        if value is None:
            raise TypeError("a literal cannot be None: nulls come from the data; test for them "
                            "with .is_null() and replace them with .fill_null(value)")
        if isinstance(value, int) and not isinstance(value, bool) and \
                not INT64_MIN <= value <= INT64_MAX:
            raise TypeError(f"the literal {value} is outside int64")
        if isinstance(value, _dt.datetime):
            value = _as_utc(value)
        elif not isinstance(value, (bool, int, float, str)):
            raise TypeError(f"not a literal: {value!r} (give a bool, int, float, str or "
                            f"datetime, or an expression)")
        super().__init__("lit", (), (value,))

    @property
    def value(self) -> Any:
        return self.params[0]

    def __reduce__(self) -> Any:
        return (Lit, (self.value,))

    def eval(self, row: Mapping[str, Any]) -> Any:
        return self.value

    def _show(self, top: bool = False) -> str:
        return f"lit({self.value!r})"


class Op(Expr):
    """An operator or function (`op`) applied to `args`, with plain `params`."""

    __slots__ = ()


def col(name: str) -> Expr:
    """The field `name` of the row: `col("price") * 2`."""
    return Col(name)


def lit(value: Any) -> Expr:
    """A constant expression: `lit(2)`. Plain values next to an expression become literals
    by themselves (`col("v") * 2`)."""
    return Lit(value)


def _wrap(value: Any, use: str = "") -> Expr:
    if isinstance(value, Expr):
        return value
    if value is None and use == "compare":
        raise TypeError("comparing with None gives null for every row: use .is_null() or "
                        ".is_not_null()")
    if value is None and use == "fill":
        raise TypeError("fill_null needs a value to put in place of nulls, not None")
    return Lit(value)


def _pattern(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} takes a Python string, not {value!r}")
    return value


def _as_utc(value: _dt.datetime) -> _dt.datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=_dt.timezone.utc)
    return value.astimezone(_dt.timezone.utc)


def _operand(e: Expr, literal_bare: bool = True, method: bool = False) -> str:
    """How an operand shows inside a bigger expression: a nested operator in parentheses;
    a literal bare where Python would make it one (the right of an operator)."""
    if isinstance(e, Lit):
        return repr(e.value) if literal_bare else e._show()
    if e.op in BINARY or (method and e.op in UNARY):
        return f"({e._show(True)})"
    return e._show()


# --- types ---

def kind(t: "pa.DataType") -> str:
    """The kind of an Arrow type as expressions see it: "int", "float", "bool", "string",
    "timestamp", or the type's own name for any other."""
    import pyarrow as pa
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return str(t)


def _literal_type(value: Any) -> Any:
    import pyarrow as pa
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        return pa.int64()
    if isinstance(value, float):
        return pa.float64()
    if isinstance(value, str):
        return pa.string()
    return pa.timestamp("us", tz="UTC")


NUMBERS = ("int", "float")
CASTS = {"int64": ("int", "float", "bool"), "float64": ("int", "float", "bool"),
         "string": ("int", "string"), "bool": ("bool",)}


def _infer(e: Expr, schema: Any, types: Dict[int, Any], where: str, whole: Expr) -> Any:
    import pyarrow as pa
    if isinstance(e, Col):
        if e.name not in schema.names:
            fields = ", ".join(f"{f.name}: {f.type}" for f in schema)
            raise PipelineConstructionError(
                f"{where}: {whole!r} reads the field {e.name!r}, which is not in the schema; "
                f"its fields are {fields}")
        result = schema.field(e.name).type
    elif isinstance(e, Lit):
        result = _literal_type(e.value)
    else:
        arg_types = [_infer(a, schema, types, where, whole) for a in e.args]
        kinds = [kind(t) for t in arg_types]

        def refuse(needs: str) -> PipelineConstructionError:
            got = " and ".join(f"{a!r} is {t}" for a, t in zip(e.args, arg_types))
            within = "" if e is whole else f" (in {whole!r})"
            return PipelineConstructionError(f"{where}: {e!r} needs {needs}, but {got}{within}")

        op = e.op
        if op in ("add", "sub", "mul", "neg", "truediv"):
            if any(k not in NUMBERS for k in kinds):
                raise refuse("numbers")
            result = pa.float64() if op == "truediv" or "float" in kinds else pa.int64()
        elif op in COMPARISONS:
            a, b = kinds
            if not (a in NUMBERS and b in NUMBERS
                    or a == b and a in ("bool", "string", "timestamp")):
                raise refuse("two numbers, or two values of one kind (bool, string, timestamp)")
            result = pa.bool_()
        elif op in ("and", "or", "not"):
            if any(k != "bool" for k in kinds):
                raise refuse("bools")
            result = pa.bool_()
        elif op == "cast":
            if kinds[0] not in CASTS[e.params[0]]:
                raise refuse(f"a value that casts to {e.params[0]} "
                             f"({', '.join(CASTS[e.params[0]])})")
            result = pa.type_for_alias(e.params[0])
        elif op in ("is_null", "is_not_null"):
            result = pa.bool_()
        elif op == "fill_null":
            if not (kinds[0] == kinds[1] or kinds == ["float", "int"]):
                raise refuse("a fill value of the same type")
            result = arg_types[0]
        elif op in ("upper", "lower", "length", "startswith", "contains"):
            if kinds[0] != "string":
                raise refuse("a string")
            result = {"upper": arg_types[0], "lower": arg_types[0], "length": pa.int64()}.get(
                op, pa.bool_())
        elif op in TIME_PARTS:
            if kinds[0] != "timestamp":
                raise refuse("a timestamp")
            result = pa.int64()
        else:
            raise PipelineConstructionError(f"{where}: unknown operator {op!r} in {whole!r}")
    types[id(e)] = result
    return result


# --- plain Python ---

def _nullable(f: Callable[..., Any]) -> Callable[..., Any]:
    """`f` over the node's argument values, null when any of them is null."""
    return lambda e, *xs: None if any(x is None for x in xs) else f(e, *xs)


def _divide(e: Expr, a: Any, b: Any) -> Any:
    return None if b == 0 else float(a) / float(b)


def _kleene_and(e: Expr, a: Any, b: Any) -> Any:
    if (a is not None and not a) or (b is not None and not b):
        return False
    return None if a is None or b is None else True


def _kleene_or(e: Expr, a: Any, b: Any) -> Any:
    if (a is not None and a) or (b is not None and b):
        return True
    return None if a is None or b is None else False


def _cast(e: Expr, x: Any) -> Any:
    target = e.params[0]
    if target == "int64":
        if isinstance(x, float):
            whole = math.trunc(x)   # ValueError for NaN, OverflowError for infinity
            if not INT64_MIN <= whole <= INT64_MAX:
                raise OverflowError(f"{x} is outside int64")
            return whole
        return int(x)
    if target == "float64":
        return float(x)
    if target == "string":
        return str(x)
    return x


def _binary(f: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    return _nullable(lambda e, a, b: f(a, b))


_PYTHON: Dict[str, Callable[..., Any]] = {
    "add": _binary(operator.add), "sub": _binary(operator.sub), "mul": _binary(operator.mul),
    "truediv": _nullable(_divide), "neg": _nullable(lambda e, a: -a),
    "eq": _binary(operator.eq), "ne": _binary(operator.ne), "lt": _binary(operator.lt),
    "le": _binary(operator.le), "gt": _binary(operator.gt), "ge": _binary(operator.ge),
    "and": _kleene_and, "or": _kleene_or, "not": _nullable(lambda e, a: not a),
    "cast": _nullable(_cast),
    "is_null": lambda e, a: a is None, "is_not_null": lambda e, a: a is not None,
    "fill_null": lambda e, a, b: b if a is None else a,
    "upper": _nullable(lambda e, a: a.upper()), "lower": _nullable(lambda e, a: a.lower()),
    "length": _nullable(lambda e, a: len(a)),
    "startswith": _nullable(lambda e, a: a.startswith(e.params[0])),
    "contains": _nullable(lambda e, a: e.params[0] in a),
    "year": _nullable(lambda e, a: a.year), "month": _nullable(lambda e, a: a.month),
    "day": _nullable(lambda e, a: a.day), "hour": _nullable(lambda e, a: a.hour),
}


# --- pyarrow.compute ---

def _acast(x: Any, t: Any) -> Any:
    """`x` as Arrow type `t`; int -> float rounds as Python's float() does (a safe cast would
    refuse ints beyond 2**53)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if x.type == t:
        return x
    exact = not (pa.types.is_integer(x.type) and pa.types.is_floating(t))
    return pc.cast(x, t, safe=exact)


def _common(a: Any, b: Any) -> Any:
    """The type two comparable values are compared as."""
    import pyarrow as pa
    if kind(a) in NUMBERS:
        return pa.float64() if "float" in (kind(a), kind(b)) else pa.int64()
    if kind(a) == "timestamp":
        units = ["s", "ms", "us", "ns"]
        return pa.timestamp(max(a.unit, b.unit, key=units.index), tz="UTC")
    return a if a == b else pa.large_string()


def _arrow(e: Expr, data: Any, types: Dict[int, Any]) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc
    if isinstance(e, Col):
        return data.column(e.name)
    if isinstance(e, Lit):
        return pa.scalar(e.value, types[id(e)])
    args = [_arrow(a, data, types) for a in e.args]
    arg_types = [types[id(a)] for a in e.args]
    result_type = types[id(e)]
    op = e.op
    if op in ("add", "sub", "mul"):
        a, b = (_acast(x, result_type) for x in args)
        return getattr(pc, {"add": "add_checked", "sub": "subtract_checked",
                            "mul": "multiply_checked"}[op])(a, b)
    if op == "neg":
        return pc.negate_checked(_acast(args[0], result_type))
    if op == "truediv":
        a, b = (_acast(x, pa.float64()) for x in args)
        return pc.if_else(pc.equal(b, 0.0), pa.scalar(None, pa.float64()), pc.divide(a, b))
    if op in COMPARISONS:
        common = _common(*arg_types)
        a, b = (_acast(x, common) for x in args)
        name = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                "gt": "greater", "ge": "greater_equal"}[op]
        return getattr(pc, name)(a, b)
    if op == "and":
        return pc.and_kleene(*args)
    if op == "or":
        return pc.or_kleene(*args)
    if op == "not":
        return pc.invert(args[0])
    if op == "cast":
        x = args[0]
        if kind(arg_types[0]) == "float" and e.params[0] == "int64":
            x = pc.trunc(x)   # then a safe cast refuses NaN, infinity and values beyond int64
        return _acast(x, result_type)
    if op == "is_null":
        return pc.is_null(args[0])
    if op == "is_not_null":
        return pc.is_valid(args[0])
    if op == "fill_null":
        return pc.coalesce(args[0], _acast(args[1], result_type))
    if op in ("upper", "lower"):
        return getattr(pc, f"utf8_{op}")(args[0])
    if op == "length":
        return _acast(pc.utf8_length(args[0]), pa.int64())
    if op == "startswith":
        return pc.starts_with(args[0], pattern=e.params[0])
    if op == "contains":
        return pc.match_substring(args[0], pattern=e.params[0])
    utc = _acast(args[0], pa.timestamp(arg_types[0].unit, tz="UTC"))
    return _acast(getattr(pc, op)(utc), pa.int64())
