"""A small Kafka job for reliability tests, run as a user runs a pipeline: per key, the sum of
`v` over windows of 10 s of `t`, written to each of OUT's comma-separated sinks: a topic, or
JSON files for `file:PREFIX`; with a dead-letter topic, records that do not decode go there.

    python sum_job.py BOOTSTRAP SOURCE OUT DEAD [pipeline flags] [--until=latest]"""
from __future__ import annotations

import sys

import pomset as pm


def main(argv: list) -> None:
    bootstrap, source, out, dead = argv[:4]
    flags = argv[4:]
    until = "latest" if "--until=latest" in flags else None
    flags = [f for f in flags if f != "--until=latest"]
    with pm.Pipeline(options=pm.PipelineOptions(flags)) as p:
        read = pm.ReadFromKafka(bootstrap, source, timestamp="t", until=until)
        if dead:
            records, bad = p | "read" >> read.with_exception_handling()
            bad | "dead letters" >> pm.WriteToKafka(bootstrap, dead)
        else:
            records = p | "read" >> read
        sums = (records
                | "window" >> pm.WindowInto(pm.FixedWindows(10))
                | "kv" >> pm.Map(lambda r: (r["k"], r["v"]))
                | "sum" >> pm.CombinePerKey(pm.Sum()))
        for i, sink in enumerate(out.split(",")):
            sums | f"write {i}" >> (pm.WriteToJson(sink[5:]) if sink.startswith("file:")
                                   else pm.WriteToKafka(bootstrap, sink))


if __name__ == "__main__":
    main(sys.argv[1:])
