"""Batch over files: per-user scores in 10-minute windows, read from JSON lines, written to
Parquet with window, pane and diff columns.

    python examples/windowed_files.py --input events.jsonl --output out/scores [--runner=local]

Without --input it writes a small sample file first. Malformed lines go to a dead-letter
text file next to the output and are counted in the run summary.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402


class ScoreOptions(pm.PipelineOptions):
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--input", help="JSON lines with user, score, ts (seconds)")
        parser.add_argument("--output", default="out/scores", help="output path prefix")


def write_sample(path: str, n: int = 2000, seed: int = 7) -> None:
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"user": f"u{rng.randrange(20)}", "score": rng.randrange(100),
                                "ts": 1_700_000_000 + rng.randrange(3600)}) + "\n")
        f.write("{not json\n")


def build(p: pm.Pipeline, input_path: str, output: str) -> None:
    events, bad = p | pm.ReadFromJson(input_path, timestamp_field="ts").with_exception_handling()
    (events
     | pm.Map(lambda e: (e["user"], e["score"]))
     | pm.WindowInto(pm.FixedWindows(600))
     | pm.CombinePerKey(pm.Sum())
     | pm.WriteToParquet(output, file_name_suffix=".parquet"))
    bad | pm.Map(lambda letter: letter.error) | pm.WriteToText(output + "-dead-letters", file_name_suffix=".txt")


def main(argv=None) -> None:
    options = ScoreOptions(sys.argv[1:] if argv is None else argv)
    input_path = options.input
    if input_path is None:
        input_path = os.path.join(tempfile.mkdtemp(prefix="pomset-sample-"), "events.jsonl")
        write_sample(input_path)
    with pm.Pipeline(options=options) as p:
        build(p, input_path, options.output)
    result = p.result
    print(f"read {result.counter('read')} records, dead-lettered {result.counter('dead_lettered')}, "
          f"wrote {options.output}-00000-of-00001.parquet on the {options.runner} runner")


if __name__ == "__main__":
    main()
