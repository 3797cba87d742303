"""How a transform is applied, as Beam applies it (issue 60): to tuples, dicts and lists of
PCollections or values, chained (`t1 | t2`), replaced after the fact (`PTransformOverride`),
with Beam's labels, errors and DoFn parameters."""
from __future__ import annotations

import pytest

import pomset as beam
from pomset.pipeline import Pipeline, PTransformOverride
from pomset.testing.util import SortLists, assert_that, equal_to
from pomset.typehints import TypeCheckError


def test_plain_values_in_tuples_and_dicts_become_creates_and_run_at_once():
    assert sorted(([1, 2], [3]) | beam.Flatten()) == [1, 2, 3]
    joined = ([("k", "a")], [("k", "c"), ("k", "b")]) | beam.CoGroupByKey() | SortLists
    assert joined == [("k", (["a"], ["b", "c"]))]

    class Twice(beam.PTransform):
        def expand(self, pcoll):
            return {"once": pcoll, "twice": (pcoll, pcoll) | beam.Flatten()}

    out = [1, 2] | Twice()
    assert sorted(out["once"]) == [1, 2] and sorted(out["twice"]) == [1, 1, 2, 2]


def test_pcollections_in_a_tuple_stay_in_their_pipeline():
    with Pipeline() as p:
        a, b = p | "A" >> beam.Create([1]), p | "B" >> beam.Create([2])
        assert_that((a, [3]) | beam.Flatten(), equal_to([1, 3]))
        keyed = {"a": a | "KA" >> beam.Map(lambda x: ("k", x)),
                 "b": b | "KB" >> beam.Map(lambda x: ("k", x))}
        assert_that(keyed | beam.CoGroupByKey(), equal_to([("k", {"a": [1], "b": [2]})]),
                    label="joined")


def test_flatten_of_nothing_needs_a_pipeline_and_of_a_non_iterable_is_a_value_error():
    with pytest.raises(ValueError, match="requires a pipeline"):
        () | beam.Flatten()
    with pytest.raises(ValueError, match="must be an iterable"):
        4 | beam.Flatten()
    with Pipeline() as p:
        assert_that(() | beam.Flatten(pipeline=p), equal_to([]))


def test_chained_transforms_are_one_composite():
    with Pipeline() as p:
        t = "Pair" >> beam.Map(lambda x: (x, 1)) | beam.GroupByKey() | beam.MapTuple(
            lambda k, ones: (k, sum(ones)))
        assert_that(p | beam.Create(["a", "b", "a"]) | t, equal_to([("a", 2), ("b", 1)]))
    assert any(label.startswith("Pair|GroupByKey|MapTuple(<lambda>)/Pair")
               for label in p.applied_labels)


def test_flatten_with_and_tee():
    seen = []
    with Pipeline(runner="local", argv=["--workers=1"]) as p:
        words = p | beam.Create(["A", "B"])
        out = (words
               | beam.FlattenWith(words | beam.Map(str.lower), beam.Create(["x"]))
               | beam.Tee(beam.Map(seen.append), lambda pc: pc | "Len" >> beam.Map(len)))
        assert_that(out, equal_to(["A", "B", "a", "b", "x"]))
    assert sorted(seen) == ["A", "B", "a", "b", "x"]


class _Double(beam.PTransform):
    def expand(self, pcoll):
        return pcoll | "Inner" >> beam.Map(lambda x: 2 * x)


class _Triple(beam.PTransform):
    def expand(self, pcoll):
        return pcoll | "Inner" >> beam.Map(lambda x: 3 * x)


class _Replace(PTransformOverride):
    def matches(self, applied):
        return isinstance(applied.transform, _Double)

    def get_replacement_transform(self, transform):
        return _Triple()


def test_an_override_replaces_a_composite_in_place():
    p = Pipeline()
    doubled = p | beam.Create([1, 2]) | "Multiply" >> _Double()
    assert_that(doubled | "Plus" >> beam.Map(lambda x: x + 1), equal_to([4, 7]))
    p.replace_all([_Replace()])
    assert "Multiply/Inner" in p.applied_labels
    assert [n.label for n in p.nodes].count("Multiply/Inner") == 1
    p.run()


