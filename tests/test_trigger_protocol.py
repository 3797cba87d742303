"""Beam's trigger protocol beyond firing: `may_lose_data(windowing)` with `DataLossReason`, and
`get_continuation_trigger()`, the trigger a downstream grouping takes (Beam's own cases run in
tests/test_beam_suite.py: trigger_test's MayLoseDataTest and ContinuationTriggerTest; these
are the cases they leave out)."""
from __future__ import annotations

import pomset as pm

LOSS, SAFE = pm.DataLossReason.MAY_FINISH, pm.DataLossReason.NO_POTENTIAL_LOSS


def _windowing(lateness=0):
    return pm.WindowInto(pm.FixedWindows(10), allowed_lateness=lateness).windowing


def test_or_finally_may_finish_when_either_may():
    assert pm.OrFinally(pm.Repeatedly(pm.AfterCount(2)), pm.AfterCount(5)).may_lose_data(
        _windowing()) == LOSS
    assert pm.OrFinally(pm.Always(), pm.DefaultTrigger()).may_lose_data(_windowing()) == SAFE


def test_a_late_trigger_decides_once_lateness_is_allowed():
    late_count = pm.AfterWatermark(late=pm.AfterCount(1))
    assert late_count.may_lose_data(_windowing(0)) == SAFE
    assert late_count.may_lose_data(_windowing(60)) == LOSS
    assert pm.AfterWatermark(late=pm.Always()).may_lose_data(_windowing(60)) == SAFE


def test_a_custom_trigger_is_taken_to_be_safe():
    class EveryOther(pm.Trigger):
        def should_fire(self, ctx):
            return True

    assert EveryOther().may_lose_data(_windowing(60)) == SAFE


def test_window_into_gives_its_windowing_over_the_defaults():
    windowing = pm.WindowInto(pm.Sessions(5), trigger=pm.AfterCount(3), allowed_lateness=7,
                              accumulation_mode=pm.AccumulationMode.ACCUMULATING).windowing
    assert (windowing.window_fn, windowing.trigger, windowing.allowed_lateness_us,
            windowing.accumulation_mode) == (pm.Sessions(5), pm.AfterCount(3), 7_000_000,
                                             pm.AccumulationMode.ACCUMULATING)
    assert windowing.timestamp_combiner is pm.TimestampCombiner.OUTPUT_AT_EOW


def test_continuations_of_sequences_and_processing_time():
    assert pm.AfterEach(pm.AfterCount(3), pm.AfterProcessingTime(5)).get_continuation_trigger() \
        == pm.Repeatedly(pm.AfterAny(pm.AfterCount(1), pm.AfterSynchronizedProcessingTime()))
    assert pm.OrFinally(pm.Repeatedly(pm.AfterCount(4)), pm.AfterProcessingTime(9)) \
        .get_continuation_trigger() == pm.OrFinally(pm.Repeatedly(pm.AfterCount(1)),
                                                    pm.AfterSynchronizedProcessingTime())
    synchronized = pm.AfterSynchronizedProcessingTime()
    assert synchronized.get_continuation_trigger() == synchronized
    assert synchronized != pm.AfterProcessingTime(0)
    assert repr(synchronized) == "AfterSynchronizedProcessingTime()"


def test_a_grouping_after_a_sequence_fires_on_each_upstream_pane():
    # upstream: a pane at the second element, then (AfterCount(3)) at the fifth, which
    # finishes the sequence and the window; downstream, re-keyed, fires on each pane that
    # arrives (Repeatedly(AfterAny(...))), which never finishes: its window ends with its
    # ON_TIME pane, empty
    p = pm.Pipeline(argv=["--quiet"])
    stream = pm.TestStream()
    for t in (1, 2, 3, 4, 5):
        stream.add_elements([pm.TimestampedValue(("k", t), t)])
    first = (p | stream
             | pm.WindowInto(pm.FixedWindows(100), trigger=pm.AfterEach(
                 pm.AfterCount(2), pm.AfterCount(3)),
                 accumulation_mode=pm.AccumulationMode.DISCARDING)
             | pm.CombinePerKey(sum)).keep()
    second = first | pm.Map(lambda kv: ("all", kv[1])) | pm.CombinePerKey(sum)
    result = p.run()
    assert [wv.value[1] for wv in result.collect(first)] == [3, 12]
    assert [wv.value[1] for wv in result.collect(second)] == [3, 12, 0]
