"""Expressions (`pomset.sdk.expressions`) compiled to Spark Columns, with the rules every
evaluation follows (see that module): nulls propagate, `/` by zero is null, NaN compares as
Python compares it (never equal, never ordered), integer arithmetic is int64, a literal int is
an int64, time parts read timestamps in UTC. Written for the columnar batch plan
(`columns.py`); `to_spark(expr, schema)` takes the Arrow schema of the rows it reads."""
from __future__ import annotations

from typing import Any, Dict

from ...sdk.expressions import COMPARISONS, TIME_PARTS, Col, Expr, Lit, kind

_SPARK_TYPES = {"int64": "long", "float64": "double", "string": "string", "bool": "boolean"}
_COMPARE = {"eq": "__eq__", "ne": "__ne__", "lt": "__lt__", "le": "__le__", "gt": "__gt__",
            "ge": "__ge__"}


def spark_type(t: Any) -> str:
    """The Spark SQL type name an expression of Arrow type `t` computes in."""
    k = kind(t)
    return {"int": "long", "float": "double", "bool": "boolean", "string": "string"}.get(
        k, "timestamp" if k == "timestamp" else str(t))


def to_spark(expr: Expr, schema: Any) -> Any:
    """`expr` as a Spark Column over rows of the Arrow `schema`."""
    types = expr._types(schema, "to_spark")
    return _compile(expr, types)


def _compile(e: Expr, types: Dict[int, Any]) -> Any:
    from pyspark.sql import functions as F
    if isinstance(e, Col):
        return F.col(e.name)
    if isinstance(e, Lit):
        value = e.value
        if isinstance(value, bool) or isinstance(value, str):
            return F.lit(value)
        if isinstance(value, int):
            return F.lit(value).cast("long")
        if isinstance(value, float):
            return F.lit(value).cast("double")
        return F.lit(value).cast("timestamp")
    args = [_compile(a, types) for a in e.args]
    kinds = [kind(types[id(a)]) for a in e.args]
    out = types[id(e)]
    op = e.op
    if op in ("add", "sub", "mul"):
        t = spark_type(out)
        a, b = (x.cast(t) for x in args)
        return {"add": a + b, "sub": a - b, "mul": a * b}[op]
    if op == "neg":
        return -args[0].cast(spark_type(out))
    if op == "truediv":
        a, b = (x.cast("double") for x in args)
        return F.when(b == 0.0, F.lit(None).cast("double")).otherwise(a / b)
    if op in COMPARISONS:
        a, b = args
        if kinds[0] in ("int", "float") and kinds[1] in ("int", "float"):
            common = "double" if "float" in kinds else "long"
            a, b = a.cast(common), b.cast(common)
        result = getattr(a, _COMPARE[op])(b)
        if "float" in kinds:   # NaN is never equal nor ordered (Spark orders it above all)
            nan = F.isnan(a) | F.isnan(b)
            result = F.when(nan & a.isNotNull() & b.isNotNull(), F.lit(op == "ne")) \
                .otherwise(result)
        return result
    if op == "and":
        return args[0] & args[1]
    if op == "or":
        return args[0] | args[1]
    if op == "not":
        return ~args[0]
    if op == "cast":
        return args[0].cast(_SPARK_TYPES[e.params[0]])
    if op == "is_null":
        return args[0].isNull()
    if op == "is_not_null":
        return args[0].isNotNull()
    if op == "fill_null":
        return F.coalesce(args[0], args[1].cast(spark_type(out)))
    if op == "upper":
        return F.upper(args[0])
    if op == "lower":
        return F.lower(args[0])
    if op == "length":
        return F.length(args[0]).cast("long")
    if op == "startswith":
        return args[0].startswith(F.lit(e.params[0]))
    if op == "contains":
        return args[0].contains(F.lit(e.params[0]))
    if op in TIME_PARTS:
        t = types[id(e.args[0])]
        if getattr(t, "tz", None) is None:   # a naive time is UTC already (TIMESTAMP_NTZ)
            x = args[0]
            day = x
        else:   # in UTC whatever the session's time zone: from the instant's µs
            micros = F.unix_micros(args[0])
            day = F.date_from_unix_date(F.floor(micros / 86_400_000_000).cast("int"))
            if op == "hour":
                return F.pmod(F.floor(micros / 3_600_000_000), F.lit(24)).cast("long")
            x = day
        fn = {"year": F.year, "month": F.month, "day": F.dayofmonth, "hour": F.hour}[op]
        return fn(x if op == "hour" else day).cast("long")
    raise ValueError(f"no Spark compilation for the operator {op!r}")
