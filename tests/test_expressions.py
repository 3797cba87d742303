"""Expressions over rows (`pm.col`, `pm.lit`): each operator and function on small rows with
nulls, evaluated in plain Python, with pyarrow.compute and as Spark Columns; the type check
that refuses bad expressions while a pipeline is built; and a differential test of random
type-correct trees, where the three evaluations must agree row for row."""
from __future__ import annotations

import datetime as dt
import math
import pickle
import re
from typing import Any, List, Tuple

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pomset as pm
from pomset.sdk.expressions import Col, Expr, Lit, kind

UTC = dt.timezone.utc
SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.float64()), ("s", pa.string()),
                    ("f", pa.bool_()), ("t", pa.timestamp("us", tz="UTC"))])
T1 = dt.datetime(2020, 2, 29, 13, 5, 7, 123456, tzinfo=UTC)
T2 = dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
ROWS = [pm.Row(a=6, b=2.5, s="Abc", f=True, t=T1),
        pm.Row(a=0, b=0.0, s="x😀é", f=False, t=T2),
        pm.Row(a=None, b=None, s=None, f=None, t=None),
        pm.Row(a=-7, b=-1.5, s="", f=True, t=None)]
TABLE = pa.Table.from_pylist(ROWS, schema=SCHEMA)
col, lit = pm.col, pm.lit

# (expression, its value for each of ROWS)
CASES: List[Tuple[Expr, List[Any]]] = [
    (col("a") + 1, [7, 1, None, -6]),
    (col("a") - col("b"), [3.5, 0.0, None, -5.5]),
    (col("a") * 2, [12, 0, None, -14]),
    (2 * col("a"), [12, 0, None, -14]),
    (10 - col("a"), [4, 10, None, 17]),
    (col("a") / 4, [1.5, 0.0, None, -1.75]),
    (col("a") / col("a"), [1.0, None, None, 1.0]),         # 0 / 0 is null
    (1 / col("b"), [0.4, None, None, -2 / 3]),              # x / 0.0 is null too
    (-col("a"), [-6, 0, None, 7]),
    (col("a") == 6, [True, False, None, False]),
    (col("a") != 6, [False, True, None, True]),
    (col("a") < col("b"), [False, False, None, True]),
    (col("a") <= 0, [False, True, None, True]),
    (col("b") > 0, [True, False, None, False]),
    (col("b") >= 0, [True, True, None, False]),
    (3 < col("a"), [True, False, None, False]),
    (col("s") < "B", [True, False, None, True]),
    (col("f") == True, [True, False, None, True]),  # noqa: E712
    (col("t") > dt.datetime(2000, 1, 1), [True, False, None, None]),
    ((col("a") > 0) & col("f"), [True, False, None, False]),
    ((col("a") > 0) | col("f"), [True, False, None, True]),
    (~col("f"), [False, True, None, False]),
    (col("b").cast("int64"), [2, 0, None, -1]),           # toward zero
    (col("a").cast(pa.float64()), [6.0, 0.0, None, -7.0]),
    (col("a").cast("string"), ["6", "0", None, "-7"]),
    (col("f").cast("int64"), [1, 0, None, 1]),
    (col("a").is_null(), [False, False, True, False]),
    (col("s").is_not_null(), [True, True, False, True]),
    (col("a").fill_null(-1), [6, 0, -1, -7]),
    (col("b").fill_null(0), [2.5, 0.0, 0.0, -1.5]),
    (col("s").fill_null("?"), ["Abc", "x😀é", "?", ""]),
    (col("f").fill_null(col("a") > 0), [True, False, None, True]),
    (col("s").upper(), ["ABC", "X😀É", None, ""]),
    (col("s").lower(), ["abc", "x😀é", None, ""]),
    (col("s").length(), [3, 3, None, 0]),
    (col("s").startswith("A"), [True, False, None, False]),
    (col("s").contains("😀"), [False, True, None, False]),
    (col("s").contains(""), [True, True, None, True]),
    (col("t").year(), [2020, 1969, None, None]),
    (col("t").month(), [2, 12, None, None]),
    (col("t").day(), [29, 31, None, None]),
    (col("t").hour(), [13, 23, None, None]),
    (lit(2) * 3, [6, 6, 6, 6]),
    ((col("a") * 2 > 10) | col("s").startswith("x"), [True, True, None, False]),
]
IDS = [repr(e) for e, _ in CASES]


