"""The paper's Figures 6-14 (Akidau et al. 2015) on its running example, pane by pane."""
from __future__ import annotations

import importlib.util
import os

import pytest

import pomset as pm

_spec = importlib.util.spec_from_file_location(
    "dataflow_paper", os.path.join(os.path.dirname(__file__), "..", "examples", "dataflow_paper.py"))
paper = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(paper)

E, O, L = pm.PaneTiming.EARLY, pm.PaneTiming.ON_TIME, pm.PaneTiming.LATE
hms = paper.hms


def W(start: tuple, end: tuple) -> pm.IntervalWindow:
    return pm.IntervalWindow(hms(12, *start), hms(12, *end))


def panes(number: int) -> list:
    return [(p.diff * p.value, p.timing, p.window, p.processing_time)
            for p in paper.run_figure(number)]


def values(number: int) -> list:
    return [p.diff * p.value for p in paper.run_figure(number)]


def test_dataset_matches_the_papers_text():
    assert sum(e.value for e in paper.EVENTS) == 51
    arrival_order = [e.value for e in sorted(paper.EVENTS, key=lambda e: e.arrival_time)]
    assert arrival_order == [5, 7, 3, 4, 3, 8, 3, 9, 8, 1]


def test_figure_6_classic_batch_is_one_global_sum():
    assert values(6) == [51]
    assert paper.run_figure(6)[0].window == pm.GlobalWindow()


def test_figure_7_global_atperiod_accumulating():
    g = pm.GlobalWindow()
    assert panes(7) == [(12, E, g, hms(12, 6)), (22, E, g, hms(12, 7)),
                        (33, E, g, hms(12, 8)), (51, E, g, hms(12, 9))]


def test_figure_8_global_atperiod_discarding():
    assert values(8) == [12, 10, 11, 18]
    assert sum(values(8)) == 51


def test_figure_9_global_atcount_discarding():
    assert values(9) == [12, 7, 11, 12, 9]


def test_figure_10_fixed_windows_batch():
    assert [(p.value, p.window) for p in paper.run_figure(10)] == [
        (14, W((0,), (2,))), (22, W((2,), (4,))), (3, W((4,), (6,))), (12, W((6,), (8,)))]
    assert all(p.timing is O for p in paper.run_figure(10))


def test_figure_11_fixed_windows_micro_batch():
    assert [(p.value, p.window, p.processing_time) for p in paper.run_figure(11)] == [
        (5, W((0,), (2,)), hms(12, 6)), (7, W((2,), (4,)), hms(12, 6)),
        (14, W((2,), (4,)), hms(12, 7)), (3, W((4,), (6,)), hms(12, 7)),
        (22, W((2,), (4,)), hms(12, 8)), (3, W((6,), (8,)), hms(12, 8)),
        (14, W((0,), (2,)), hms(12, 9)), (12, W((6,), (8,)), hms(12, 9))]


def test_figure_12_fixed_windows_streaming_refines_the_late_nine():
    assert panes(12) == [
        (5, O, W((0,), (2,)), hms(12, 5, 50)),
        (22, O, W((2,), (4,)), hms(12, 7, 30)),
        (3, O, W((4,), (6,)), hms(12, 7, 30)),
        (14, L, W((0,), (2,)), hms(12, 8, 10)),
        (12, O, W((6,), (8,)), hms(12, 8, 55))]


def test_figure_13_early_on_time_and_late_panes():
    assert panes(13) == [
        (5, O, W((0,), (2,)), hms(12, 5, 50)),
        (7, E, W((2,), (4,)), hms(12, 6)),
        (14, E, W((2,), (4,)), hms(12, 7)),
        (3, E, W((4,), (6,)), hms(12, 7)),
        (22, O, W((2,), (4,)), hms(12, 7, 30)),
        (3, O, W((4,), (6,)), hms(12, 7, 30)),
        (3, E, W((6,), (8,)), hms(12, 8)),
        (14, L, W((0,), (2,)), hms(12, 8, 10)),
        (12, O, W((6,), (8,)), hms(12, 8, 55))]


def test_figure_14_sessions_with_retractions():
    assert panes(14) == [
        (5, O, W((0, 50), (1, 50)), hms(12, 5, 50)),
        (7, E, W((2, 10), (3, 10)), hms(12, 6)),
        (10, E, W((3, 30), (5, 20)), hms(12, 7)),
        (-7, O, W((2, 10), (3, 10)), hms(12, 7, 30)),
        (-10, O, W((3, 30), (5, 20)), hms(12, 7, 30)),
        (25, O, W((2, 10), (5, 20)), hms(12, 7, 30)),
        (3, E, W((6, 10), (7, 10)), hms(12, 8)),
        (-5, L, W((0, 50), (1, 50)), hms(12, 8, 10)),
        (-25, L, W((2, 10), (5, 20)), hms(12, 8, 10)),
        (39, L, W((0, 50), (5, 20)), hms(12, 8, 10)),
        (-3, O, W((6, 10), (7, 10)), hms(12, 8, 55)),
        (12, O, W((6, 10), (8, 20)), hms(12, 8, 55))]


def test_figure_14_nets_to_the_batch_sessions():
    netted: dict = {}
    for p in paper.run_figure(14):
        netted[p.window] = netted.get(p.window, 0) + p.diff * p.value
    assert {w: v for w, v in netted.items() if v} == {
        W((0, 50), (5, 20)): 39, W((6, 10), (8, 20)): 12}


@pytest.mark.parametrize("number", [12, 13, 14])
def test_streaming_figures_agree_with_batch_once_netted(number):
    final: dict = {}
    for p in paper.run_figure(number):
        if paper.FIGURES[number].mode is pm.AccumulationMode.RETRACTING:
            final[p.window] = final.get(p.window, 0) + p.diff * p.value
        else:
            final[p.window] = p.value
    assert sum(final.values()) == 51


def test_figures_are_drawn(tmp_path):
    path = tmp_path / "figure14.png"
    paper.draw_figure(14, str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 10_000


@pytest.mark.parametrize("number", sorted(paper.FIGURES))
def test_each_figure_is_drawn_from_runs_with_the_panes_it_prints(number):
    # the batch figures are drawn from batch runs on the transcript's clock (their input
    # arriving as in the transcript, then the watermark jumping once), not on the wall clock
    drawn = [pane for run in paper.drawn_runs(number)
             for at, wv in run.result.collect_timed(run.sums)
             if run.where is None or run.where(wv) for pane in paper._panes([wv], int(at))]
    assert drawn == paper.run_figure(number)
