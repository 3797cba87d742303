"""pomset's TestStream as Beam's: its events (`_events`, compared as Beam's), outputs named by
a tag, each stamping its elements by its own watermark and moving by the least of them,
elements kept in their window (`WindowedValueHolder`), and the errors of impossible events
(AssertionErrors, as Beam's, and ValueErrors)."""
from __future__ import annotations

import pytest

import pomset as pm
from conftest import runner_flags
from pomset.testing.test_stream import (ElementEvent, ProcessingTimeEvent, TestStream,
                                        WatermarkEvent, WindowedValueHolder)
from pomset.testing.util import assert_that, equal_to, equal_to_per_window
from pomset.utils.windowed_value import WindowedValue
from pomset.window import IntervalWindow, TimestampedValue


def _pipeline(runner: str = "local") -> pm.Pipeline:
    return pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + ["--quiet"]))


def test_the_events_are_beams():
    stream = (TestStream().advance_watermark_to(2).add_elements(["a", TimestampedValue("b", 5)])
              .advance_processing_time(3).advance_watermark_to(4, tag="t"))
    assert stream._events == [
        WatermarkEvent(2), ElementEvent([TimestampedValue("a", 2), TimestampedValue("b", 5)]),
        ProcessingTimeEvent(3), WatermarkEvent(4, tag="t")]
    assert stream.output_tags == {None, "t"}


@pytest.mark.parametrize("runner", ["local", "local-processes", "spark-streaming"])
def test_tagged_outputs_get_their_elements_at_their_own_watermark(runner, request):
    if runner.startswith("spark"):
        request.getfixturevalue("spark_session")
    stream = (TestStream()
              .advance_watermark_to(5, tag="letters").add_elements(["a", "b"], tag="letters")
              .advance_watermark_to(10, tag="numbers").add_elements(["1"], tag="numbers")
              .add_elements([TimestampedValue("c", 7)], tag="letters"))
    p = _pipeline(runner)
    outputs = p | stream
    assert sorted(outputs) == ["letters", "numbers"]
    stamped = {tag: outputs[tag] | f"Stamp {tag}" >> pm.Map(
        lambda e, ts=pm.DoFn.TimestampParam: (e, ts.micros // 10**6)) for tag in outputs}
    assert_that(stamped["letters"], equal_to([("a", 5), ("b", 5), ("c", 7)]), label="letters")
    assert_that(stamped["numbers"], equal_to([("1", 10)]), label="numbers")
    p.run()


def test_the_outputs_watermark_is_the_least_of_the_tags():
    """numbers' watermark is at 20 while letters' is at 5: a window of numbers ending at 15
    closes only when letters' watermark passes it too, so 'x' (at 12) is not late."""
    stream = (TestStream()
              .advance_watermark_to(5, tag="letters").advance_watermark_to(20, tag="numbers")
              .add_elements([TimestampedValue("x", 12)], tag="numbers")
              .advance_watermark_to(30, tag="letters"))
    p = _pipeline()
    grouped = (p | stream)["numbers"] | pm.WindowInto(pm.FixedWindows(15)) \
        | pm.Map(lambda e: ("k", e)) | pm.GroupByKey()
    assert_that(grouped, equal_to_per_window({IntervalWindow(0, 15): [("k", ["x"])]}))
    p.run()


def test_a_held_windowed_value_keeps_its_window():
    held = WindowedValueHolder(WindowedValue("a", 5, [IntervalWindow(5, 10)]))
    stream = TestStream().advance_watermark_to(1).add_elements([held, "b"])
    p = _pipeline()
    out = p | stream | pm.Map(lambda e, w=pm.DoFn.WindowParam: (e, w))
    assert_that(out, equal_to([("a", IntervalWindow(5, 10)), ("b", pm.GlobalWindow())]))
    p.run()


def test_a_windowed_value_without_windows_gives_its_value_and_time():
    stream = TestStream().add_elements([WindowedValue("b", 3, [])])
    assert stream._events == [ElementEvent([TimestampedValue("b", 3)])]


def test_impossible_events_are_assertion_and_value_errors():
    for error in (AssertionError, ValueError):
        with pytest.raises(error, match="must not go back"):
            TestStream().advance_watermark_to(5).advance_watermark_to(4)
        with pytest.raises(error, match="positive"):
            TestStream().advance_processing_time(0)
        with pytest.raises(error, match="end of time"):
            TestStream().add_elements([TimestampedValue("a", pm.MAX_TIMESTAMP)])
    with pytest.raises(ValueError, match="must not go back"):
        TestStream().advance_watermark_to(5, tag="t").advance_watermark_to(4, tag="t")


def test_early_panes_of_tagged_outputs_on_pomset():
    """pomset's answer to Beam's test_multiple_outputs_with_watermark_advancement
    (DIFFERENCES): each tag's elements in the window of its own watermark, an early pane per
    element (the trigger is asked after each), then the empty ON_TIME pane."""
    stream = (TestStream()
              .advance_watermark_to(0, tag="letters").advance_watermark_to(0, tag="numbers")
              .advance_watermark_to(20, tag="numbers").advance_watermark_to(5, tag="letters")
              .add_elements([TimestampedValue(x, t) for x, t in [("a", 6), ("b", 7), ("c", 8)]],
                            tag="letters")
              .advance_watermark_to(10, tag="letters")
              .add_elements([TimestampedValue(x, t) for x, t in [("1", 21), ("2", 22)]],
                            tag="numbers")
              .advance_watermark_to(30, tag="numbers"))
    p = _pipeline()
    outputs = p | stream
    for tag, window, values in [("letters", IntervalWindow(0, 15), ["a", "b", "c"]),
                                ("numbers", IntervalWindow(15, 30), ["1", "2"])]:
        grouped = (outputs[tag]
                   | f"{tag} windows" >> pm.WindowInto(
                       pm.FixedWindows(15), trigger=pm.AfterWatermark(early=pm.AfterCount(1)),
                       accumulation_mode=pm.AccumulationMode.DISCARDING)
                   | f"{tag} key" >> pm.Map(lambda x: ("k", x))
                   | f"{tag} gbk" >> pm.GroupByKey())
        assert_that(grouped, equal_to_per_window(
            {window: [("k", [v]) for v in values] + [("k", [])]}), label=tag)
    p.run()
