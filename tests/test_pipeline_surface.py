"""Beam's pipeline surface on pomset (issue 60): eager application to plain values, the
`pipeline`, `pvalue` and `coders` names Beam code imports, Impulse and PartitionFn, and
pomset's own answer where it differs from Beam on purpose (tests/beam_suite.py DIFFERENCES)."""
from __future__ import annotations

import pytest

import pomset as beam
from pomset.coders import registry
from pomset.coders.coders import Coder, FastPrimitivesCoder, VarIntCoder
from pomset.options.pipeline_options import PipelineOptions
from pomset.pipeline import Pipeline
from pomset.pvalue import AsSingleton, PValue, Row, TaggedOutput
from pomset.testing.util import assert_that, equal_to


def test_a_transform_applied_to_values_runs_at_once_and_gives_a_list():
    assert [1, 2, 3] | beam.Map(lambda x: x * 2) == [2, 4, 6]
    assert sorted(["a", "b"] | "Upper" >> beam.Map(str.upper)) == ["A", "B"]
    assert [] | beam.CombineGlobally(max).without_defaults() == []
    assert list(range(10)) | beam.CombineGlobally(sum) == [45]
    assert sorted([("a", 1), ("b", 2), ("a", 3)] | beam.GroupByKey()) == [("a", [1, 3]),
                                                                         ("b", [2])]


def test_a_generator_of_values_is_applied_eagerly_too():
    assert sorted((x for x in range(3)) | beam.Map(lambda x: x + 1)) == [1, 2, 3]


def test_a_transform_that_never_calls_init_is_applied():
    class AddSuffix(beam.PTransform):
        def __init__(self, suffix):
            self.suffix = suffix

        def expand(self, pcoll):
            return pcoll | beam.Map(lambda x: x + self.suffix)

    assert sorted(["a", "b"] | AddSuffix("-x")) == ["a-x", "b-x"]


def test_pcollections_in_any_iterable_are_flattened_not_applied_eagerly():
    with Pipeline() as p:
        parts = {"a": p | "A" >> beam.Create([1]), "b": p | "B" >> beam.Create([2])}
        assert_that(parts.values() | beam.Flatten(), equal_to([1, 2]))


def test_impulse_gives_one_empty_bytes_element():
    with beam.Pipeline() as p:
        assert_that(p | beam.Impulse(), equal_to([b""]))


def test_partition_takes_a_partition_fn_and_refuses_a_non_integer_index():
    class ByParity(beam.PartitionFn):
        def partition_for(self, element, num_partitions):
            return element % num_partitions

    with beam.Pipeline() as p:
        even, odd = p | beam.Create([1, 2, 3, 4]) | beam.Partition(ByParity(), 2)
        assert_that(even, equal_to([2, 4]), label="even")
        assert_that(odd, equal_to([1, 3]), label="odd")
    with pytest.raises(Exception, match="PartitionFn yielded a 'True' when it should only "
                                        "yield integers"):
        with beam.Pipeline() as p:
            _ = p | beam.Create([True]) | beam.Partition(lambda x, _: x, 2)


def test_a_map_applied_to_the_pipeline_says_it_got_a_pbegin():
    with pytest.raises(beam.PipelineConstructionError, match=r"Got a PBegin/Pipeline instead"):
        with beam.Pipeline() as p:
            _ = p | beam.Map(print)


def test_pvalue_names():
    p = Pipeline()
    assert PValue(p).pipeline is p
    pcoll = p | beam.Create([1])
    assert isinstance(pcoll, PValue) and pcoll.is_bounded is True
    with pytest.raises(TypeError, match=r"non-string tag \(1, 2\)"):
        TaggedOutput((1, 2), "value")
    assert AsSingleton._from_runtime_iterable([7], {}) == 7
    assert AsSingleton._from_runtime_iterable([], {"default": 0}) == 0
    with pytest.raises(ValueError, match='size 3 with more than one element .* "1", "2"'):
        AsSingleton._from_runtime_iterable(iter([1, 2, 3]), {})


def test_an_assingleton_of_many_values_names_its_pcollection():
    with pytest.raises(Exception, match=r"AsSingleton\(.*\): PCollection of size 2"):
        with beam.Pipeline() as p:
            side = p | "Side" >> beam.Create([1, 2])
            _ = p | beam.Create([0]) | beam.Map(lambda x, s: x + s, AsSingleton(side))


def test_the_coder_registry_gives_the_registered_coder():
    class Point:
        pass

    class PointCoder(Coder):
        pass

    registry.register_coder(Point, PointCoder)
    assert isinstance(registry.get_coder(Point), PointCoder)
    assert isinstance(registry.get_coder(complex), FastPrimitivesCoder)
    assert VarIntCoder().decode(VarIntCoder().encode(-5)) == -5
    with pytest.raises(TypeError, match="Coder subclass"):
        registry.register_coder(Point, int)


def test_beams_add_argparse_args_adds_flags():
    class Bacon(PipelineOptions):
        @classmethod
        def _add_argparse_args(cls, parser):
            parser.add_argument("--slices", type=int)

    assert Bacon(["--slices=3"]).slices == 3


# --- pomset's answers where Beam's tests expect another (DIFFERENCES) -----------------------

def test_a_row_equals_one_with_the_same_fields_in_another_order():
    """Beam's Row compares fields in order; pomset's is a dict of fields."""
    assert Row(a=1, b=2) == Row(b=2, a=1)
    assert Row(a=1, b=2) != Row(a=1, b=2, c=3)


def test_a_repeated_label_is_made_unique():
    """Beam raises RuntimeError for a label used twice (unless --auto_unique_labels);
    pomset numbers the second."""
    p = Pipeline()
    transform = beam.Map(lambda x: x)
    first = p | "A" >> beam.Create([1]) | transform
    second = p | "B" >> beam.Create([2]) | transform
    assert first.producer.label == "Map(<lambda>)"
    assert second.producer.label == "Map(<lambda>)_2"


def test_an_explicit_flag_pomset_does_not_know_is_an_error():
    """Beam drops unknown flags; pomset refuses an explicit one (a typo would be lost)."""
    with pytest.raises(beam.OptionsError, match="unknown option.*--ignored"):
        PipelineOptions(["--ignored"])


def test_a_flatmap_fn_returning_a_str_is_an_error():
    """Beam's FlatMap iterates a str's characters; pomset takes that for a missing list."""
    with pytest.raises(beam.UserCodeError, match="must return an iterable of outputs"):
        with beam.Pipeline() as p:
            _ = p | beam.Create(["abc"]) | beam.FlatMap()
    with beam.Pipeline() as p:
        assert_that(p | beam.Create([[1, 2], [3]]) | beam.FlatMap(), equal_to([1, 2, 3]))


def test_applied_labels_are_the_full_labels_so_far():
    p = Pipeline()
    _ = p | "Read" >> beam.Create([1]) | "Double" >> beam.Map(lambda x: 2 * x)
    assert {"Read", "Double"} <= p.applied_labels


def test_an_eager_multi_output_transform_gives_each_output_by_tag():
    out = [1, 2, 3] | beam.FlatMap(
        lambda x: [x] if x % 2 else [TaggedOutput("even", x)]).with_outputs("even", main="odd")
    odd, even = out
    assert (odd, even) == ([1, 3], [2])
    assert out.even == out["even"] == [2] and out.odd == [1, 3]
    with pytest.raises(KeyError, match="'nope' is not a defined output tag"):
        out.nope