def test_maptuple_passes_extra_arguments_and_context_parameters():
    with Pipeline() as p:
        pairs = p | beam.Create([("a", 1)])
        side = beam.AsSingleton(p | "Side" >> beam.Create([10]))
        fn = (lambda k, v, t=beam.DoFn.TimestampParam, n=0, m=0: (k, v + n + m,
                                                                    t == beam.MIN_TIMESTAMP))
        assert_that(pairs | "Static" >> beam.MapTuple(fn, 1, 2), equal_to([("a", 4, True)]),
                    label="static")
        assert_that(pairs | "Side" >> beam.MapTuple(fn, m=side), equal_to([("a", 11, True)]),
                    label="side")
        assert_that(pairs | beam.FlatMapTuple(lambda k, v, n=0: [k] * (v + n), 1),
                    equal_to(["a", "a"]), label="flat")


def test_key_and_windowed_value_parameters():
    with Pipeline() as p:
        pairs = p | beam.Create([("a", 1), ("b", 2)])
        assert_that(pairs | beam.Map(lambda _, key=beam.DoFn.KeyParam: key),
                    equal_to(["a", "b"]))
        assert_that(pairs | "WV" >> beam.Map(
            lambda _, wv=beam.DoFn.WindowedValueParam: (wv.value, wv.windows)),
            equal_to([(("a", 1), [beam.GlobalWindow()]), (("b", 2), [beam.GlobalWindow()])]),
            label="wv")


def test_what_a_flatmap_or_dofn_returns_must_be_an_iterable():
    with pytest.raises(beam.UserCodeError, match="FlatMap and ParDo must return an iterable"):
        with Pipeline() as p:
            _ = p | beam.Create([1]) | beam.FlatMap(lambda x: x + 1)
    with pytest.raises(beam.UserCodeError, match="Returning a dict from a ParDo or FlatMap"):
        with Pipeline() as p:
            _ = p | beam.Create([1]) | beam.FlatMap(lambda x: {x: 1})


def test_start_bundle_must_not_return_a_value_and_a_dofn_class_is_not_a_dofn():
    class Starts(beam.DoFn):
        def start_bundle(self):
            return [1]

        def process(self, element):
            yield element

    with pytest.raises(RuntimeError, match="start_bundle must not return a value"):
        with Pipeline() as p:
            _ = p | beam.Create([1]) | beam.ParDo(Starts())
    with pytest.raises(ValueError, match="construct it"):
        beam.ParDo(Starts)
    with Pipeline() as p:
        assert_that(p | beam.Create([2]) | beam.ParDo(lambda x: [x, x]), equal_to([2, 2]))


def test_a_grouping_of_non_pairs_is_a_type_check_error_and_a_construction_error():
    with pytest.raises(TypeCheckError, match="Input type hint violation at G") as e:
        with Pipeline() as p:
            _ = p | beam.Create([1, 2]) | "G" >> beam.GroupByKey()
    assert isinstance(e.value, beam.PipelineConstructionError)


def test_a_transform_applied_to_nothing_says_so():
    class Nothing(beam.PTransform):
        def expand(self, pcoll):
            return None

    with pytest.raises(TypeCheckError, match="applied to the output"):
        with Pipeline() as p:
            _ = p | Nothing() | beam.Map(str)


def test_labels_and_descriptions_as_beams():
    assert str(beam.PTransform()) == "<PTransform(PTransform) label=[PTransform]>"
    p = Pipeline()
    out = p | "Start" >> beam.Impulse()
    assert str(out.producer) == "AppliedPTransform(Start, Impulse)"
    _ = out | beam.Map(len) | beam.CombineGlobally(sum)
    assert {"Map(len)", "CombineGlobally(sum)"} <= p.applied_labels
    t = beam.Map(len).with_resource_hints(min_ram="1GB").with_resource_hints(accelerator="x")
    assert t.get_resource_hints() == {"beam:resources:min_ram_bytes:v1": b"1000000000",
                                      "beam:resources:accelerator:v1": b"x"}
