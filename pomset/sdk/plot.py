"""The paper's pane timeline (Akidau et al., Figures 7-14) of any run: event time across,
processing time up, each pane a box over its window up to when it fired, labelled with its
value (a retraction in red, with its sign), early panes grey, the rest blue; the inputs as
points where a PCollection of them is given, and a watermark as a dashed line."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..windowing import GlobalWindow, PaneTiming
from ..triggers import AccumulationMode


def plot_panes(result: Any, pcoll: Any, *, inputs: Any = None,
               watermark: Optional[Sequence[Tuple[float, float]]] = None,
               label: Optional[Callable[[Any], Any]] = None,
               where: Optional[Callable[[Any], bool]] = None, title: Optional[str] = None,
               event_range: Optional[Tuple[float, float]] = None,
               time_range: Optional[Tuple[float, float]] = None,
               path: Optional[str] = None, ax: Any = None) -> Any:
    """Draw `pcoll`'s panes from a run's `result` (it must have been kept: `.keep()`, or a
    leaf) and return the matplotlib Axes; with `path`, also save the figure there.

    `inputs`: a kept PCollection of the elements going in, drawn at (event time, processing
    time); `watermark`: (processing time, watermark) steps in seconds; `label(value)`: what to
    write on a pane (default: the value, or the value of a (key, value) pair); `where(wv)`:
    which panes to draw (default: all), e.g. one key's. Several calls with the same `ax` draw
    several runs together. In discarding mode a pane's box starts where its window's previous
    pane ended, else at the bottom."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    timed = [(float(at), wv) for at, wv in result.collect_timed(pcoll)
             if where is None or where(wv)]
    points = ([(float(wv.timestamp), float(at), wv.value)
               for at, wv in result.collect_timed(inputs)] if inputs is not None else [])
    label = label or _value
    bounded = [wv.window for _, wv in timed if not isinstance(wv.window, GlobalWindow)]
    starts = [float(w.start) for w in bounded] + [p[0] for p in points]
    ends = [float(w.end) for w in bounded] + [p[0] for p in points]
    x0, x1 = event_range or ((min(starts), max(ends)) if starts else (0.0, 1.0))
    fired = [at for at, _ in timed] + [p[1] for p in points]
    y0, y1 = time_range or ((min(fired), max(fired)) if fired else (0.0, 1.0))
    pad = max((y1 - y0) * 0.03, 1.0)
    discarding = getattr(pcoll.windowing, "accumulation_mode", None) is AccumulationMode.DISCARDING
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 5))
    last_top: Dict[Any, float] = {}
    stacked: Dict[Tuple[float, float], int] = {}
    for at, wv in timed:
        w = wv.window
        left, right = ((x0, x1) if isinstance(w, GlobalWindow)
                       else (float(w.start), float(w.end)))
        bottom = last_top.get(w, y0 - pad) if discarding else y0 - pad
        last_top[w] = at
        color = ("#d62728" if wv.diff < 0 else
                 "#7f7f7f" if wv.pane.timing is PaneTiming.EARLY else "#1f77b4")
        ax.add_patch(Rectangle((left, bottom), right - left, max(at - bottom, pad / 2),
                               alpha=0.25, facecolor=color, edgecolor=color))
        nth = stacked.get((right, at), 0)
        stacked[(right, at)] = nth + 1
        ax.annotate(f"{'-' if wv.diff < 0 else ''}{label(wv.value)}", (right, at),
                    xytext=(-3, -3 - 12 * nth), textcoords="offset points", ha="right",
                    va="top", fontsize=10, color=color, fontweight="bold")
    for t, at, value in points:
        ax.plot(t, at, "o", color="black", markersize=3)
        ax.annotate(str(label(value)), (t, at), xytext=(3, 3), textcoords="offset points",
                    fontsize=9)
    if watermark:
        xs, ys = [x0], [y0 - pad]
        for pt, wm in watermark:
            xs += [xs[-1], wm]
            ys += [pt, pt]
        xs.append(xs[-1])
        ys.append(y1 + pad)
        ax.plot(xs, ys, "--", color="black", linewidth=1, label="watermark")
        ax.legend(loc="lower right")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0 - pad, y1 + pad)
    ax.set_xlabel("Event Time")
    ax.set_ylabel("Processing Time")
    if title:
        ax.set_title(title, fontsize=11)
    if path is not None:
        ax.figure.tight_layout()
        ax.figure.savefig(path, dpi=110)
    return ax


def _value(value: Any) -> Any:
    return value[1] if isinstance(value, tuple) and len(value) == 2 else value


__all__: List[str] = ["plot_panes"]
