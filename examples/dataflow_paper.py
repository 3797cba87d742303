"""The Dataflow Model paper's running example (Akidau et al., VLDB 2015, Figures 6-14).

Ten integers for one key, summed per window. Each figure runs the same data through a
different where/when/how. The dataset is the paper's Figure 5 as its text pins it down (the
figures themselves did not survive text extraction): batch sum 51; Figure 7's 12/22/33/51;
Figure 9's pairs 12/7/11/12/9; Figure 10's windows 14/22/3/12; Figure 14's sessions 5, 7,
10 -> 25 -> 39 and 3 -> 12. Times are seconds since midnight, shown as HH:MM:SS.

Run: python examples/dataflow_paper.py [--out figures] [--runner=local|spark] [--no-draw]
It prints every figure's panes and draws each as the paper does (event time on x, processing
time on y, panes as rectangles) with `pm.plot_panes` into PNG files under --out, from local
runs on the transcript's clock. On another runner it also says whether each figure's panes
are the local runner's (the streaming figures run there as a Structured Streaming query, one
micro-batch per step of the transcript).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402


def hms(h: int, m: int, s: int = 0) -> int:
    return h * 3600 + m * 60 + s


class Event(NamedTuple):
    value: int
    event_time: int      # when it happened
    arrival_time: int    # when the pipeline observes it (processing time)


# Figure 5: arrival order 5 7 3 4 3 8 3 9 8 1 (Figure 9's pairs); one-minute arrival groups
# {5,7} {3,4,3} {8,3} {9,8,1} (Figures 7 and 8); the 9 is late (Figure 12).
EVENTS: List[Event] = [
    Event(5, hms(12, 0, 50), hms(12, 5, 10)),
    Event(7, hms(12, 2, 10), hms(12, 5, 30)),
    Event(3, hms(12, 3, 30), hms(12, 6, 10)),
    Event(4, hms(12, 3, 50), hms(12, 6, 30)),
    Event(3, hms(12, 4, 20), hms(12, 6, 50)),
    Event(8, hms(12, 2, 50), hms(12, 7, 10)),
    Event(3, hms(12, 6, 10), hms(12, 7, 20)),
    Event(9, hms(12, 1, 30), hms(12, 8, 10)),
    Event(8, hms(12, 6, 40), hms(12, 8, 30)),
    Event(1, hms(12, 7, 20), hms(12, 8, 50)),
]
# The heuristic watermark: (processing time, watermark). It passes 12:02 after the 5 is seen
# but before the 9 arrives, which makes the 9 late.
WATERMARK: List[tuple] = [
    (hms(12, 5, 50), hms(12, 2, 0)),
    (hms(12, 7, 30), hms(12, 6, 0)),
    (hms(12, 8, 55), hms(12, 8, 30)),
]
END_OF_STREAM = hms(12, 9, 0)
MINUTES = range(hms(12, 6), END_OF_STREAM + 1, 60)   # the clock's ticks; Figure 11's rounds end
LAST_ARRIVAL = max(e.arrival_time for e in EVENTS)
KEY = "key"


def _stream(steps: List[tuple], endless: bool = False) -> pm.TestStream:
    """(processing time, kind, arg) steps replayed in time order: an element, a watermark
    move, the watermark to the end ("end"), or only the clock moving ("tick"); `endless`: a
    stream still running when they are over (the paper's streaming figures)."""
    stream, clock = pm.TestStream(endless=endless), 0
    for pt, kind, arg in sorted(steps, key=lambda s: s[0]):
        if pt > clock:
            stream.advance_processing_time(pt - clock)
            clock = pt
        if kind == "element":
            stream.add_elements([pm.TimestampedValue((KEY, arg.value), arg.event_time)])
        elif kind == "watermark":
            stream.advance_watermark_to(arg)
        elif kind == "end":
            stream.advance_watermark_to_infinity()
    return stream


def transcript() -> pm.TestStream:
    """The streaming input: elements and watermark moves at their processing times, the
    stream still running at the end of the figures."""
    return _stream([(e.arrival_time, "element", e) for e in EVENTS]
                   + [(pt, "watermark", wm) for pt, wm in WATERMARK]
                   + [(t, "tick", None) for t in MINUTES], endless=True)


def arrivals(events: Sequence[Event], until: int) -> pm.TestStream:
    """A batch run's input on the transcript's clock: `events` arriving at their arrival
    times, then at `until` the watermark jumping to the end, once (as the local runner reads
    a bounded source)."""
    return _stream([(e.arrival_time, "element", e) for e in events] + [(until, "end", None)])


def batch_input(p: pm.Pipeline, events: Sequence[Event] = EVENTS) -> pm.PCollection:
    return p | pm.Create([pm.TimestampedValue((KEY, e.value), e.event_time) for e in events])


LATENESS = 600
EARLY_LATE = pm.SequenceOf(pm.RepeatUntil(pm.AtPeriod(60), pm.AtWatermark()),
                           pm.Repeat(pm.AtWatermark()))


def _sum_per_key(pcoll: pm.PCollection, window_fn: Optional[pm.WindowFn] = None,
                 trigger: Optional[pm.Trigger] = None,
                 mode: pm.AccumulationMode = pm.AccumulationMode.DISCARDING) -> pm.PCollection:
    return (pcoll
            | pm.WindowInto(window_fn or pm.GlobalWindows(), trigger=trigger, accumulation_mode=mode,
                            allowed_lateness=LATENESS)
            | pm.CombinePerKey(pm.Sum()))


class Figure(NamedTuple):
    number: int
    title: str
    code: str
    streaming: bool
    window_fn: Optional[pm.WindowFn]
    trigger: Optional[pm.Trigger]
    mode: pm.AccumulationMode


A = pm.AccumulationMode
FIGURES: Dict[int, Figure] = {f.number: f for f in [
    Figure(6, "Classic Batch Execution", "Sum.integersPerKey()", False, None, None, A.DISCARDING),
    Figure(7, "GlobalWindows, AtPeriod, Accumulating", "Repeat(AtPeriod(1 min)), accumulating",
           True, None, pm.Repeat(pm.AtPeriod(60)), A.ACCUMULATING),
    Figure(8, "GlobalWindows, AtPeriod, Discarding", "Repeat(AtPeriod(1 min)), discarding",
           True, None, pm.Repeat(pm.AtPeriod(60)), A.DISCARDING),
    Figure(9, "GlobalWindows, AtCount, Discarding", "Repeat(AtCount(2)), discarding",
           True, None, pm.Repeat(pm.AtCount(2)), A.DISCARDING),
    Figure(10, "FixedWindows, Batch", "FixedWindows(2 min), accumulating", False,
           pm.FixedWindows(120), None, A.ACCUMULATING),
    Figure(11, "FixedWindows, Micro-Batch", "FixedWindows(2 min), accumulating, 1-min micro-batches",
           False, pm.FixedWindows(120), None, A.ACCUMULATING),
    Figure(12, "FixedWindows, Streaming", "FixedWindows(2 min), accumulating", True,
           pm.FixedWindows(120), None, A.ACCUMULATING),
    Figure(13, "FixedWindows, Streaming, Partial",
           "SequenceOf(RepeatUntil(AtPeriod(1 min), AtWatermark()), Repeat(AtWatermark())), accumulating",
           True, pm.FixedWindows(120), EARLY_LATE, A.ACCUMULATING),
    Figure(14, "Sessions, Retracting",
           "Sessions(1 min), SequenceOf(RepeatUntil(AtPeriod(1 min), AtWatermark()), "
           "Repeat(AtWatermark())), accumulating and retracting",
           True, pm.Sessions(60), EARLY_LATE, A.RETRACTING),
]}


class Pane(NamedTuple):
    """One emitted output, with the processing time at which it appeared."""

    value: int
    diff: int
    window: pm.BoundedWindow
    timing: pm.PaneTiming
    processing_time: int


def _run(fig: Figure, source, options: Optional[pm.PipelineOptions]) -> list:
    """(processing time, pane) for each pane the figure's pipeline produced."""
    p = pm.Pipeline(options=options or pm.PipelineOptions(["--quiet"]))
    sums = _sum_per_key(source(p), fig.window_fn, fig.trigger, fig.mode)
    return p.run().collect_timed(sums)


def _panes(values: List[pm.WindowedValue], at: int) -> List[Pane]:
    return [Pane(wv.value[1], wv.diff, wv.window, wv.pane.timing, at) for wv in values]


def run_figure(number: int, options: Optional[pm.PipelineOptions] = None) -> List[Pane]:
    """The panes of one figure, in the order they were produced, each with its processing time."""
    fig = FIGURES[number]
    if number == 11:
        # A micro-batch engine runs a batch over each minute's arrivals, keeping window state
        # between rounds, and outputs every window whose contents changed in the round.
        panes, previous = [], {}
        for end in MINUTES:
            seen = [e for e in EVENTS if e.arrival_time < end]
            result = {wv.window: wv for _, wv in _run(fig, lambda p: batch_input(p, seen), options)}
            for window, wv in sorted(result.items(), key=lambda kv: kv[0]):
                if previous.get(window) != wv.value:
                    panes += _panes([wv], end)
            previous = {w: wv.value for w, wv in result.items()}
        return panes
    if not fig.streaming:
        return _panes([wv for _, wv in _run(fig, batch_input, options)], LAST_ARRIVAL)
    # Each pane at the transcript's processing time when it was produced.
    return [pane for at, wv in _run(fig, lambda p: p | transcript(), options)
            for pane in _panes([wv], int(at))]


def fmt(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def describe(window: pm.BoundedWindow) -> str:
    if isinstance(window, pm.GlobalWindow):
        return "global window"
    return f"[{fmt(int(window.start))}, {fmt(int(window.end))})"


def print_figure(number: int, panes: List[Pane]) -> None:
    fig = FIGURES[number]
    print(f"\nFigure {number}: {fig.title}\n  {fig.code}")
    for pane in panes:
        sign = "-" if pane.diff < 0 else " "
        print(f"  at {fmt(pane.processing_time)}  {sign}{pane.value:<3} {pane.timing.value:<8} "
              f"{describe(pane.window)}")


class Drawn(NamedTuple):
    """A local run a figure is drawn from: its result, its sums, its input, and which of its
    panes to draw (None: all)."""

    result: Any   # what `Pipeline.run()` returned
    sums: pm.PCollection
    events: pm.PCollection
    where: Optional[Callable[[pm.WindowedValue], bool]]


def _kept_run(fig: Figure, stream: pm.TestStream) -> Drawn:
    p = pm.Pipeline(options=pm.PipelineOptions(["--quiet"]))
    events = (p | stream).keep()
    sums = _sum_per_key(events, fig.window_fn, fig.trigger, fig.mode)
    return Drawn(p.run(), sums, events, None)


def drawn_runs(number: int) -> List[Drawn]:
    """The local runs a figure is drawn from, with the panes `run_figure` gives, at the same
    processing times: a streaming figure's run on the transcript; a batch figure's on its
    input arriving as in the transcript, then the watermark jumping to the end once (a batch
    run on the transcript's clock); for Figure 11 one such run per round, each drawing the
    windows whose sums changed since the round before."""
    fig = FIGURES[number]
    if fig.streaming:
        return [_kept_run(fig, transcript())]
    if number != 11:
        return [_kept_run(fig, arrivals(EVENTS, LAST_ARRIVAL))]
    runs: List[Drawn] = []
    previous: Dict[Any, int] = {}
    for end in MINUTES:
        run = _kept_run(fig, arrivals([e for e in EVENTS if e.arrival_time < end], end))
        runs.append(run._replace(where=lambda wv, last=previous:
                                 last.get(wv.window) != wv.value[1]))
        previous = {wv.window: wv.value[1] for wv in run.result.collect(run.sums)}
    return runs


def draw_figure(number: int, path: str) -> None:
    """Draw a figure's runs (`drawn_runs`) with `pm.plot_panes` into a PNG file: HH:MM on both
    axes, the inputs as points, the watermark of the streaming figures as a line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = FIGURES[number]
    x0, x1 = hms(12, 0), hms(12, 8, 30)
    f, ax = plt.subplots(figsize=(7, 5))
    ticks = range(x0, hms(12, 8) + 1, 60)
    ax.set_xticks(list(ticks), [fmt(t)[:5] for t in ticks])
    yt = range(hms(12, 5), END_OF_STREAM + 1, 60)
    ax.set_yticks(list(yt), [fmt(t)[:5] for t in yt])
    runs = drawn_runs(number)
    for n, run in enumerate(runs, 1):
        last = n == len(runs)
        pm.plot_panes(run.result, run.sums, inputs=run.events if last else None,
                      watermark=WATERMARK if fig.streaming else None, where=run.where,
                      title=f"Figure {number}: {fig.title}", event_range=(x0, x1),
                      time_range=(hms(12, 5), END_OF_STREAM + 20), ax=ax,
                      path=path if last else None)
    plt.close(f)


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="figures", help="directory for the PNG files")
    parser.add_argument("--no-draw", action="store_true", help="print the panes only")
    args, rest = parser.parse_known_args(argv)
    options = pm.PipelineOptions(rest + ["--quiet"])
    if not args.no_draw:
        os.makedirs(args.out, exist_ok=True)
    print(f"The Dataflow Model's running example on the {options.runner} runner")
    for number in sorted(FIGURES):
        panes = run_figure(number, options)
        print_figure(number, panes)
        if options.runner != "local":
            same = sorted(map(repr, panes)) == sorted(map(repr, run_figure(number)))
            print(f"  the same panes as on the local runner: {'yes' if same else 'NO'}")
        if not args.no_draw:
            path = os.path.join(args.out, f"figure{number:02d}.png")
            draw_figure(number, path)
            print(f"  drawn to {path}")


if __name__ == "__main__":
    main()