def same(x: Any, y: Any) -> bool:
    """Equal values, nulls as nulls; floats to a relative tolerance and NaN equal to NaN (NaN
    is a value, not null, in every evaluation)."""
    if x is None or y is None:
        return x is None and y is None
    if isinstance(x, bool) or isinstance(y, bool):
        return type(x) is type(y) and x == y
    if isinstance(x, float) or isinstance(y, float):
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return math.isclose(x, y, rel_tol=1e-9)
    return x == y


def all_same(xs: List[Any], ys: List[Any]) -> bool:
    return len(xs) == len(ys) and all(same(x, y) for x, y in zip(xs, ys))


@pytest.mark.parametrize("expr,expected", CASES, ids=IDS)
def test_plain_python(expr, expected):
    assert all_same([expr.eval(row) for row in ROWS], expected)


@pytest.mark.parametrize("expr,expected", CASES, ids=IDS)
def test_arrow_on_a_table_and_a_batch(expr, expected):
    on_table = expr.to_arrow(TABLE)
    on_batch = expr.to_arrow(TABLE.to_batches()[0])
    assert all_same(on_table.to_pylist(), expected)
    assert all_same(on_batch.to_pylist(), expected)
    assert on_table.type == on_batch.type == expr.output_type(SCHEMA)


def test_spark_agrees_on_every_case(spark_session):
    from pomset.runners.spark.expressions import to_spark
    out = spark_session.createDataFrame(TABLE).select(
        *[to_spark(e, SCHEMA).alias(f"e{i}") for i, (e, _) in enumerate(CASES)]).toArrow()
    for i, (expr, expected) in enumerate(CASES):
        assert all_same(out.column(i).to_pylist(), expected), expr
        assert kind(out.schema.field(i).type) == kind(expr.output_type(SCHEMA)), expr


KLEENE = pa.table({"p": [True, True, True, False, False, False, None, None, None],
                   "q": [True, False, None, True, False, None, True, False, None]})
AND = [True, False, None, False, False, False, None, False, None]
OR = [True, True, True, True, False, None, True, None, None]
NOT_P = [False, False, False, True, True, True, None, None, None]


def test_and_or_not_are_three_valued(spark_session):
    from pomset.runners.spark.expressions import to_spark
    p, q = col("p"), col("q")
    rows = KLEENE.to_pylist()
    spark = spark_session.createDataFrame(KLEENE).select(
        *[to_spark(e, KLEENE.schema) for e in (p & q, p | q, ~p)]).toArrow()
    for i, (expr, expected) in enumerate([(p & q, AND), (p | q, OR), (~p, NOT_P)]):
        assert [expr.eval(r) for r in rows] == expected
        assert expr.to_arrow(KLEENE).to_pylist() == expected
        assert spark.column(i).to_pylist() == expected


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_division_by_zero_is_null_in_spark_with_and_without_ansi(spark_session, ansi):
    from pomset.runners.spark.expressions import to_spark
    before = spark_session.conf.get("spark.sql.ansi.enabled")
    spark_session.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        exprs = [col("a") / 0, col("b") / col("a"), (col("a") / 0).is_null()]
        out = spark_session.createDataFrame(TABLE).select(
            *[to_spark(e, SCHEMA) for e in exprs]).toArrow()
    finally:
        spark_session.conf.set("spark.sql.ansi.enabled", before)
    assert out.column(0).to_pylist() == [None] * 4
    assert out.column(1).to_pylist() == [2.5 / 6, None, None, -1.5 / -7]
    assert out.column(2).to_pylist() == [True] * 4


NAN = pa.table({"x": pa.array([float("nan"), 1.0, None], pa.float64())})


def test_nan_is_a_value_that_compares_as_in_python(spark_session):
    from pomset.runners.spark.expressions import to_spark
    x = col("x")
    cases = [(x == x, [False, True, None]), (x != 1.0, [True, False, None]),
             (x < 2, [False, True, None]), (x >= 1, [False, True, None]),
             (x.is_null(), [False, False, True]), (x.fill_null(0.0) > 0, [False, True, False])]
    rows = NAN.to_pylist()
    spark = spark_session.createDataFrame(NAN).select(
        *[to_spark(e, NAN.schema) for e, _ in cases]).toArrow()
    for i, (expr, expected) in enumerate(cases):
        assert [expr.eval(r) for r in rows] == expected, expr
        assert expr.to_arrow(NAN).to_pylist() == expected, expr
        assert spark.column(i).to_pylist() == expected, expr


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e19])
def test_a_float_with_no_int64_value_fails_every_cast(spark_session, value):
    from pomset.runners.spark.expressions import to_spark
    table = pa.table({"x": pa.array([1.5, value], pa.float64())})
    expr = col("x").cast("int64")
    with pytest.raises((ValueError, OverflowError)):
        expr.eval({"x": value})
    with pytest.raises(pa.ArrowInvalid):
        expr.to_arrow(table)
    with pytest.raises(Exception, match="cannot cast to int64"):
        spark_session.createDataFrame(table).select(to_spark(expr, table.schema)).collect()


