"""The Yahoo Streaming Benchmark example (queries I-VI with templates): run as a user runs it,
every query agrees between parallelism 1 and 4; query IV's counts equal views per campaign
per sliding 10 s window computed in plain Python, from a bounded and from a streamed input."""
from __future__ import annotations

import bisect
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from typing import Dict, List, Tuple

import pytest

import pomset as pm

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))

import yahoo_streaming as ys  # noqa: E402


def _run(*args: str) -> subprocess.CompletedProcess:
    """The example as a script, from the repository root."""
    return subprocess.run([sys.executable, "examples/yahoo_streaming.py", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def sliding_views(events: List[ys.Event], ad_campaign: Dict[str, str], size_s: int = 10,
                  ) -> Counter:
    """Per campaign and window end m (whole seconds, every second from the campaign's first
    view's second up to the last view's), the views with m - size_s <= time < m, when any:
    a Counter of (campaign, (m, views))."""
    times: Dict[str, List[int]] = defaultdict(list)
    for e in events:
        if e.event_type == "view":
            times[ad_campaign[e.ad_id]].append(e.event_time)
    last_end = max(t for ts in times.values() for t in ts) // 1000 + 1
    out: Counter = Counter()
    for campaign, ts in times.items():
        ts.sort()
        for m in range(ts[0] // 1000 + 1, last_end + 1):
            n = bisect.bisect_left(ts, m * 1000) - bisect.bisect_left(ts, (m - size_s) * 1000)
            if n:
                out[(campaign, (m, n))] += 1
    return out


def test_every_query_agrees_between_parallelism_1_and_4() -> None:
    """The script with --check: all six queries, parallelism 1 and 4 (shuffled merges) agree."""
    proc = _run("--quiet", "--check", "--events=6000", "--users=300", "--campaigns=30",
                "--parallelism=4", "--rate=400")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for q in ys.QUERIES:
        assert re.search(rf"^Query {q}: 6,000 events -> [1-9][\d,]* outputs", proc.stdout,
                         re.M), proc.stdout
    agree = re.findall(r"parallelism 1 and 4 give identical outputs: (\w+)", proc.stdout)
    assert agree == ["yes"] * 6, proc.stdout


def test_query_selection_and_bad_query() -> None:
    """--query runs the queries named; an unknown one is a clear error."""
    proc = _run("--quiet", "--query=IV,V", "--events=2000", "--parallelism=2")
    assert proc.returncode == 0, proc.stderr
    assert [line.split(":")[0] for line in proc.stdout.splitlines()[1:]] == ["Query IV", "Query V"]
    bad = _run("--query=VII", "--events=10")
    assert bad.returncode != 0 and "--query takes I, II, III, IV, V, VI" in bad.stderr


@pytest.fixture(scope="module")
def workload() -> Tuple[ys.World, List[ys.Event]]:
    """A small world and 8,000 events, up to 1.5 s out of order, over ~20 s."""
    world = ys.make_world(campaigns=25, ads_per_campaign=4, users=200, locations=4, seed=11)
    return world, ys.generate(8000, world, rate=400, disorder_ms=1500, seed=11)


def _query_iv(source: pm.PTransform, table: ys.Table, par: int, argv: List[str]) -> Counter:
    """Query IV over the events `source` yields; its outputs as Counter of values."""
    p = pm.Pipeline(argv=["--quiet", *argv])
    src = p | source | pm.Typed(pm.U(pm.Unit, ys.Event), period=1)
    out = ys.query_iv(src, table, par)
    result = p.run()
    assert result.counter("late") == 0
    rows = result.collect(out)
    assert all(wv.ts == wv.value[1][0] * 1_000_000 - 1 for wv in rows)   # marker time - 1 µs
    return Counter(wv.value for wv in rows)


@pytest.mark.parametrize("par,backend,shuffle",
                         [(1, "dict", []), (3, "sqlite", ["--shuffle_merges=5"])])
def test_query_iv_counts_views_per_campaign_in_sliding_windows(
        workload: Tuple[ys.World, List[ys.Event]], par: int, backend: str,
        shuffle: List[str]) -> None:
    """Query IV from a bounded input equals views per campaign per sliding 10 s window."""
    world, events = workload
    expected = sliding_views(events, world.ad_campaign)
    got = _query_iv(pm.Create(ys.timestamped(events, lambda e: e.event_time)),
                    ys.Table(world, backend), par, shuffle)
    assert got == expected
    assert len(expected) > 300 and max(v[1] for _, v in expected) > 10
    assert got == ys.expected_campaign_windows(events, world.ad_campaign, 10, 1)


def test_query_iv_over_a_stream_whose_watermark_moves(
        workload: Tuple[ys.World, List[ys.Event]]) -> None:
    """Query IV over a TestStream whose watermark moves mid-stream gives the same windows."""
    # delivered 250 events at a time, the watermark after each at the earliest time still to
    # come: markers pass mid-stream, no event is late, and the windows are the same
    world, events = workload
    suffix_min = [0] * (len(events) + 1)
    suffix_min[-1] = 2 ** 62
    for i in range(len(events) - 1, -1, -1):
        suffix_min[i] = min(events[i].event_time, suffix_min[i + 1])
    stream = pm.TestStream()
    for i in range(0, len(events), 250):
        stream.add_elements(ys.timestamped(events[i:i + 250], lambda e: e.event_time))
        if i + 250 < len(events):
            stream.advance_watermark_to(pm.Timestamp(micros=suffix_min[i + 250] * 1000))
    stream.advance_watermark_to_infinity()
    got = _query_iv(stream, ys.Table(world, "dict"), 4, ["--shuffle_merges=9"])
    assert got == sliding_views(events, world.ad_campaign)


def test_query_v_is_tumbling_windows(workload: Tuple[ys.World, List[ys.Event]]) -> None:
    """Query V emits the sliding windows that end on multiples of 10 s: tumbling windows."""
    world, events = workload
    p = pm.Pipeline(argv=["--quiet"])
    out = ys.query_v(ys.events_in(p, events), ys.Table(world, "dict"), 2)
    got = Counter(wv.value for wv in p.run().collect(out))
    sliding = sliding_views(events, world.ad_campaign)
    assert got == Counter({k: n for k, n in sliding.items() if k[1][0] % 10 == 0})
    assert sum(v[1] for _, v in got) == sum(
        1 for e in events if e.event_type == "view"
        and e.event_time // 10_000 * 10 + 10 <= max(t for _, (t, _) in got))
