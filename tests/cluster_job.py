"""A pipeline run as a user runs it, against the test cluster (tests/test_spark_cluster.py): per
key, the sum of the tripled `v` over windows of 30 s of `t`, written as JSON lines under
OUTPUT; its function lives in a module of its own beside it (cluster_helpers), which the
cluster's executors get only from what pomset ships.

    python cluster_job.py DIR OUTPUT [pipeline flags]            DIR's *.jsonl files
    python cluster_job.py kafka://BOOTSTRAP/TOPIC OUTPUT [pipeline flags] [--until=latest]
                                    a topic (its event times 10 s out of order at most)"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import cluster_helpers  # noqa: E402
import pomset as pm  # noqa: E402


def main(argv: list) -> None:
    source, output = argv[:2]
    flags = [f for f in argv[2:] if f != "--until=latest"]
    with pm.Pipeline(options=pm.PipelineOptions(flags + ["--runner=spark", "--quiet"])) as p:
        if source.startswith("kafka://"):
            bootstrap, topic = source[len("kafka://"):].split("/")
            records = p | pm.ReadFromKafka(bootstrap, topic, timestamp="t", max_out_of_orderness=10,
                                           until="latest" if "--until=latest" in argv else None)
        else:
            records = p | pm.ReadFromJson(os.path.join(source, "*.jsonl"), timestamp_field="t")
        (records
         | pm.Map(cluster_helpers.key_value)
         | pm.WindowInto(pm.FixedWindows(30))
         | pm.CombinePerKey(sum)
         | pm.WriteToText(output, ".jsonl"))


if __name__ == "__main__":
    main(sys.argv[1:])
