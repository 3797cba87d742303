"""The data-trace examples run as a user runs them (scripts with flags), and the Table 2 program
and the block semantics the examples rely on, checked in process with numbers worked by hand."""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections import Counter
from typing import Any, Callable, List, Optional, Tuple

import pytest

import pomset as pm

ROOT = os.path.join(os.path.dirname(__file__), "..")


def _run(*args: str) -> subprocess.CompletedProcess:
    """Run a script from the repository root and capture its output."""
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


# --- the examples as scripts --------------------------------------------------------------

@pytest.mark.parametrize("parallelism,seed", [(4, 11), (3, 5)])
def test_iot_interpolation_is_the_same_at_parallelism_1_and_n(parallelism: int,
                                                               seed: int) -> None:
    """The script's two runs agree, and its summary adds up."""
    proc = _run("examples/iot_interpolation.py", "--sensors=10", "--seconds=300",
                f"--parallelism={parallelism}", f"--shuffle_merges={seed}", "--quiet")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "(5 at windows)" in out
    assert "shuffled within periods, never across: yes" in out
    runs = re.findall(r"parallelism (\d+): linearInterpolation emitted (\d+) points, "
                      r"maxOfAvgPerID (\d+) reports, late items (\d+)", out)
    assert [r[0] for r in runs] == ["1", str(parallelism)]
    assert runs[0][1:] == runs[1][1:]
    assert int(runs[0][2]) == 5 * 30      # 5 window sensors x 30 markers
    assert runs[0][3] == "0"
    rows = re.findall(r"^(temp-\d\d) +window +(\d+) +(\d+) +(\d+) +(\d+\.\d\d) +(\d+)$", out,
                      re.MULTILINE)
    assert len(rows) == 5
    for _, measured, after, filled, max_avg, ts in rows:
        assert int(after) == int(measured) + int(filled) and int(filled) > 0
        assert 10.0 < float(max_avg) < 30.0 and ts == "299"
    assert ("maxOfAvgPerID (U) at parallelism 1 and %d, as multisets of (value, timestamp): "
            "identical" % parallelism) in out
    assert ("linearInterpolation (O) at parallelism 1 and %d, as per-sensor sequences: "
            "identical" % parallelism) in out
    assert "the two runs' outputs are identical: yes" in out


def test_smart_homes_predictions_do_not_depend_on_the_parallelism() -> None:
    """Runs at parallelism 1 and 4 print the same predictions and a finite error figure."""
    size = ["--buildings=1", "--units=3", "--plugs=5", "--minutes=20", "--quiet"]
    outs = {}
    for flags in (["--parallelism=1"], ["--parallelism=4", "--shuffle_merges=3"]):
        proc = _run("examples/smart_homes.py", *size, *flags)
        assert proc.returncode == 0, proc.stderr
        outs[flags[0]] = proc.stdout
    one, four = outs["--parallelism=1"], outs["--parallelism=4"]
    digests = [re.search(r"predictions digest: ([0-9a-f]{16})", o).group(1) for o in (one, four)]
    assert digests[0] == digests[1]
    counts = [re.search(r"parallelism \d: AVG (\d+) averages, Predict (\d+) predictions, "
                        r"late items (\d+)", o).groups() for o in (one, four)]
    assert counts[0] == counts[1] and int(counts[0][1]) > 1000 and counts[0][2] == "0"
    # everything printed apart from the parallelism is the same, predictions and errors too
    assert one.replace("parallelism 1:", "parallelism 4:") == four
    error = re.search(r"error \(WAPE of (\d+) predictions over all device types\): "
                      r"([0-9.na]+)% \(naive: ([0-9.na]+)%\)", one)
    assert error, one
    n, model, naive = int(error.group(1)), float(error.group(2)), float(error.group(3))
    assert n > 1000 and math.isfinite(model) and math.isfinite(naive)
    assert 0 < model < naive
    assert re.search(r"^ac \(\d+ plug\(s\)\): energy of an average plug", one, re.MULTILINE)
    table = re.findall(r"^  (\d\d:\d\d:\d\d) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)$",
                       one, re.MULTILINE)
    assert len(table) >= 3
    assert all(float(v) >= 0 for row in table for v in row[1:])