def test_a_constant_is_repeated_to_the_data_length():
    assert lit("k").to_arrow(TABLE).to_pylist() == ["k"] * 4
    assert (lit(1) + 2).to_arrow(TABLE.slice(0, 0)).to_pylist() == []


def test_output_type():
    assert (col("a") + 1).output_type(SCHEMA) == pa.int64()
    assert (col("a") + 1.0).output_type(SCHEMA) == pa.float64()
    assert (col("a") / 2).output_type(SCHEMA) == pa.float64()
    assert col("t").fill_null(dt.datetime(2000, 1, 1)).output_type(SCHEMA) == SCHEMA.field("t").type
    narrow = pa.schema([("i", pa.int32()), ("g", pa.float32())])
    assert (col("i") * col("i")).output_type(narrow) == pa.int64()
    assert (col("g") + col("i")).output_type(narrow) == pa.float64()
    assert col("i").fill_null(0).output_type(narrow) == pa.int32()


def test_columns_are_the_fields_read():
    assert ((col("a") * 2 > col("b")) & col("s").is_null()).columns() == {"a", "b", "s"}
    assert lit(1).columns() == frozenset()


def test_check_names_the_missing_field_and_the_schemas_fields():
    with pytest.raises(pm.PipelineConstructionError) as info:
        (col("price") * 2 > 10).check(SCHEMA, "Filter(expensive)")
    message = str(info.value)
    assert message.startswith("Filter(expensive): ")
    assert "'price'" in message and "(col('price') * 2) > 10" in message
    assert "a: int64, b: double, s: string, f: bool, t: timestamp[us, tz=UTC]" in message


@pytest.mark.parametrize("expr,needs", [
    (col("s") * 2, "numbers"),
    (-col("t"), "numbers"),
    (col("f") + 1, "numbers"),
    (col("s") == 1, "two numbers, or two values of one kind"),
    (col("t") < "2020", "two numbers, or two values of one kind"),
    (col("a") & col("f"), "bools"),
    (~col("a"), "bools"),
    (col("s").cast("int64"), "a value that casts to int64"),
    (col("b").cast("string"), "a value that casts to string"),
    (col("a").cast("bool"), "a value that casts to bool"),
    (col("t").cast("int64"), "a value that casts to int64"),
    (col("a").fill_null(0.5), "a fill value of the same type"),
    (col("s").fill_null(0), "a fill value of the same type"),
    (col("a").upper(), "a string"),
    (col("a").startswith("1"), "a string"),
    (col("s").hour(), "a timestamp"),
])
def test_check_refuses_ill_typed_expressions(expr, needs):
    with pytest.raises(pm.PipelineConstructionError, match="^Map\\(x\\): ") as info:
        expr.check(SCHEMA, "Map(x)")
    assert needs in str(info.value)
    with pytest.raises(pm.PipelineConstructionError):
        expr.to_arrow(TABLE)
    whole = expr.is_null() | col("f")
    with pytest.raises(pm.PipelineConstructionError, match=re.escape(f"(in {whole!r})")):
        whole.check(SCHEMA, "Map(x)")


def test_check_passes_well_typed_expressions():
    for expr, _ in CASES:
        expr.check(SCHEMA, "Map(x)")


@pytest.mark.parametrize("build,message", [
    (lambda: col("a") == None, "is_null"),  # noqa: E711
    (lambda: lit(None), "nulls come from the data"),
    (lambda: col("a").fill_null(None), "fill_null needs a value"),
    (lambda: col("a").cast("timestamp"), "cannot cast to 'timestamp'"),
    (lambda: col("a").cast("date32"), "cannot cast to"),
    (lambda: col("s").startswith(1), "startswith takes a Python string"),
    (lambda: col("a") + [1], "not a literal"),
    (lambda: lit(2**63), "outside int64"),
    (lambda: col(3), "a field name is a string"),
    (lambda: bool(col("a") > 1), "combine conditions with &, | and ~"),
    (lambda: (col("a") > 1) and True, "combine conditions with &, | and ~"),
])
def test_construction_errors(build, message):
    with pytest.raises(TypeError, match=message.replace("(", "\\(").replace("|", "\\|")):
        build()


