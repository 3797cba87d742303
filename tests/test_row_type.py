"""Beam's RowTypeConstraint on pomset: the element type of a Create of Rows, of a NamedTuple
or dataclass, and how it meets declared input types."""
import dataclasses
import typing

import pytest

import pomset as beam
from pomset.typehints import TypeCheckError
from pomset.typehints.row_type import RowTypeConstraint


class Point(typing.NamedTuple):
    x: int
    y: float


@dataclasses.dataclass
class Named:
    name: str


def test_a_create_of_rows_gives_their_row_type():
    p = beam.Pipeline()
    rows = p | beam.Create([beam.Row(a=1, b="x"), beam.Row(a=None, b="y")])
    assert rows.element_type == RowTypeConstraint.from_fields(
        [("a", typing.Optional[int]), ("b", str)])
    assert (p | "Mixed" >> beam.Create([beam.Row(a=1), beam.Row(a="s")])).element_type == \
        RowTypeConstraint.from_fields([("a", typing.Union[int, str])])
    assert (p | "Other" >> beam.Create([beam.Row(a=1), beam.Row(b=1)])).element_type \
        is beam.Row
    with pytest.raises(TypeError, match="No types found for field"):
        beam.Create([beam.Row(a=None)]).infer_output_type(None)


def test_a_row_type_fits_a_row_hint_and_no_other():
    p = beam.Pipeline()
    rows = p | beam.Create([beam.Row(a=1)])
    rows | beam.Map(lambda r: r.a).with_input_types(beam.Row)
    rows | "Same" >> beam.Map(lambda r: r.a).with_input_types(
        RowTypeConstraint.from_fields([("a", int)]))
    with pytest.raises(TypeCheckError, match=r"Row\(a=<class 'int'>\)"):
        rows | "Int" >> beam.Map(lambda r: r).with_input_types(int)


def test_a_named_tuple_or_dataclass_has_a_row_type():
    point = RowTypeConstraint.from_user_type(Point)
    assert point == RowTypeConstraint.from_fields([("x", int), ("y", float)])
    assert point.user_type is Point and point.get_type_for("y") is float
    assert RowTypeConstraint.from_user_type(Named).user_type is Named
    assert RowTypeConstraint.from_user_type(int) is None