# --- the Table 2 program, in process --------------------------------------------------------

LOCATION = {"a": "window", "b": "door", "c": "window"}


def _jfm(key: None, m: dict, emit: Callable) -> None:
    """joinFilterMap of Table 2."""
    if LOCATION[m["id"]] == "window":
        emit(m["id"], (m["scalar"], m["ts"]))


def _li(state: Optional[Tuple[float, int]], key: str, v: Tuple[float, int],
        emit: Callable) -> Tuple[float, int]:
    """linearInterpolation of Table 2."""
    if state is None:
        emit(key, v)
    else:
        x, t0 = state
        dt = v[1] - t0
        for i in range(1, dt + 1):
            emit(key, (x + i * (v[0] - x) / dt, t0 + i))
    return v


def _table2(measurements: List[Tuple[str, float, int]], parallelism: int,
            argv: List[str], sort: bool = True) -> Tuple[list, list]:
    """Run JFM -> SORT -> LI -> maxOfAvgPerID; (LI output, max output) as WindowedValues."""
    with pm.Pipeline(options=pm.PipelineOptions(["--quiet", *argv])) as p:
        hub = (p | pm.Create([pm.TimestampedValue({"id": i, "scalar": s, "ts": t}, t)
                              for i, s, t in measurements])
               | pm.Typed(pm.U(pm.Unit, dict), period=10))
        points = hub | "JFM" >> pm.OpStateless(on_item=_jfm, out=pm.U(str, tuple),
                                               parallelism=parallelism)
        if sort:
            points = points | pm.Sort(lambda v: v[1], parallelism=parallelism)
        filled = (points | "LI" >> pm.OpKeyedOrdered(on_item=_li, out=pm.O(str, tuple),
                                                     parallelism=parallelism)).keep()
        maxima = filled | "maxOfAvgPerID" >> pm.OpKeyedUnordered(
            in_=lambda k, v: (v[0], 1), id=lambda: (0.0, 0),
            combine=lambda x, y: (x[0] + y[0], x[1] + y[1]),
            initial_state=lambda: -math.inf,
            update_state=lambda s, agg: max(s, agg[0] / agg[1]) if agg[1] else s,
            on_marker=lambda s, k, m, emit: emit(k, (s, round(float(m.timestamp)) - 1)),
            out=pm.U(str, tuple), parallelism=parallelism)
    return p.result.collect(filled), p.result.collect(maxima)


# the hub's order: shuffled within each 10-s period, never across
HUB = [("a", 23.0, 4), ("b", 5.0, 2), ("a", 20.0, 1), ("c", 17.0, 7),
       ("c", 19.0, 15), ("a", 30.0, 12), ("c", 18.0, 11),
       ("c", 23.0, 23)]


@pytest.mark.parametrize("parallelism,argv", [(1, []), (3, ["--shuffle_merges=1"]),
                                              (4, ["--shuffle_merges=2"])])
def test_table2_numbers_by_hand(parallelism: int, argv: List[str]) -> None:
    """Table 2's operators give the hand-computed points, blocks and maxima."""
    filled, maxima = _table2(HUB, parallelism, argv)
    per_key: dict = {}
    for wv in filled:
        per_key.setdefault(wv.value[0], []).append((wv.value[1], wv.ts))
    s = 1_000_000
    # a: 20 at 1, 23 at 4, 30 at 12: seconds 2-3 filled in the first block, 5-12 when 12 comes
    assert per_key["a"] == ([((20.0, 1), 1 * s)] + [((20.0 + i, 1 + i), 4 * s) for i in (1, 2, 3)]
                            + [((23.0 + 0.875 * i, 4 + i), 12 * s) for i in range(1, 9)])
    # c: 17 at 7, 18 at 11, 19 at 15 (both in the second block), 23 at 23
    assert per_key["c"] == ([((17.0, 7), 7 * s)]
                            + [((17.0 + 0.25 * i, 7 + i), 11 * s) for i in range(1, 5)]
                            + [((18.0 + 0.25 * i, 11 + i), 15 * s) for i in range(1, 5)]
                            + [((19.0 + 0.5 * i, 15 + i), 23 * s) for i in range(1, 9)])
    assert "b" not in per_key
    got = Counter((wv.value, wv.ts) for wv in maxima)
    # block averages: a 21.5, 26.9375, then no point; c 17.0, 18.125, 21.25
    assert got == Counter({
        (("a", (21.5, 9)), 10 * s - 1): 1, (("c", (17.0, 9)), 10 * s - 1): 1,
        (("a", (26.9375, 19)), 20 * s - 1): 1, (("c", (18.125, 19)), 20 * s - 1): 1,
        # no point of "a" in the third block: its maximum stays (Table 2 would divide by 0)
        (("a", (26.9375, 29)), 30 * s - 1): 1, (("c", (21.25, 29)), 30 * s - 1): 1,
    }), sorted(got)


