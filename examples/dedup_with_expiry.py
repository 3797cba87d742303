"""Deduplication with expiry, a stateful DoFn: at-least-once producers deliver some events
twice (a retry after a lost acknowledgement); each event id passes once, repeats within
`--ttl_minutes` of event time are dropped (and counted), and an id is forgotten once the
watermark is `--ttl_minutes` past its first sight, so the state stays as small as the ids
of the last `--ttl_minutes`.

    python examples/dedup_with_expiry.py [--runner=local|spark] [--events=N]
    python examples/dedup_with_expiry.py --role=pipeline --bootstrap_servers=H:P \\
        --source=TOPIC --sink=TOPIC [--until=latest] [--checkpoint_dir=DIR]

The first form generates events with repeats, deduplicates them, and checks the answer:
every id once. The second reads the events from Kafka (JSON {"id", "user", "t"}) and writes
the unique ones to Kafka, exactly once with a checkpoint (tests/test_stateful_dofn.py kills
it mid-stream and restarts it).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from typing import Any, Dict, Iterator, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402
from pomset import DoFn  # noqa: E402

START = 1_767_225_600   # 2026-01-01T00:00:00Z


class DedupOptions(pm.PipelineOptions):
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--role", default="demo", choices=("demo", "pipeline"))
        parser.add_argument("--events", type=int, default=20_000, help="demo: events to make")
        parser.add_argument("--ttl_minutes", type=float, default=10.0,
                            help="how long (event time) an id is remembered")
        parser.add_argument("--bootstrap_servers", default=None)
        parser.add_argument("--source", default="events", help="pipeline: the input topic")
        parser.add_argument("--sink", default="unique", help="pipeline: the output topic")
        parser.add_argument("--until", default=None, choices=("latest",))


class FirstWithin(DoFn):
    """Per event id: the first event passes and arms an expiry timer `ttl` seconds of event
    time later; repeats before it fires are dropped and counted; when it fires the id is
    forgotten."""

    SEEN = pm.ReadModifyWriteStateSpec("seen")
    EXPIRY = pm.TimerSpec("expiry", pm.TimeDomain.WATERMARK)

    def __init__(self, ttl: float) -> None:
        super().__init__()
        self.ttl = ttl
        self.repeats = pm.Metrics.counter(FirstWithin, "repeats")

    def process(self, keyed: Any, ts: Any = DoFn.TimestampParam,
                seen: Any = DoFn.StateParam(SEEN),
                expiry: Any = DoFn.TimerParam(EXPIRY)) -> Iterator[Dict[str, Any]]:
        if seen.read():
            self.repeats.inc()
            return
        seen.write(True)
        expiry.set(ts + self.ttl)
        yield keyed[1]

    @pm.on_timer(EXPIRY)
    def forget(self, seen: Any = DoFn.StateParam(SEEN)) -> None:
        seen.clear()


def dedup(events: pm.PCollection, ttl_minutes: float) -> pm.PCollection:
    """The events, each id once within `ttl_minutes` of event time."""
    return (events | "ById" >> pm.Map(lambda e: (e["id"], e))
            | "FirstWithin" >> pm.ParDo(FirstWithin(ttl_minutes * 60)))


def generate(n: int, seed: int = 1) -> List[Dict[str, Any]]:
    """`n` events a second apart, one in five delivered again up to a minute later (in the
    order they arrive)."""
    rng = random.Random(seed)
    arrivals = []
    for i in range(n):
        event = {"id": f"e{i}", "user": f"u{rng.randrange(50)}", "t": START + i}
        arrivals.append((i, event))
        if rng.random() < 0.2:
            arrivals.append((i + rng.uniform(1, 60), dict(event)))
    return [e for _, e in sorted(arrivals, key=lambda a: a[0])]


def pipeline(options: DedupOptions) -> "pm.PipelineResult":
    """The pipeline role: Kafka in, the unique events to Kafka."""
    with pm.Pipeline(options=options) as p:
        events = p | "Read" >> pm.ReadFromKafka(options.bootstrap_servers, options.source,
                                                 timestamp="t", max_out_of_orderness=120,
                                                 until=options.until)
        (dedup(events, options.ttl_minutes)
         | "Write" >> pm.WriteToKafka(options.bootstrap_servers, options.sink,
                                      key=lambda e: e["id"]))
    return p.result


def demo(options: DedupOptions) -> int:
    events = generate(options.events)
    with pm.Pipeline(options=options) as p:
        unique = dedup(p | pm.Create([pm.TimestampedValue(e, e["t"]) for e in events]),
                       options.ttl_minutes)
    got = [wv.value["id"] for wv in p.result.collect(unique)]
    (repeats,) = p.result.metrics().query(pm.MetricsFilter().with_name("repeats"))["counters"]
    ok = sorted(got) == sorted({e["id"] for e in events})
    print(f"{len(events):,} events in, {len(got):,} unique out, {repeats.committed:,} repeats "
          f"dropped; every id once: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


def main(argv: Optional[List[str]] = None) -> int:
    options = DedupOptions(argv if argv is not None else sys.argv[1:])
    if options.role == "pipeline":
        pipeline(options)
        return 0
    return demo(options)


if __name__ == "__main__":
    sys.exit(main())
