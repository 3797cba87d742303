"""Channel markers and what a step keeps of them (`pomset.runtime.markers`), property-based:
random sequences of markers on a few inputs and channels, checked against a model computed
here from the whole sequence at once."""
from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from pomset.runtime.markers import ChannelMarker, Channels, MarkerRange
from pomset.windowing import MAX_MICROS, MIN_MICROS

CHANNELS = ["a", "b", "c"]
times = st.integers(-1_000, 1_000)
maybe_times = st.none() | times
processing_times = st.integers(0, 1_000)
channel_markers = st.builds(ChannelMarker, st.sampled_from(CHANNELS), times,
                            st.none() | processing_times, st.booleans())
ranges = st.builds(MarkerRange, maybe_times, maybe_times)
markers = st.lists(st.tuples(st.integers(0, 1), channel_markers | ranges), max_size=30)


def _model(seen):
    """Each (input, channel)'s watermark (the largest not idle), whether it is idle (its last
    marker was), the clock and the range of a sequence of markers."""
    progress = [(i, m) for i, m in seen if isinstance(m, ChannelMarker)]
    watermarks = {}
    for i, m in progress:
        if not m.idle:
            watermarks[i, m.channel] = max(watermarks.get((i, m.channel), MIN_MICROS), m.watermark)
    last = {(i, m.channel): m.idle for i, m in progress}
    clocks = [m.processing_time for _, m in progress if m.processing_time is not None]
    spans = [m for _, m in seen if isinstance(m, MarkerRange)]
    earliest = [r.earliest for r in spans if r.earliest is not None]
    latest = [r.latest for r in spans if r.latest is not None]
    return (watermarks, {c for c, idle in last.items() if idle}, max([0] + clocks),
            MarkerRange(min(earliest, default=None), max(latest, default=None)))


@given(markers)
def test_channels_keep_what_their_markers_say(seen):
    channels = Channels()
    channels.observe(seen)
    watermarks, idle, clock, span = _model(seen)
    assert channels.watermarks == watermarks and channels.idle == idle
    assert channels.clock == clock and channels.range == span


@given(markers, markers)
def test_a_channel_watermark_only_goes_forward(first, then):
    channels = Channels()
    channels.observe(first)
    before = dict(channels.watermarks)
    channels.observe(then)
    assert all(channels.watermarks[c] >= wm for c, wm in before.items())


@given(markers, st.integers(0, 1), st.lists(st.sampled_from(CHANNELS), min_size=1, unique=True))
def test_an_input_watermark_is_the_least_of_its_channels_not_idle(seen, index, names):
    channels = Channels()
    channels.observe(seen)
    active = [channels.watermarks.get((index, c), MIN_MICROS) for c in names
              if (index, c) not in channels.idle]
    assert channels.input_watermark(index, names) == min(active, default=MIN_MICROS)


def test_idle_channels_hold_nothing_back_until_their_next_marker():
    channels = Channels()
    channels.observe([(0, ChannelMarker("a", 500)), (0, ChannelMarker("b", 100))])
    assert channels.input_watermark(0, ["a", "b"]) == 100
    channels.observe([(0, ChannelMarker("b", idle=True))])
    assert channels.input_watermark(0, ["a", "b"]) == 500
    channels.observe([(0, ChannelMarker("b", 50))])   # back, behind: its largest stands
    assert channels.input_watermark(0, ["a", "b"]) == 100
    channels.observe([(0, ChannelMarker("a", idle=True)), (0, ChannelMarker("b", idle=True))])
    assert channels.input_watermark(0, ["a", "b"]) == MIN_MICROS
    assert channels.input_watermark(1, ["a"]) == MIN_MICROS   # another input's channel


def test_an_input_with_no_channels_is_at_the_end_of_time():
    assert Channels().input_watermark(0, []) == MAX_MICROS


@given(ranges, ranges, ranges)
def test_ranges_combine_to_the_least_earliest_and_the_greatest_latest(r, s, t):
    assert (r | s) | t == r | (s | t) and r | s == s | r and r | MarkerRange() == r
    both = r | s
    for pick, part in ((min, "earliest"), (max, "latest")):
        values = [getattr(x, part) for x in (r, s) if getattr(x, part) is not None]
        assert getattr(both, part) == pick(values, default=None)
    assert both.empty == (r.empty and s.empty)


@given(channel_markers | ranges)
def test_markers_pickle_by_reference(marker):
    data = pickle.dumps(marker, protocol=5)
    assert b"pomset.runtime.markers" in data and pickle.loads(data) == marker
