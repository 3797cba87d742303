"""Beam's construction-time type check on pomset: declared input types checked against what
the input gives, PCollection.element_type inferred through the core transforms, and the
opt-in run-time check."""
import typing

import pytest

import pomset as beam
from pomset import typehints
from pomset.options.pipeline_options import PipelineOptions
from pomset.sdk.type_check import UNSET
from pomset.sdk.type_inference import infer_return_type
from pomset.testing.util import assert_that, equal_to
from pomset.typehints import TypeCheckError, with_input_types, with_output_types


def test_a_declared_input_type_is_checked_as_the_pipeline_is_built():
    p = beam.Pipeline()
    nums = p | beam.Create([1, 2, 3])
    with pytest.raises(TypeCheckError, match=r"The transform 'Up' requires PCollections of "
                                             r"type '<class 'str'>' but was applied to a "
                                             r"PCollection of type '<class 'int'>'"):
        nums | "Up" >> beam.Map(lambda s: s.upper()).with_input_types(str)
    with pytest.raises(TypeCheckError, match=r"Input type hint violation at G: expected "
                                             r"Tuple\[TypeVariable\[K\], TypeVariable\[V\]\]"):
        nums | "G" >> beam.GroupByKey()


def test_annotations_and_decorators_declare_a_functions_types():
    def length(s: str) -> int:
        return len(s)

    @with_input_types(a=int)
    @with_output_types(typing.List[str])
    def digits(a):
        return list(str(a))

    p = beam.Pipeline()
    words = p | beam.Create(["ab", "c"])
    assert (words | beam.Map(length)).element_type is int
    with pytest.raises(TypeCheckError, match="requires.*int.*applied.*str"):
        words | beam.FlatMap(digits)
    assert (p | "N" >> beam.Create([12]) | beam.FlatMap(digits)).element_type is str


def test_element_types_are_inferred_through_the_core_transforms():
    p = beam.Pipeline()
    created = p | beam.Create(["a", "b"])
    pairs = created | beam.Map(lambda x: (x, 1))
    grouped = pairs | beam.GroupByKey()
    summed = pairs | beam.CombinePerKey(sum)
    counted = created | beam.combiners.Count.Globally()
    assert created.element_type is str
    assert pairs.element_type == typehints.KV[str, int]
    assert grouped.element_type == typing.Tuple[str, typing.Iterable[int]]
    assert summed.element_type == typing.Tuple[str, typing.Any]
    assert counted.element_type is int
    assert (created | beam.Filter(lambda x: x > "a")).element_type is str
    mixed = p | "Mixed" >> beam.Create([1, "x"])
    assert mixed.element_type == typing.Union[int, str]


def test_type_variables_bind_to_what_the_input_gives():
    K = typehints.TypeVariable("K")
    p = beam.Pipeline()
    out = (p | beam.Create([("a", 1)])
           | beam.Map(lambda kv: kv).with_input_types(typing.Tuple[K, int])
           .with_output_types(typing.Tuple[K, str]))
    assert out.element_type == typing.Tuple[str, str]
    unbound = (p | "B" >> beam.Create([1])
               | beam.Map(lambda x: x).with_output_types(typing.Tuple[K, str]))
    assert unbound.element_type == typing.Tuple[typing.Any, str]


def test_a_composites_output_must_fit_its_declared_type():
    @beam.ptransform_fn
    def Strs(pcoll):
        return pcoll | beam.Map(str).with_output_types(str)

    p = beam.Pipeline()
    with pytest.raises(TypeCheckError, match="Output type hint violation at Strs: expected "
                                             "<class 'int'>, got <class 'str'>"):
        p | beam.Create([1]) | Strs().with_output_types(int)


def test_element_types_are_worked_out_only_when_asked():
    p = beam.Pipeline()
    mapped = p | beam.Create(range(1000)) | beam.Map(lambda x: x)
    assert mapped.known_type is UNSET
    assert mapped.element_type is int


def test_no_pipeline_type_check_turns_it_off():
    p = beam.Pipeline(options=PipelineOptions(["--no_pipeline_type_check"]))
    nums = p | beam.Create([1])
    nums | beam.Map(lambda s: s.upper()).with_input_types(str)
    assert nums.element_type is None


def test_all_required_strictness_asks_every_transform_for_an_output_type():
    p = beam.Pipeline(options=PipelineOptions(["--type_check_strictness=ALL_REQUIRED"]))
    with pytest.raises(TypeCheckError, match=r"no output type-hint was found for the "
                                             r"PTransform Create\(Nums\)"):
        p | "Nums" >> beam.Create([1])


