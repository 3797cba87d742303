"""An OPlus wordcount from a Kafka topic of tweets ({"text", "t"}) to a Kafka topic of counts,
run as its own process by tests/test_vsn.py, so that the test can stop it with SIGTERM (it
commits and checkpoints what it did) and start it again from its checkpoint."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402


class JobOptions(pm.PipelineOptions):
    @classmethod
    def add_arguments(cls, parser):
        parser.add_argument("--bootstrap", required=True)
        parser.add_argument("--source", required=True)
        parser.add_argument("--sink", required=True)
        parser.add_argument("--parallelism", type=int, default=1)
        parser.add_argument("--until", default=None)


def count(w, tweet, emit):
    w.state += 1


def report(w, emit):
    emit((w.key, w.start // 1_000_000, w.state))


def main() -> None:
    options = JobOptions(sys.argv[1:])
    p = pm.Pipeline(options=options)
    (p | pm.ReadFromKafka(options.bootstrap, options.source, timestamp="t", until=options.until)
     | pm.Map(lambda r: r["text"])
     | "wc" >> pm.OPlus(advance=60, size=120, keys=lambda text: set(text.split()),
                        initial=lambda: 0, update=count, output=report,
                        parallelism=options.parallelism, max_parallelism=4)
     | pm.WriteToKafka(options.bootstrap, options.sink))
    p.run()


if __name__ == "__main__":
    main()
