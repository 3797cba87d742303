"""`result.metrics()` has the same keys per step on every runner mode for the same pipeline:
reads, writes, dead letters, late and dropped elements (and each runner's own extras only
where named below)."""
from __future__ import annotations

import json

import pomset as pm
from conftest import runner_flags

#: counts only the local runner keeps (elements into and out of every stage)
LOCAL_FLOW = ("received", "emitted")


def _pipeline(p, tmp_path):
    def parse(line: str):   # nested: Spark's workers get it by value
        if not line.startswith("{"):
            raise ValueError(f"not JSON: {line!r}")
        return json.loads(line)

    tmp_path.mkdir()
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"k": k, "v": i}) + "\n" for i, k in enumerate("abcab"))
                   + "oops\n")
    read = p | "Read" >> pm.ReadFromText(str(src))
    parsed = read | "Parse" >> pm.Map(parse).with_exception_handling()
    sums = (parsed.good
            | "Key" >> pm.Map(lambda r: pm.TimestampedValue((r["k"], r["v"]), r["v"]))
            | "Window" >> pm.WindowInto(pm.FixedWindows(10))
            | "Sum" >> pm.CombinePerKey(sum))
    sums | "Write" >> pm.WriteToText(str(tmp_path / "out"))
    more = p | "More" >> pm.Create([("z", 1)]) | "Again" >> pm.WindowInto(pm.FixedWindows(10))
    (sums, more) | "Both" >> pm.Flatten()


def test_metrics_have_the_same_keys_on_every_runner(runner, tmp_path):
    keys = {}
    for mode in sorted({"local", runner}):
        p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(mode) + ["--quiet"]))
        _pipeline(p, tmp_path / mode)
        metrics = p.run().metrics()
        keys[mode] = {label: {k for k in m if not k.startswith(LOCAL_FLOW)}
                      for label, m in metrics.items() if label != "micro-batches"}
        if mode == "local":
            counts = metrics
    assert keys[runner] == keys["local"], (keys[runner], keys["local"])
    assert counts["Parse"]["dead_lettered"] == 1 and counts["Read"]["read"] == 6
    assert counts["Write"]["written"] == 3 and counts["Sum"]["late"] == 0
