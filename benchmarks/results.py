"""Where the benchmarks write their figures: each table between its begin and end markers in
BENCHMARKS.md and docs/performance.md (the rest of each file kept), and each curve as a PNG
in docs/img with its data beside it as JSON, so that a plot can be drawn again from the data."""
from __future__ import annotations

import compileall
import json
import os
from typing import Any, Dict, List, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ("BENCHMARKS.md", os.path.join("docs", "performance.md"))
IMG = os.path.join("docs", "img")


def markers(name: str) -> Tuple[str, str]:
    """The begin and end markers of the block called `name`."""
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def write_block(begin: str, end: str, block: str, docs: Sequence[str] = DOCS) -> List[str]:
    """Replace what each of `docs` (paths from the repository root) holds between `begin` and
    `end` with `block`; return the docs written. A doc without the markers is left as it is;
    when none has them the figures would be lost, so that is an error naming the markers."""
    written = []
    for doc in docs:
        path = os.path.join(ROOT, doc)
        if not os.path.exists(path):
            continue
        text = open(path).read()
        if begin not in text:
            continue
        start = text.index(begin) + len(begin)
        stop = text.find(end, start)
        if stop < 0:
            raise ValueError(f"{doc}: {begin} has no {end} after it")
        with open(path, "w") as f:
            f.write(text[:start] + "\n" + block + "\n" + text[stop:])
        written.append(doc)
    if not written:
        raise ValueError(f"none of {', '.join(docs)} holds the markers {begin} ... {end}: "
                         "add them where the table belongs")
    return written


def write_plot(name: str, figure: Dict[str, Any]) -> str:
    """Write `figure` (title, xlabel, ylabel, optional logx/logy, note, and series: label -> [[x, y],
    ...]) to docs/img/`name`.json and draw it into docs/img/`name`.png; return the PNG's path."""
    with open(os.path.join(ROOT, IMG, name + ".json"), "w") as f:
        json.dump(figure, f, indent=1)
        f.write("\n")
    return draw(name)


def draw(name: str) -> str:
    """Draw docs/img/`name`.png from docs/img/`name`.json."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    figure = json.load(open(os.path.join(ROOT, IMG, name + ".json")))
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for label, points in figure["series"].items():
        xs, ys = zip(*sorted(points))
        ax.plot(xs, ys, marker="o", label=label)
    if figure.get("ideal"):
        xs = sorted({x for points in figure["series"].values() for x, _ in points})
        ax.plot(xs, xs, linestyle=":", color="grey", label="ideal (k times one)")
    if figure.get("logx"):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    else:
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    if figure.get("logy"):
        ax.set_yscale("log")
    ax.set_title(figure["title"], fontsize=10)
    ax.set_xlabel(figure["xlabel"])
    ax.set_ylabel(figure["ylabel"])
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    if figure.get("note"):
        fig.text(0.01, 0.01, figure["note"], fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    path = os.path.join(ROOT, IMG, name + ".png")
    fig.savefig(path)
    plt.close(fig)
    return path


def compile_bytecode() -> None:
    """Write pomset's bytecode, as installing it from a wheel does: a benchmark that times
    fresh processes (or Spark's Python workers) would otherwise time compiling its modules
    from source wherever `PYTHONDONTWRITEBYTECODE` is set, as on the machines these run on."""
    compileall.compile_dir(os.path.join(ROOT, "pomset"), quiet=1)
