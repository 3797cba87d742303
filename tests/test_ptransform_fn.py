"""Beam's `@ptransform_fn`, its type hints (`pomset.typehints`), PTransforms that never call
`super().__init__()`, and multiple outputs as Beam gives them (issue 60)."""
import typing

import pytest

import pomset as beam
from pomset import typehints
from pomset.options.pipeline_options import PipelineOptions
from pomset.testing.test_pipeline import TestPipeline
from pomset.testing.util import assert_that, equal_to
from pomset.typehints import with_input_types, with_output_types


@beam.ptransform_fn
def AddSuffix(pcoll, suffix="!"):
    return pcoll | beam.Map(lambda s: s + suffix)


def test_ptransform_fn_applies_as_a_composite_named_for_the_function():
    with TestPipeline() as p:
        words = p | beam.Create(["a", "b"])
        out = words | AddSuffix()
        long = words | "Long" >> AddSuffix("looooooooooooooooooooong")
        labelled = words | AddSuffix("?")
        assert_that(out, equal_to(["a!", "b!"]), label="plain")
        assert_that(labelled, equal_to(["a?", "b?"]), label="arg")
        assert_that(long, equal_to(["a" + "looooooooooooooooooooong",
                                    "b" + "looooooooooooooooooooong"]), label="long")
    assert {"AddSuffix", "AddSuffix(?)", "Long"} <= p.applied_labels


def test_a_type_hints_parameter_gets_the_declared_hints():
    seen = []

    @beam.ptransform_fn
    def Hinted(pcoll, type_hints):
        seen.append(type_hints.output_types)
        return pcoll

    with TestPipeline() as p:
        _ = p | beam.Create([1]) | Hinted().with_output_types(int)
    assert seen == [((int,), {})]


def test_a_ptransform_that_never_calls_super_init_works():
    class NoInit(beam.PTransform):
        def __init__(self, n):
            self.n = n

        def expand(self, pcoll):
            return pcoll | beam.Map(lambda x: x * self.n)

    with TestPipeline() as p:
        assert_that(p | beam.Create([1, 2]) | NoInit(3), equal_to([3, 6]))
    assert "NoInit" in p.applied_labels


def test_decorators_record_hints_on_functions_dofns_and_combinefns():
    @with_input_types(int)
    @with_output_types(str)
    def show(x):
        return str(x)

    @with_input_types(typehints.KV[str, int])
    class Fn(beam.DoFn):
        def process(self, kv):
            yield kv

    from pomset.sdk.type_hints import declared_hints
    assert declared_hints(show).simple_input() is int
    assert declared_hints(show).simple_output() is str
    assert declared_hints(Fn()).simple_input() == typing.Tuple[str, int]
    with pytest.raises(TypeError, match="not a type hint"):
        with_input_types(3)


def test_consistency_of_hints():
    ok = typehints.is_consistent_with
    assert ok(int, typehints.Any) and ok(typehints.Any, int)
    assert ok(bool, int) and not ok(str, int)
    assert ok(typing.Tuple[int, str], typehints.Tuple[int, typehints.Any])
    assert not ok(typing.Tuple[int, str], typehints.Tuple[int, int])
    assert ok(typing.Tuple[int, int], typehints.Tuple[int, ...])
    assert ok(typing.List[bool], typehints.Iterable[int])
    assert ok(typehints.Union[int, bool], int) and not ok(typehints.Union[int, str], int)
    assert ok(int, typehints.Optional[int]) and ok(None, typehints.Optional[int])


def test_outputs_by_tag_attribute_and_undeclared_tags():
    with TestPipeline() as p:
        nums = p | beam.Create([1, 2, 3, 4])
        results = nums | beam.FlatMap(
            lambda x: [x, beam.TaggedOutput("even" if x % 2 == 0 else "odd", x),
                       beam.TaggedOutput("dropped", x)]).with_outputs()
        assert_that(results[None], equal_to([1, 2, 3, 4]), label="main")
        assert_that(results.odd, equal_to([1, 3]), label="odd")
        assert_that(results["even"], equal_to([2, 4]), label="even")
        even, odd = nums | "Split" >> beam.Map(
            lambda x: beam.TaggedOutput("even" if x % 2 == 0 else "odd", x)).with_outputs(
                "even", "odd")
        main, small = nums | "Small" >> beam.Map(
            lambda x: beam.TaggedOutput("small", x) if x < 3 else x).with_outputs(
                "small", main="big")
        assert_that(even, equal_to([2, 4]), label="unpacked even")
        assert_that(odd, equal_to([1, 3]), label="unpacked odd")
        assert_that(main, equal_to([3, 4]), label="big")
        assert_that(small, equal_to([1, 2]), label="small")


def test_partition_fn_and_labelled_keys():
    class ByThree(beam.PartitionFn):
        def partition_for(self, element, num_partitions, offset):
            return element % 3 + offset

    with TestPipeline() as p:
        parts = p | beam.Create(range(6)) | beam.Partition(ByThree(), 4, 1)
        assert_that(parts[0], equal_to([]), label="p0")
        assert_that(parts[1], equal_to([0, 3]), label="p1")
        kvs = p | "kvs" >> beam.Create([(1, "a"), (2, "b")])
        assert_that(kvs.apply(beam.Keys("k")), equal_to([1, 2]), label="keys")
    assert "k" in p.applied_labels


def test_a_default_label_as_an_earlier_beam_release_gave_it():
    @beam.ptransform_fn
    def Tag(pcoll, suffix):
        return pcoll | beam.Map(lambda s: s + suffix)

    long = "x" * 30
    p = beam.Pipeline()
    p | beam.Create(["a"]) | Tag(long)
    assert "Tag(xxxxxxxxxx...xxxxxx)" in p.applied_labels
    old = beam.Pipeline(options=PipelineOptions(update_compatibility_version="2.67.0"))
    old | beam.Create(["a"]) | Tag(long)
    assert f"Tag({long})" in old.applied_labels