def test_li_without_sort_is_rejected_when_built() -> None:
    """LI straight after the unordered JFM is a construction error naming the fix."""
    with pytest.raises(pm.PipelineConstructionError) as info:
        _table2(HUB, 2, [], sort=False)
    message = str(info.value)
    assert "'LI'" in message and "U(str, tuple) from 'JFM'" in message
    assert "pm.Sort" in message


# --- the block semantics the smart homes example relies on --------------------------------

def test_a_point_flushed_at_a_marker_is_counted_in_that_marker_s_block() -> None:
    """An item an ordered operator holds until the marker comes out in that marker's block."""
    # as the smart homes LI holds a second's measurements: emitted at marker time - 1 µs, the
    # next stage sees the item before the same marker, not in a later block
    def hold(state: Any, key: str, v: int, emit: Callable) -> Any:
        """Emit the previous item, keep this one."""
        if state is not None:
            emit(key, state)
        return v

    def flush(state: Any, key: str, m: pm.Marker, emit: Callable) -> Any:
        """Emit the kept item at the marker."""
        if state is not None:
            emit(key, state)
        return None

    items = [("k", t) for t in (3, 5, 14, 27, 28)] + [("j", t) for t in (9, 21)]
    with pm.Pipeline(argv=["--quiet", "--shuffle_merges=4"]) as p:
        held = (p | pm.Create([pm.TimestampedValue(kv, kv[1]) for kv in items])
                | pm.Typed(pm.U(str, int), period=10)
                | pm.Sort(lambda v: v, parallelism=2)
                | "Hold" >> pm.OpKeyedOrdered(on_item=hold, on_marker=flush, out=pm.O(str, int),
                                              parallelism=2)).keep()
        blocks = held | "PerBlock" >> pm.OpKeyedUnordered(
            in_=lambda k, v: (v,), id=tuple, combine=lambda x, y: tuple(sorted(x + y)),
            initial_state=tuple, update_state=lambda s, agg: agg,
            on_marker=lambda s, k, m, emit: emit(k, (m.index, s)), out=pm.U(str, tuple),
            parallelism=2)
    held_ts = sorted((wv.value, wv.ts) for wv in p.result.collect(held))
    assert held_ts == [(("j", 9), 9_999_999), (("j", 21), 29_999_999), (("k", 3), 5_000_000),
                       (("k", 5), 9_999_999), (("k", 14), 19_999_999), (("k", 27), 28_000_000),
                       (("k", 28), 29_999_999)]
    got = sorted(wv.value for wv in p.result.collect(blocks))
    assert got == [("j", (1, (9,))), ("j", (2, ())), ("j", (3, (21,))),
                   ("k", (1, (3, 5))), ("k", (2, (14,))), ("k", (3, (27, 28)))]


def test_smart_homes_on_spark_prints_what_the_local_runner_prints() -> None:
    """The whole Figure 5 pipeline on Spark (two Sorts, ordered operators back to back, a
    model in a template subclass defined in the script) gives the local runner's output."""
    size = ["--buildings=1", "--units=2", "--plugs=4", "--minutes=10", "--quiet",
            "--parallelism=2"]
    local = _run("examples/smart_homes.py", *size)
    spark = _run("examples/smart_homes.py", *size, "--runner=spark")
    assert local.returncode == 0 and spark.returncode == 0, spark.stderr[-3000:]
    assert "predictions digest" in local.stdout and spark.stdout == local.stdout
