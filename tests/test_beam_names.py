"""Beam code runs after `import apache_beam as beam` becomes `import pomset as beam`, for what
pomset supports, written here as Beam's documentation and examples write it: its modules
(`beam.window`, `beam.trigger`, `beam.combiners`, `beam.pvalue`, `beam.io`,
`beam.transforms`, `beam.options.pipeline_options`, `beam.testing.util`), its shorthand
transforms and runner names; a Beam name pomset lacks fails naming what is missing."""
from __future__ import annotations

import re

import pytest

import pomset as beam
from pomset.options.pipeline_options import (GoogleCloudOptions, PipelineOptions, SetupOptions,
                                             StandardOptions, TypeOptions)
from pomset.runners import runner
from pomset.testing.test_pipeline import TestPipeline
from pomset.testing.util import assert_that, equal_to
from pomset.transforms import trigger, window
from pomset.transforms.combiners import Count, Top


def test_wordcount_as_beams_example_writes_it(tmp_path):
    """The shape of Beam's wordcount_minimal: read, split, count per element, format, write."""
    (tmp_path / "kinglear.txt").write_text("to be or not to be\nthat is the question\n")
    options = PipelineOptions(["--runner=DirectRunner"])
    options.view_as(SetupOptions).save_main_session = True
    assert options.view_as(StandardOptions).runner == "local"
    with beam.Pipeline(options=options) as p:
        lines = p | beam.io.ReadFromText(str(tmp_path / "kinglear.txt"))
        counts = (lines
                  | "Split" >> beam.FlatMap(lambda x: re.findall(r"[A-Za-z\']+", x))
                  | "PairWithOne" >> beam.Map(lambda x: (x, 1))
                  | "GroupAndSum" >> beam.CombinePerKey(sum))
        output = counts | "Format" >> beam.MapTuple(lambda word, count: f"{word}: {count}")
        output | beam.io.WriteToText(str(tmp_path / "counts"))
        assert_that(output, equal_to(["to: 2", "be: 2", "or: 1", "not: 1", "that: 1",
                                      "is: 1", "the: 1", "question: 1"]))
    written = (tmp_path / "counts-00000-of-00001").read_text().splitlines()
    assert sorted(written) == sorted(["to: 2", "be: 2", "or: 1", "not: 1", "that: 1", "is: 1",
                                      "the: 1", "question: 1"])


def test_windowing_triggers_and_combiners_from_their_modules():
    scores = [("alice", 3, 10), ("bob", 5, 20), ("alice", 4, 70), ("carol", 1, 75)]
    with TestPipeline() as p:
        events = (p | beam.Create(scores)
                  | beam.Map(lambda e: window.TimestampedValue((e[0], e[1]), e[2])))
        windowed = events | beam.WindowInto(
            window.FixedWindows(window.Duration(seconds=60)),
            trigger=trigger.AfterWatermark(early=trigger.AfterCount(1)),
            accumulation_mode=trigger.AccumulationMode.DISCARDING)
        per_user = windowed | beam.combiners.Count.PerKey()
        # an early pane per event, and the on-time pane Beam always fires (empty: discarding)
        assert_that(per_user | "firsts" >> beam.Filter(lambda kv: kv[0] == "alice"),
                    equal_to([("alice", 1), ("alice", 0), ("alice", 1), ("alice", 0)]),
                    label="alice per window")
        users = events | "users" >> beam.Map(lambda kv: kv[0])
        assert_that(users | Count.PerElement(),
                    equal_to([("alice", 2), ("bob", 1), ("carol", 1)]), label="per element")
        points = events | "points" >> beam.Map(lambda kv: kv[1])
        assert_that(points | Top.Largest(2), equal_to([[5, 4]]), label="top")
        assert_that(points | "smallest" >> Top.Smallest(1), equal_to([[1]]), label="bottom")
        assert_that(points | beam.combiners.Count.Globally(), equal_to([4]), label="count")
        assert_that(events | beam.combiners.Latest.Globally(), equal_to([("carol", 1)]),
                    label="latest")
        keyed = points | beam.WithKeys(lambda v: v % 2)
        assert_that(keyed | "reshuffled" >> beam.Reshuffle(),
                    equal_to([(1, 3), (1, 5), (0, 4), (1, 1)]), label="with keys")


def test_side_inputs_and_tagged_outputs_from_pvalue():
    class Split(beam.DoFn):
        def process(self, x, limit):
            yield x if x <= limit else beam.pvalue.TaggedOutput("big", x)

    with TestPipeline() as p:
        limit = p | "limit" >> beam.Create([2])
        out = (p | beam.Create([1, 2, 3, 4])
               | beam.ParDo(Split(), beam.pvalue.AsSingleton(limit)).with_outputs("big",
                                                                                  main="small"))
        assert_that(out.small, equal_to([1, 2]), label="small")
        assert_that(out.big, equal_to([3, 4]), label="big")
    assert isinstance(out.small, beam.pvalue.PCollection)


def test_beam_names_pomset_lacks_fail_naming_what_is_missing():
    with pytest.raises(AttributeError, match=r"Sample combiners are in pomset.combiners"):
        beam.Sample
    with pytest.raises(AttributeError, match="Beam's apache_beam.transforms.window.Calendar"):
        window.CalendarWindows
    with pytest.raises(AttributeError, match="Beam's apache_beam.io.ReadFromBigQuery"):
        beam.io.ReadFromBigQuery
    assert beam.Timestamp.now().micros > 0
    assert beam.Duration(seconds=1.5).micros == 1_500_000


