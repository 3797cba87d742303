"""A file-stream pipeline run as its own process by tests/test_file_stream.py on the local
runner, so that the test can add files while it runs, stop it and start it again: the JSON
files under --input, read as a stream (`--streaming`), summed per key and fixed window of 30 s
and written with WriteToText, a file per committed epoch."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402


class JobOptions(pm.PipelineOptions):
    @classmethod
    def add_arguments(cls, parser):
        parser.add_argument("--input", required=True)
        parser.add_argument("--output", required=True)


def run(argv: list) -> None:
    options = JobOptions(["--runner=local", "--streaming", "--quiet"] + argv)
    with pm.Pipeline(options=options) as p:
        (p | pm.ReadFromJson(os.path.join(options.input, "*.jsonl"), timestamp_field="t")
         | pm.Map(lambda r: (r["k"], r["v"]))
         | pm.WindowInto(pm.FixedWindows(30))
         | pm.CombinePerKey(sum)
         | pm.WriteToText(options.output, ".jsonl"))


if __name__ == "__main__":
    run(sys.argv[1:])
