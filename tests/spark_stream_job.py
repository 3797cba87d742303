"""A streaming pipeline run as its own process by tests/test_spark_streaming.py, so that the
test can kill it mid-stream (the process group, JVM included) and start it again.

--job=transcript: a scripted TestStream through early/on-time/late retracting window sums,
  written with WriteToText (one file per micro-batch);
--job=timed: the same stream through accumulating window sums with processing-time early and
  late panes (the grouping Spark holds a window at a time, `runtime.timed_combine`);
--job=files: JSON files appearing under --input, read as a stream whose watermark trails the
  largest event time read by --max_out_of_orderness, summed per fixed window."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402


class JobOptions(pm.PipelineOptions):
    @classmethod
    def add_arguments(cls, parser):
        parser.add_argument("--job", choices=("transcript", "timed", "files"), required=True)
        parser.add_argument("--input", default=None)
        parser.add_argument("--output", required=True)


def transcript() -> pm.TestStream:
    """Twelve steps or so: elements for three keys, processing-time and watermark advances."""
    s = pm.TestStream()
    for i in range(8):
        s = s.add_elements([pm.TimestampedValue((k, i + j), 10 * i + 3 * j)
                            for j, k in enumerate("abc")])
        s = s.advance_processing_time(30)
        if i % 2:
            s = s.advance_watermark_to(10 * i)
    return s.add_elements([pm.TimestampedValue(("a", 100), 5)]).advance_watermark_to_infinity()


def run(argv: list) -> None:
    """The job with these flags (in this process: a test runs the uninterrupted one here)."""
    options = JobOptions(argv + ["--runner=spark", "--quiet"])
    with pm.Pipeline(options=options) as p:
        mode = pm.AccumulationMode.RETRACTING
        if options.job == "transcript":
            events = p | transcript()
            trigger = pm.AfterWatermark(early=pm.AfterProcessingTime(30), late=pm.AfterCount(1))
        elif options.job == "timed":
            events = p | transcript()
            trigger = pm.AfterWatermark(early=pm.AfterProcessingTime(30),
                                        late=pm.AfterProcessingTime(10))
            mode = pm.AccumulationMode.ACCUMULATING
        else:
            events = (p | pm.ReadFromJson(os.path.join(options.input, "*.jsonl"), timestamp_field="t")
                      | pm.Map(lambda r: (r["k"], r["v"])))
            trigger = pm.DefaultTrigger()
        (events
         | pm.WindowInto(pm.FixedWindows(30), trigger=trigger, allowed_lateness=1000,
                         accumulation_mode=mode)
         | pm.CombinePerKey(sum)
         | pm.WriteToText(options.output, ".jsonl"))


if __name__ == "__main__":
    run(sys.argv[1:])
