"""pomset's PeriodicImpulse and PeriodicSequence (Beam's `transforms.periodicsequence`): the
times from start, every interval, before stop, each stamped with itself and output no sooner
than the wall clock reaches it; an unbounded PCollection."""
from __future__ import annotations

import time

import pomset as pm
from pomset.testing.util import assert_that, equal_to
from pomset.transforms.periodicsequence import PeriodicImpulse, PeriodicSequence
from pomset.window import IntervalWindow


def _seconds(pcoll: pm.PCollection) -> pm.PCollection:
    return pcoll | pm.Map(lambda t, ts=pm.DoFn.TimestampParam, w=pm.DoFn.WindowParam:
                          (t.micros / 1e6, ts.micros / 1e6, w))


def test_past_times_are_output_at_once_each_at_its_time():
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet"]))
    ticks = p | PeriodicImpulse(start_timestamp=100, stop_timestamp=103.5, fire_interval=1,
                                apply_windowing=True)
    assert not ticks.bounded
    assert_that(_seconds(ticks), equal_to(
        [(t, t, IntervalWindow(t, t + 1)) for t in (100.0, 101.0, 102.0, 103.0)]))
    p.run()


def test_times_to_come_are_waited_for():
    start = time.time()
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet"]))
    ticks = p | pm.Create([(start, start + 0.6, 0.2)]) | PeriodicSequence()
    assert_that(ticks | pm.Map(lambda t: round(t.micros / 1e6 - start, 1)),
                equal_to([0.0, 0.2, 0.4]))
    p.run()
    assert time.time() - start >= 0.4
