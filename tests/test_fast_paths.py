"""The local runner's fast paths give exactly what the general paths give.

- the kernel's plain-watermark-trigger path (DefaultTrigger, AfterWatermark(), Repeatedly of
  it, `WatermarkDriver`): compared with the kernel run through the trigger objects;
- the inlined driver of AfterWatermark with processing-time early and late firings
  (`TimedWatermarkDriver`): compared with the general driver, through the trigger objects;
- Sessions' incremental merge (`Sessions.merge_new`, and the kernel's `_grow` for a window
  that overlaps one other): compared with merge_windows over all of a key's active windows
  (`WindowFn.merge_new`) through the kernel's general merge.

- the kernel's folding of a bundle's on-time elements under Sessions
  (`GroupAlsoByWindow._fold`): compared with the elements taken one by one.

Random TestStreams (late data, watermark and processing-time steps), every window kind, all
three accumulation modes, timestamp combiners and allowed lateness; everything collected,
with panes and diffs, in order per key and window: a kernel that folds takes a bundle's keys
in the order they first came, so the panes different keys (or one key's windows) fire at one
instant may come in another order than one by one, which no runner promises (Beam neither)."""
from __future__ import annotations

import random

import pytest

import pomset as pm
from pomset.triggers import kernel as kernel_mod
from pomset.triggers.drivers import TimedWatermarkDriver, TriggerDriver, WatermarkDriver, driver
from pomset.triggers.reducers import BufferReducer
from pomset.triggers.strategy import WindowingStrategy
from pomset.windowing.windowfns import WindowFn

WINDOWS = [lambda: pm.GlobalWindows(), lambda: pm.FixedWindows(10), lambda: pm.SlidingWindows(20, 5),
           lambda: pm.Sessions(7)]
TRIGGERS = [lambda: None, lambda: pm.DefaultTrigger(), lambda: pm.AfterWatermark(),
            lambda: pm.Repeatedly(pm.AfterWatermark()),
            lambda: pm.AfterWatermark(early=pm.AfterCount(2), late=pm.AfterCount(1)),
            lambda: pm.AfterWatermark(early=pm.AfterProcessingTime(2), late=pm.AfterProcessingTime(1)),
            lambda: pm.AfterWatermark(early=pm.AfterProcessingTime(3)),
            lambda: pm.AfterWatermark(late=pm.AfterProcessingTime(0))]
MODES = [pm.AccumulationMode.DISCARDING, pm.AccumulationMode.ACCUMULATING,
         pm.AccumulationMode.RETRACTING]
COMBINERS = [pm.TimestampCombiner.OUTPUT_AT_EOW, pm.TimestampCombiner.OUTPUT_AT_EARLIEST,
             pm.TimestampCombiner.OUTPUT_AT_LATEST]


def _run(seed: int, windows: list = WINDOWS, triggers: list = TRIGGERS, bundle: int = 3,
         most: int = 5) -> list:
    rng = random.Random(seed)
    stream = pm.TestStream()
    wm = 0
    for _ in range(rng.randrange(3, 25)):
        stream.add_elements([pm.TimestampedValue((rng.randrange(3), rng.randrange(1, 9)),
                                                 rng.randrange(0, 80))
                             for _ in range(rng.randrange(1, most))])
        r = rng.random()
        if r < 0.35:
            wm += rng.randrange(0, 15)
            stream.advance_watermark_to(wm)
        elif r < 0.5:
            stream.advance_processing_time(rng.randrange(1, 5))
    stream.advance_watermark_to_infinity()
    kwargs = dict(accumulation_mode=rng.choice(MODES), allowed_lateness=rng.choice([0, 5, 30]),
                  timestamp_combiner=rng.choice(COMBINERS))
    trigger = rng.choice(triggers)()
    if trigger is not None:
        kwargs["trigger"] = trigger
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet", f"--bundle_size={bundle}"]))
    windowed = p | stream | pm.WindowInto(rng.choice(windows)(), **kwargs)
    sums = (windowed | pm.CombinePerKey(sum)).keep()
    groups = windowed | pm.GroupByKey()
    again = (sums | pm.Map(lambda kv: (kv[0] % 2, kv[1])) | pm.CombinePerKey(sum))
    result = p.run()
    return [_per_key_and_window([(wv.value, wv.ts, wv.window, wv.pane, wv.diff)
                                 for wv in result.collect(pc)])
            for pc in (sums, groups, again)] + [result.metrics()]


def _per_key_and_window(outputs: list) -> dict:
    """The outputs of each key and window, in the order they came."""
    got: dict = {}
    for out in outputs:
        got.setdefault((out[0][0], out[2]), []).append(out)
    return got


def _general_paths(monkeypatch) -> None:
    monkeypatch.setattr(kernel_mod, "driver", TriggerDriver)
    monkeypatch.setattr(pm.Sessions, "merge_new", WindowFn.merge_new)


@pytest.mark.parametrize("seed", range(150))
def test_fast_paths_match_general_paths(seed, monkeypatch):
    fast = _run(seed)
    _general_paths(monkeypatch)
    assert fast == _run(seed)


@pytest.mark.parametrize("seed", range(150, 250))
def test_sessions_merges_match_the_general_merge(seed, monkeypatch):
    sessions = [lambda: pm.Sessions(7), lambda: pm.Sessions(2)]
    fast = _run(seed, sessions)
    _general_paths(monkeypatch)
    assert fast == _run(seed, sessions)


