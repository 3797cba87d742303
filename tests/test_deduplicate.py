"""pomset's Deduplicate and DeduplicatePerKey (Beam's `transforms.deduplicate`): the first of
equal elements in a window passes, the key forgotten after its event-time duration; on every
local mode and Spark batch."""
from __future__ import annotations

import pytest

import pomset as pm
from conftest import runner_flags
from pomset.testing.test_stream import TestStream
from pomset.testing.util import assert_that, equal_to
from pomset.transforms import deduplicate
from pomset.window import TimestampedValue


def _stamped(pcoll: pm.PCollection) -> pm.PCollection:
    return pcoll | pm.Map(lambda e, ts=pm.DoFn.TimestampParam: (e, ts.micros // 10**6))


@pytest.mark.parametrize("runner", ["local-sequential", "local-threads", "local-processes", "spark"])
def test_the_first_of_equal_elements_in_a_window_passes(runner, request):
    if runner.startswith("spark"):
        request.getfixturevalue("spark_session")
    p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + ["--quiet"]))
    out = (p | pm.Create([TimestampedValue(k, t) for k, t in
                          [("a", 1), ("b", 2), ("a", 3), ("a", 11), ("b", 12)]])
           | pm.WindowInto(pm.FixedWindows(10))
           | deduplicate.Deduplicate(event_time_duration=100))
    assert_that(_stamped(out), equal_to([("a", 1), ("b", 2), ("a", 11), ("b", 12)]))
    p.run()


def test_a_key_is_forgotten_once_its_event_time_duration_has_passed():
    stream = (TestStream().advance_watermark_to(0)
              .add_elements([TimestampedValue(("k", 1), 0), TimestampedValue(("k", 2), 20)])
              .advance_watermark_to(60)
              .add_elements([TimestampedValue(("k", 3), 70), TimestampedValue(("j", 4), 70)]))
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet"]))
    out = p | stream | deduplicate.DeduplicatePerKey(event_time_duration=60)
    assert_that(_stamped(out), equal_to([(("k", 1), 0), (("k", 3), 70), (("j", 4), 70)]))
    p.run()


def test_a_duration_is_needed():
    with pytest.raises(ValueError, match="at least one"):
        deduplicate.Deduplicate()