def test_bytecode_inference_follows_straight_line_code_only():
    assert infer_return_type(lambda x: (x, 1.5, None), [str]) == \
        typing.Tuple[str, float, type(None)]
    assert infer_return_type(lambda kv: kv[1], [typing.Tuple[str, int]]) is int
    assert infer_return_type(lambda x: [x, x], [int]) == typing.List[int]
    assert infer_return_type(lambda x: x if x else 0, [int]) is typing.Any
    assert infer_return_type(lambda x: x.upper(), [str]) is typing.Any


def test_the_runtime_type_check_checks_each_element():
    options = PipelineOptions(["--runtime_type_check", "--no_pipeline_type_check"])
    with pytest.raises(Exception, match=r"Runtime type violation detected within "
                                         r"ParDo\(ToInt\): According to type-hint expected "
                                         r"output should be of type <class 'int'>"):
        with beam.Pipeline(options=options) as p:
            _ = (p | beam.Create([1, 2])
                 | "ToInt" >> beam.Map(lambda x: float(x)).with_input_types(int)
                 .with_output_types(int))
    with beam.Pipeline(options=options) as p:
        out = p | beam.Create([1, 2]) | beam.Map(lambda x: x + 1).with_input_types(int)
        assert_that(out, equal_to([2, 3]))


def test_a_parallel_do_of_a_function_runs_it_as_a_flat_map():
    with beam.Pipeline() as p:
        out = p | beam.Create([1, 2]) | beam.ParDo(lambda x: [x, -x])
        assert_that(out, equal_to([1, -1, 2, -2]))


def test_arithmetic_on_numbers_is_inferred():
    assert infer_return_type(lambda a: a * 2, [int]) is int
    assert infer_return_type(lambda a: a / 2, [int]) is float
    assert infer_return_type(lambda a, b: a - b, [int, float]) is float
    assert infer_return_type(lambda a: a + "!", [str]) is str
    assert infer_return_type(lambda a: a % 2, [str]) is typing.Any


class _Split(beam.DoFn):
    def process(self, element: int) -> typing.Iterable[
            typing.Union[int, beam.TaggedOutput[typing.Literal["odd"], str]]]:
        if element % 2:
            yield beam.TaggedOutput("odd", str(element))
        else:
            yield 10 // element


def test_tagged_outputs_and_dead_letters_carry_their_types():
    p = beam.Pipeline()
    nums = p | beam.Create([0, 1, 2])
    out = nums | "A" >> beam.ParDo(_Split()).with_outputs("odd", main="main")
    assert out.main.element_type is int and out.odd.element_type is str
    chained = nums | "B" >> beam.ParDo(lambda x: [x]).with_output_types(int, odd=str) \
        .with_outputs("odd", main="main")
    assert chained.main.element_type is int and chained.odd.element_type is str
    q = beam.Pipeline()
    good, bad = q | beam.Create([0, 1]) | beam.ParDo(_Split()).with_exception_handling()
    assert good.element_type is int and bad.element_type == beam.DeadLetter[int]
    assert_that(bad | beam.Keys(), equal_to([0]))   # a dead letter is a (key, value) pair
    q.run()
    legacy = beam.Pipeline(options=PipelineOptions(update_compatibility_version="2.72.0"))
    _, old_bad = (legacy | beam.Create([1]) | beam.ParDo(_Split()).with_exception_handling())
    assert old_bad.element_type is typing.Any


def test_a_replacement_declaring_no_output_type_keeps_the_replaced_ones():
    class Double(beam.PTransform):
        def expand(self, pcoll):
            return pcoll | beam.Map(lambda a: a * 2)

    class Show(beam.PTransform):
        def expand(self, pcoll):
            return pcoll | beam.Map(lambda a: format(a))

    class Override(beam.pipeline.PTransformOverride):
        def __init__(self, replacement):
            self.replacement = replacement

        def matches(self, applied):
            return isinstance(applied.transform, Double)

        def get_replacement_transform_for_applied_ptransform(self, applied):
            return self.replacement

    for replacement, expected in [(Show(), int), (Show().with_output_types(str), str)]:
        p = beam.Pipeline()
        out = p | beam.Create([1, 2]) | "D" >> Double() | "Id" >> beam.Map(lambda x: x)
        p.replace_all([Override(replacement)])
        assert out.producer.inputs[0].element_type is expected
