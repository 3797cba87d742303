"""pm.plot_panes draws any run's pane timeline as the paper draws its figures: a box per pane
over its window up to when it fired, labelled with its value, retractions in red."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pomset as pm  # noqa: E402


def test_plot_panes_draws_each_pane_of_a_run(tmp_path):
    stream = (pm.TestStream()
              .add_elements([pm.TimestampedValue(("k", 5), 10)])
              .advance_processing_time(30)
              .add_elements([pm.TimestampedValue(("k", 7), 50)])
              .advance_watermark_to(60)
              .add_elements([pm.TimestampedValue(("k", 3), 20)])
              .advance_watermark_to_infinity())
    p = pm.Pipeline(argv=["--quiet"])
    events = (p | stream).keep()
    sums = (events | pm.WindowInto(pm.FixedWindows(60),
                                   trigger=pm.AfterWatermark(early=pm.AfterProcessingTime(10),
                                                             late=pm.AfterCount(1)),
                                   accumulation_mode=pm.AccumulationMode.RETRACTING,
                                   allowed_lateness=600)
            | pm.CombinePerKey(sum))
    result = p.run()
    panes = result.collect(sums)
    path = tmp_path / "panes.png"
    ax = pm.plot_panes(result, sums, inputs=events, watermark=[(0, 0), (30, 60)],
                       title="sums", path=str(path))
    assert path.stat().st_size > 10_000
    assert len(ax.patches) == len(panes)
    labels = [t.get_text() for t in ax.texts]
    want = [f"{'-' if wv.diff < 0 else ''}{wv.value[1]}" for wv in panes]
    assert labels[:len(panes)] == want and "-5" in want
    assert labels[len(panes):] == ["5", "7", "3"]                # the inputs
    reds = [patch for patch in ax.patches if patch.get_facecolor()[0] > 0.8]
    assert len(reds) == sum(wv.diff < 0 for wv in panes)
    assert ax.get_title() == "sums" and ax.get_legend() is not None


def test_plot_panes_draws_the_panes_asked_for_and_several_runs_on_one_axes():
    p = pm.Pipeline(argv=["--quiet"])
    sums = (p | pm.Create([pm.TimestampedValue((k, 1), t) for k in "ab" for t in (5, 65)])
            | pm.WindowInto(pm.FixedWindows(60)) | pm.CombinePerKey(sum))
    result = p.run()
    ax = pm.plot_panes(result, sums, where=lambda wv: wv.value[0] == "a")
    assert len(ax.patches) == 2
    pm.plot_panes(result, sums, where=lambda wv: wv.value[0] == "b", ax=ax)
    assert len(ax.patches) == 4