# triggers under which the kernel folds a bundle's on-time elements (and two it must not)
FOLDING = [lambda: None, lambda: pm.AfterWatermark(),
           lambda: pm.AfterWatermark(early=pm.AfterProcessingTime(2), late=pm.AfterCount(1)),
           lambda: pm.AfterWatermark(early=pm.AfterProcessingTime(1, align_to=3),
                                     late=pm.AfterProcessingTime(0)),
           lambda: pm.Repeatedly(pm.AfterProcessingTime(2)),
           lambda: pm.AfterWatermark(early=pm.AfterCount(2)),
           lambda: pm.AfterWatermark(early=pm.AfterProcessingTime(0))]


@pytest.mark.parametrize("seed", range(250, 350))
def test_folded_sessions_match_elements_taken_one_by_one(seed, monkeypatch):
    sessions = [lambda: pm.Sessions(7), lambda: pm.Sessions(15)]
    folded = _run(seed, sessions, FOLDING, bundle=40, most=12)
    monkeypatch.setattr(kernel_mod.GroupAlsoByWindow, "_fold", lambda self, bundle, wm: ([], bundle))
    assert folded == _run(seed, sessions, FOLDING, bundle=40, most=12)


def test_the_kernel_folds_on_time_elements_and_names_a_failing_one(monkeypatch):
    sessions = kernel_mod.GroupAlsoByWindow._sessions
    made = []
    monkeypatch.setattr(kernel_mod.GroupAlsoByWindow, "_sessions",
                        lambda self, key, group: made.extend(sessions(self, key, group)) or
                        sessions(self, key, group))
    for seed in range(250, 260):
        _run(seed, [lambda: pm.Sessions(7)], [lambda: None], bundle=40, most=12)
    assert sum(type(wv.value[1]) is kernel_mod._Folded for _, wv in made) > 20

    class Picky(pm.CombineFn):
        def create_accumulator(self):
            return 0

        def add_input(self, acc, value):
            if value == 13:
                raise ValueError("unlucky")
            return acc + value

        def merge_accumulators(self, accs):
            return sum(accs)

        def extract_output(self, acc):
            return acc

    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet"]))
    (p | pm.Create([("a", 1), ("a", 13), ("a", 2)]) | pm.Map(lambda kv: pm.TimestampedValue(kv, 5))
     | pm.WindowInto(pm.Sessions(10)) | pm.CombinePerKey(Picky()))
    with pytest.raises(pm.UserCodeError, match=r"\('a', 13\).*unlucky"):
        p.run()


def test_which_triggers_fold_on_time_elements():
    apt = pm.AfterProcessingTime
    for trigger in (pm.DefaultTrigger(), pm.AfterWatermark(), pm.Repeatedly(apt(1)),
                    pm.AfterWatermark(early=apt(1), late=pm.AfterCount(1)),
                    pm.AfterWatermark(early=pm.Repeatedly(apt(1, align_to=5)))):
        assert trigger.folds_on_time_elements(), trigger
    for trigger in (apt(1), pm.AfterCount(2), pm.Repeatedly(pm.AfterCount(2)), pm.Always(),
                    pm.AfterWatermark(early=pm.AfterCount(1)), pm.AfterWatermark(early=apt(0)),
                    pm.AfterAny(pm.AfterWatermark(), apt(1)), pm.Never()):
        assert not trigger.folds_on_time_elements(), trigger


def test_plain_watermark_slot():
    slot = WatermarkDriver.slot_of
    assert slot(pm.DefaultTrigger()) == 1
    assert slot(pm.Repeatedly(pm.AfterWatermark())) == 1
    assert slot(pm.AfterWatermark()) == 0
    assert slot(pm.AfterWatermark(late=pm.AfterCount(1))) is None
    assert slot(pm.AfterWatermark(early=pm.AfterCount(1))) is None
    assert slot(pm.Repeatedly(pm.AfterCount(2))) is None


def test_the_timed_watermark_driver_is_chosen_for_processing_time_firings_only():
    apt = pm.AfterProcessingTime
    for trigger in (pm.AfterWatermark(early=apt(1), late=apt(1)), pm.AfterWatermark(early=apt(1)),
                    pm.AfterWatermark(late=apt(0))):
        assert type(driver(trigger)) is TimedWatermarkDriver
    for trigger in (pm.AfterWatermark(), pm.DefaultTrigger()):
        assert type(driver(trigger)) is WatermarkDriver
    for trigger in (pm.AfterWatermark(early=pm.AfterCount(1)),
                    pm.AfterWatermark(early=apt(1, align_to=5)), pm.Repeatedly(apt(1)),
                    pm.AfterWatermark(early=apt(1), late=pm.AfterCount(1))):
        assert type(driver(trigger)) is TriggerDriver


def test_sessions_subclass_overriding_merge_windows_is_not_merged_incrementally():
    class Custom(pm.Sessions):
        def merge_windows(self, windows):
            return []

    assert Custom.merge_new is WindowFn.merge_new
    assert pm.Sessions.merge_new is not WindowFn.merge_new
    kernel = lambda fn: kernel_mod.GroupAlsoByWindow(WindowingStrategy(fn), BufferReducer())
    assert kernel(Custom(5))._overlapping is None
    assert kernel(pm.Sessions(5))._overlapping is not None