@pytest.mark.parametrize("expr,text", [
    (col("v") * 2 > 10, "(col('v') * 2) > 10"),
    (2 * col("v"), "lit(2) * col('v')"),
    ((col("a") > 1) & ~col("f"), "(col('a') > 1) & ~col('f')"),
    (-(col("a") + 1), "-(col('a') + 1)"),
    ((col("a") + 1).cast("float64"), "(col('a') + 1).cast('float64')"),
    (col("s").upper().startswith("A"), "col('s').upper().startswith('A')"),
    (col("a").fill_null(0), "col('a').fill_null(0)"),
    (lit("x"), "lit('x')"),
])
def test_repr(expr, text):
    assert repr(expr) == text


def test_structure_is_immutable_hashable_and_walkable():
    e = (col("v") * 2) > 10
    assert e.op == "gt" and e.args[0].op == "mul" and e.args[0].args[0].name == "v"
    assert isinstance(e.args[1], Lit) and e.args[1].value == 10
    assert isinstance(e.args[0].args[0], Col)
    assert e.equals((col("v") * 2) > 10) and hash(e) == hash((col("v") * 2) > 10)
    assert not e.equals((col("v") * 2) > 11) and not lit(1).equals(lit(True))
    assert len({lit(1), lit(1.0), lit(True)}) == 3
    with pytest.raises(AttributeError, match="immutable"):
        e.op = "lt"
    back = pickle.loads(pickle.dumps(e))
    assert back.equals(e) and type(back.args[0].args[0]) is Col


def test_exported_from_pomset():
    assert {"col", "lit", "Expr"} <= set(pm.__all__)
    assert isinstance(pm.col("a"), pm.Expr)


# --- differential: random type-correct trees, three evaluations -----------------------------

INT_BOUND = 2**53          # ints stay exact as floats and far from int64 overflow
ALPHABET = "aAbBzZ09 éÉжЖ😀"
KINDS = ["int", "float", "bool", "string", "timestamp"]


def _leaf(draw, want: str) -> Tuple[Expr, float]:
    """A field or a literal of kind `want`, with a bound on its magnitude (numbers)."""
    if want == "int":
        return draw(st.sampled_from([(col("a"), 10**6)]) |
                    st.integers(-100, 100).map(lambda i: (lit(i), abs(i))))
    if want == "float":
        return draw(st.sampled_from([(col("b"), 10**6)]) |
                    st.floats(-100, 100).map(lambda x: (lit(x), abs(x))))
    if want == "bool":
        return draw(st.sampled_from([(col("f"), 0)]) | st.booleans().map(lambda x: (lit(x), 0)))
    if want == "string":
        return draw(st.sampled_from([(col("s"), 0)]) |
                    st.text(ALPHABET, max_size=3).map(lambda x: (lit(x), 0)))
    return draw(st.sampled_from([(col("t"), 0)]) |
                st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1),
                             timezones=st.just(UTC)).map(lambda x: (lit(x), 0)))


