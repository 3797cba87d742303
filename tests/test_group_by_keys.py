"""GroupBy's keys as Beam's GroupBy gives them (issue 60): one key field's value, a named
tuple of several (or of one, with `force_tuple_keys`), `()` for `GroupBy()`; the same from
the columnar path; and pomset's own answer where it differs from Beam on purpose
(tests/beam_suite.py DIFFERENCES)."""
from __future__ import annotations

import pickle

import pyarrow as pa
import pyarrow.parquet as pq

import pomset as beam
from pomset.sdk.group_keys import key_type
from pomset.testing.util import assert_that, equal_to


def _grouped(key, values):
    return key, sorted(values)


def test_a_key_is_one_fields_value_or_a_named_tuple_of_several():
    with beam.Pipeline() as p:
        nums = p | beam.Create(range(4))
        one = nums | "One" >> beam.GroupBy(lambda x: x % 2) | "S1" >> beam.MapTuple(_grouped)
        forced = (nums | "Forced" >> beam.GroupBy(parity=lambda x: x % 2).force_tuple_keys()
                  | "S2" >> beam.MapTuple(lambda k, vs: (type(k)._fields, tuple(k))))
        every = nums | "All" >> beam.GroupBy() | "S3" >> beam.MapTuple(_grouped)
        assert_that(one, equal_to([(0, [0, 2]), (1, [1, 3])]), label="one")
        assert_that(forced, equal_to([(("parity",), (0,)), (("parity",), (1,))]),
                    label="forced")
        assert_that(every, equal_to([((), [0, 1, 2, 3])]), label="all")


def test_a_key_pickles_as_its_names_and_values():
    key = key_type(["square", "sign"])(4, -1)
    again = pickle.loads(pickle.dumps(key))
    assert again == (4, -1) and type(again)._fields == ("square", "sign")
    assert again.square == 4 and hash(again) == hash(key)


def test_the_columnar_path_gives_the_element_paths_keys(tmp_path):
    path = str(tmp_path / "rows.parquet")
    pq.write_table(pa.table({"k": ["a", "b", "a"], "n": [1, 2, 3]}), path)
    with beam.Pipeline() as p:
        rows = p | beam.ReadFromParquet(path)
        one = (rows | "One" >> beam.GroupBy("k")
               | "S1" >> beam.MapTuple(lambda k, vs: (k, sorted(r.n for r in vs))))
        two = (rows | "Two" >> beam.GroupBy("k", "n")
               | "S2" >> beam.MapTuple(lambda k, vs: (type(k)._fields, tuple(k), len(vs))))
        assert_that(one, equal_to([("a", [1, 3]), ("b", [2])]), label="one")
        assert_that(two, equal_to([(("k", "n"), ("a", 1), 1), (("k", "n"), ("b", 2), 1),
                                   (("k", "n"), ("a", 3), 1)]), label="two")


class _Token:
    """A key field whose objects are equal only to themselves (no __eq__)."""

    def __init__(self, value: str) -> None:
        self.value = value


def test_keys_group_by_equality_not_by_their_encoding():
    # DIFFERENCES TestGroupBy.test_pickled_field: Beam groups by the key's encoded bytes,
    # pomset by == and hash, so two equal-looking objects without __eq__ are two keys
    tokens = [_Token("a"), _Token("a")]
    with beam.Pipeline() as p:
        out = (p | beam.Create(tokens) | beam.Map(lambda t: beam.Row(key=t, v=1))
               | beam.GroupBy("key") | beam.MapTuple(lambda k, vs: (k.value, len(vs))))
        assert_that(out, equal_to([("a", 1), ("a", 1)]))


def test_an_aggregations_output_is_a_row_of_the_keys_and_aggregates():
    # DIFFERENCES TestGroupBy.test_aggregate: Beam gives a named tuple, pomset a Row (what
    # sinks and the columnar runners read), whose fields are the keys then the aggregates
    with beam.Pipeline() as p:
        out = (p | beam.Create([1, 2, 3]) | beam.Map(lambda x: beam.Row(k=x % 2, v=x))
               | beam.GroupBy("k").aggregate_field("v", sum, "total")
               | beam.Map(lambda r: (type(r).__name__, list(r.items()))))
        assert_that(out, equal_to([("Row", [("k", 1), ("total", 4)]),
                                   ("Row", [("k", 0), ("total", 2)])]))
