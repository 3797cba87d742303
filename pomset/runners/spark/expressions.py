"""Expressions (`pomset.sdk.expressions`) compiled to Spark Columns, with the values plain
Python and pyarrow give: `x / 0` is null and a bad float -> int cast an error whether or not
ANSI mode is on, NaN compares as in Python (Spark orders it above every number), and a
timestamp's year ... hour are read in UTC whatever the session's time zone."""
from __future__ import annotations

from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from ...sdk.expressions import COMPARISONS, NUMBERS, Col, Expr, Lit, kind

DAY_MICROS = 86_400_000_000
HOUR_MICROS = 3_600_000_000
TWO_TO_63 = 9.223372036854775808e18


def to_spark(expr: Expr, schema: Any) -> Column:
    """`expr` as a Spark Column over a DataFrame whose rows have the Arrow `schema` (the
    PCollection's); checked against it first, as types decide how some operators compile."""
    expr.check(schema, "to_spark")
    return _compile(expr, schema)


def spark_type(t: Any) -> str:
    """The Spark SQL type (DDL name) that holds values of the Arrow type `t`."""
    import pyarrow as pa
    names = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int",
             pa.int64(): "bigint", pa.float32(): "float", pa.float64(): "double",
             pa.bool_(): "boolean", pa.string(): "string", pa.large_string(): "string"}
    if t in names:
        return names[t]
    if pa.types.is_timestamp(t):
        return "timestamp"
    raise TypeError(f"no Spark type for the Arrow type {t} in an expression")


def _compile(e: Expr, schema: Any) -> Column:
    if isinstance(e, Col):
        return F.col("`" + e.name.replace("`", "``") + "`")
    if isinstance(e, Lit):
        return F.lit(e.value).cast(spark_type(e.output_type(schema)))
    args = [_compile(a, schema) for a in e.args]
    kinds = [kind(a.output_type(schema)) for a in e.args]
    result = spark_type(e.output_type(schema))
    op = e.op
    if op in ("add", "sub", "mul"):
        a, b = (x.cast(result) for x in args)
        return a + b if op == "add" else a - b if op == "sub" else a * b
    if op == "neg":
        return -args[0].cast(result)
    if op == "truediv":   # null for a zero divisor, ANSI or not
        return F.try_divide(args[0].cast("double"), args[1].cast("double"))
    if op in COMPARISONS:
        return _compare(op, args, kinds)
    if op == "and":
        return args[0] & args[1]
    if op == "or":
        return args[0] | args[1]
    if op == "not":
        return ~args[0]
    if op == "cast":
        x = args[0]
        if kinds[0] == "float" and result == "bigint":
            bad = F.isnan(x) | (x >= F.lit(TWO_TO_63)) | (x < F.lit(-TWO_TO_63))
            return F.when(bad, F.raise_error(F.concat(F.lit("cannot cast to int64: "),
                                                      x.cast("string")))) \
                .otherwise(x.cast("bigint"))
        return x.cast(result)
    if op == "is_null":
        return args[0].isNull()
    if op == "is_not_null":
        return args[0].isNotNull()
    if op == "fill_null":
        return F.coalesce(args[0], args[1].cast(result))
    if op == "upper":
        return F.upper(args[0])
    if op == "lower":
        return F.lower(args[0])
    if op == "length":
        return F.char_length(args[0]).cast("bigint")
    if op == "startswith":
        return args[0].startswith(e.params[0])
    if op == "contains":
        return args[0].contains(e.params[0])
    return _time_part(op, args[0]).cast("bigint")   # year, month, day, hour


def _compare(op: str, args: list, kinds: list) -> Column:
    """A comparison; numbers as bigint or double, and with a float operand NaN is unequal
    and unordered to everything (Spark would have NaN = NaN and NaN above every number)."""
    a, b = args
    if kinds[0] in NUMBERS and kinds[1] in NUMBERS:
        common = "double" if "float" in kinds else "bigint"
        a, b = a.cast(common), b.cast(common)
    compared = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b,
                "ge": a >= b}[op]
    if "float" not in kinds:
        return compared
    return (F.when(a.isNull() | b.isNull(), F.lit(None).cast("boolean"))
            .when(F.isnan(a) | F.isnan(b), F.lit(op == "ne"))
            .otherwise(compared))


def _time_part(op: str, t: Column) -> Column:
    """year, month, day or hour of a timestamp in UTC, from its microseconds since the epoch
    (Spark's own functions read it in the session's time zone)."""
    micros = F.unix_micros(t)
    within_day = F.pmod(micros, F.lit(DAY_MICROS))
    if op == "hour":
        return F.floor(within_day / F.lit(HOUR_MICROS))
    days = F.round((micros - within_day) / F.lit(DAY_MICROS)).cast("int")
    date = F.date_from_unix_date(days)
    return {"year": F.year, "month": F.month, "day": F.dayofmonth}[op](date)