def test_what_beams_examples_use_beyond_the_basics():
    """Names Beam's examples and tests use (tests/test_beam_examples.py runs them): Google
    Cloud and type flags read through views, type hints, a combine as a singleton side input,
    a Map returning a WindowedValue, a window printed as Beam prints it, Beam's other module
    names."""
    options = PipelineOptions(["--project=p", "--allow_unsafe_triggers", "--temp_location=/t"])
    assert options.view_as(GoogleCloudOptions).project == "p"
    assert options.view_as(TypeOptions).allow_unsafe_triggers
    assert PipelineOptions([]).view_as(GoogleCloudOptions).project is None
    assert PipelineOptions(["--runner=FnApiRunner"]).runner == "local"
    split = beam.ParDo(beam.DoFn()).with_output_types(str)
    assert split.type_hints.simple_output() is str
    with TestPipeline() as p:
        nums = p | beam.Create([1, 2, 3, 10])
        mean = nums | beam.CombineGlobally(beam.combiners.MeanCombineFn()).as_singleton_view()
        assert_that(nums | beam.Filter(lambda x, m: x > m, mean), equal_to([10]))
        nothing = (p | "nothing" >> beam.Create([])
                   | "sum" >> beam.CombineGlobally(sum).as_singleton_view())
        assert_that(nums | beam.Map(lambda x, s: x + s, nothing), equal_to([1, 2, 3, 10]),
                    label="default")
        at_ten_times = beam.Map(lambda x: window.WindowedValue(x, x * 10, [window.GlobalWindow()]))
        timed = (nums | "timed" >> at_ten_times
                 | beam.Map(lambda x, t=beam.DoFn.TimestampParam: (x, int(t))))
        assert_that(timed, equal_to([(1, 10), (2, 20), (3, 30), (10, 100)]), label="timed")
    with pytest.raises(ValueError, match="one WindowedValue per window"):
        window.WindowedValue(1, 0, [window.IntervalWindow(0, 1), window.IntervalWindow(1, 2)])
    assert "%s" % window.IntervalWindow(-2, 2.5) == "[-2.0, 2.5)"
    assert trigger.Always().continuation() == trigger.Always()
    assert trigger._Never is trigger.Never
    assert beam.utils.timestamp.MAX_TIMESTAMP is beam.MAX_TIMESTAMP
    assert beam.utils.windowed_value.PaneInfoTiming.EARLY is beam.PaneTiming.EARLY
    assert beam.transforms.core.DoFn is beam.DoFn
    assert runner.PipelineResult is type(p.result)
    with pytest.raises(AttributeError, match=r"Beam's apache_beam\.runners\.runner\.PipelineSt"):
        runner.PipelineState


def test_beams_keyword_names_are_taken(tmp_path):
    """Beam's keywords for the same parameters: windowfn=, gap_size=, file_pattern=,
    skip_header_lines=, file_path_prefix=, num_shards= (0 or 1), shard_name_template= and
    default_value=."""
    (tmp_path / "in.txt").write_text("header\nb a\na\n")
    with beam.Pipeline(options=beam.PipelineOptions(["--quiet"])) as p:
        (p | beam.io.ReadFromText(file_pattern=str(tmp_path / "*.txt"), skip_header_lines=1)
         | beam.FlatMap(str.split)
         | beam.Map(lambda w: beam.window.TimestampedValue(w, 5))
         | beam.WindowInto(windowfn=beam.window.Sessions(gap_size=10))
         | beam.combiners.Count.PerElement()
         | beam.MapTuple(lambda word, n: f"{word}: {n}")
         | "Unwindowed" >> beam.WindowInto(beam.window.GlobalWindows())
         | beam.io.WriteToText(file_path_prefix=str(tmp_path / "counts"), num_shards=1,
                               shard_name_template="", file_name_suffix=".txt"))
    assert sorted((tmp_path / "counts.txt").read_text().splitlines()) == ["a: 2", "b: 1"]
    sink = beam.io.WriteToText(str(tmp_path / "o"), ".txt", shard_name_template="-SS-of-NNN")
    assert sink.path == str(tmp_path / "o-00-of-001.txt")
    with pytest.raises(ValueError, match=r"num_shards=4\): pomset writes one file per sink"):
        beam.io.WriteToText(str(tmp_path / "o"), num_shards=4)
    assert beam.pvalue.AsSingleton(beam.Pipeline() | beam.Create([]), default_value=0).default == 0
    with pytest.raises(TypeError, match="both file_pattern= .* and pattern="):
        beam.io.ReadFromText(file_pattern="a", pattern="b")


def test_a_shard_name_template_names_sparks_parquet_shards(tmp_path, spark_session):
    import pyarrow.parquet as pq
    with beam.Pipeline(options=beam.PipelineOptions(["--quiet", "--runner=spark"])) as p:
        (p | beam.Create([beam.Row(k="a", v=1), beam.Row(k="b", v=2)])
         | beam.io.WriteToParquet(str(tmp_path / "rows"), ".parquet", shard_name_template=""))
    assert sorted(r["k"] for r in pq.read_table(tmp_path / "rows.parquet").to_pylist()) == [
        "a", "b"]