@st.composite
def trees(draw, want: str, depth: int) -> Tuple[Expr, float]:
    """A type-correct expression of kind `want`, at most `depth` deep, and a bound on its
    magnitude: ints stay within INT_BOUND; a float's bound is infinite once it may be anything
    (after a division), and such a float is never cast to int."""
    if depth <= 1 or draw(st.integers(0, 3)) == 0:
        return _leaf(draw, want)
    sub = lambda k: trees(k, depth - 1)  # noqa: E731
    if want == "int":
        choice = draw(st.sampled_from(["+", "-", "*", "neg", "cast_float", "cast_bool",
                                       "length", "time", "fill"]))
        if choice in ("+", "-", "*"):
            (x, bx), (y, by) = draw(sub("int")), draw(sub("int"))
            bound = bx * by if choice == "*" else bx + by
            if bound > INT_BOUND:
                return _leaf(draw, want)
            return {"+": x + y, "-": x - y, "*": x * y}[choice], bound
        if choice == "neg":
            x, bx = draw(sub("int"))
            return -x, bx
        if choice == "cast_float":
            x, bx = draw(sub("float"))
            return (x.cast("int64"), bx) if bx < INT_BOUND else _leaf(draw, want)
        if choice == "cast_bool":
            return draw(sub("bool"))[0].cast("int64"), 1
        if choice == "length":
            return draw(sub("string"))[0].length(), 100
        if choice == "time":
            part = draw(st.sampled_from(["year", "month", "day", "hour"]))
            return getattr(draw(sub("timestamp"))[0], part)(), 3000
        (x, bx), (y, by) = draw(sub("int")), draw(sub("int"))
        return x.fill_null(y), max(bx, by)
    if want == "float":
        choice = draw(st.sampled_from(["+", "-", "*", "/", "neg", "cast_int", "cast_bool",
                                       "fill"]))
        if choice in ("+", "-", "*", "/"):
            kinds = draw(st.sampled_from([("float", "float"), ("float", "int"),
                                          ("int", "float")] + ([("int", "int")] if choice == "/"
                                                               else [])))
            (x, bx), (y, by) = draw(sub(kinds[0])), draw(sub(kinds[1]))
            bound = {"+": bx + by, "-": bx + by, "*": bx * by, "/": math.inf}[choice]
            return {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[choice], bound
        if choice == "neg":
            x, bx = draw(sub("float"))
            return -x, bx
        if choice == "cast_int":
            x, bx = draw(sub("int"))
            return x.cast("float64"), bx
        if choice == "cast_bool":
            return draw(sub("bool"))[0].cast("float64"), 1
        (x, bx), (y, by) = draw(sub("float")), draw(sub(draw(st.sampled_from(["float", "int"]))))
        return x.fill_null(y), max(bx, by)
    if want == "bool":
        choice = draw(st.sampled_from(["cmp_num", "cmp_same", "&", "|", "~", "null",
                                       "string", "fill"]))
        if choice == "cmp_num":
            x = draw(sub(draw(st.sampled_from(["int", "float"]))))[0]
            y = draw(sub(draw(st.sampled_from(["int", "float"]))))[0]
            return _compare(draw, x, y), 0
        if choice == "cmp_same":
            k = draw(st.sampled_from(["bool", "string", "timestamp"]))
            return _compare(draw, draw(sub(k))[0], draw(sub(k))[0]), 0
        if choice in ("&", "|"):
            x, y = draw(sub("bool"))[0], draw(sub("bool"))[0]
            return (x & y if choice == "&" else x | y), 0
        if choice == "~":
            return ~draw(sub("bool"))[0], 0
        if choice == "null":
            x = draw(sub(draw(st.sampled_from(KINDS))))[0]
            return (x.is_null() if draw(st.booleans()) else x.is_not_null()), 0
        if choice == "string":
            x, pattern = draw(sub("string"))[0], draw(st.text(ALPHABET, max_size=2))
            return (x.startswith(pattern) if draw(st.booleans()) else x.contains(pattern)), 0
        return draw(sub("bool"))[0].fill_null(draw(sub("bool"))[0]), 0
    if want == "string":
        choice = draw(st.sampled_from(["upper", "lower", "cast_int", "fill"]))
        if choice == "upper":
            return draw(sub("string"))[0].upper(), 0
        if choice == "lower":
            return draw(sub("string"))[0].lower(), 0
        if choice == "cast_int":
            return draw(sub("int"))[0].cast("string"), 0
        return draw(sub("string"))[0].fill_null(draw(sub("string"))[0]), 0
    return draw(sub("timestamp"))[0].fill_null(draw(sub("timestamp"))[0]), 0


def _compare(draw, x: Expr, y: Expr) -> Expr:
    op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
    return {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


rows = st.lists(st.fixed_dictionaries({
    "a": st.none() | st.integers(-10**6, 10**6),
    "b": st.none() | st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    "s": st.none() | st.text(ALPHABET, max_size=6),
    "f": st.none() | st.booleans(),
    "t": st.none() | st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1),
                                  timezones=st.just(UTC)),
}), min_size=1, max_size=6)
expressions = st.lists(st.sampled_from(KINDS).flatmap(lambda k: trees(k, 4)),
                       min_size=1, max_size=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(rows=rows, exprs=expressions)
def test_python_arrow_and_spark_agree(spark_session, rows, exprs):
    from pomset.runners.spark.expressions import to_spark
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    exprs = [e for e, _ in exprs]
    spark = spark_session.createDataFrame(table).select(
        *[to_spark(e, SCHEMA).alias(f"e{i}") for i, e in enumerate(exprs)]).toArrow()
    for i, expr in enumerate(exprs):
        python = [expr.eval(pm.Row(r)) for r in rows]
        arrow = expr.to_arrow(table)
        assert arrow.type == expr.output_type(SCHEMA), expr
        assert all_same(arrow.to_pylist(), python), (expr, arrow.to_pylist(), python)
        spark_values = spark.column(i).to_pylist()
        assert kind(spark.schema.field(i).type) == kind(arrow.type), expr
        assert all_same(spark_values, python), (expr, spark_values, python)
