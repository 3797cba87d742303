"""The Dataflow paper's streaming video provider, on Kafka: per-user viewing sessions and
per-advertiser billed seconds, refined as late data arrives, with retractions.

    python examples/video_sessions.py [--runner=local|spark] [--bootstrap_servers=HOST:PORT]

A generator produces view events {user, ad, seconds, t} into the topic `views` over about
`--produce_seconds`, in event-time order with realistic disorder: events arrive up to a few
minutes (of event time) out of order, and a few users are offline and upload their views
hours late. The pipeline reads them with event time from `t`:

- sessions: per user, `Sessions(30 min)` in event time, early panes every `--early_seconds`
  of processing time (one minute in production, shortened for the demo), the on-time pane,
  and a late pane for each late view; accumulating-and-retracting, so a late view that joins
  two sessions retracts both and emits the merged one. Written to the topic `sessions`.
- billing: per advertiser, the seconds of every session so far, downstream of the sessions
  (the multi-stage case the paper says needs retractions: a merged session's old values are
  retracted here too), refreshed every `--early_seconds`. Written to the topic `billing`.

Meanwhile a consumer applies the `billing` topic (each record counted with its pomset-diff
header) and prints the totals until they equal the exact batch answer, then stops the
pipeline. Without --bootstrap_servers the embedded broker (noida-db) is started for the run.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402

MINUTE, HOUR = 60, 3600
START = 1_767_225_600   # 2026-01-01T00:00:00Z, the first event's time


class VideoOptions(pm.PipelineOptions):
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--bootstrap_servers", default=None,
                            help="a Kafka cluster (default: start the embedded broker)")
        parser.add_argument("--events", type=int, default=3000, help="view events to produce")
        parser.add_argument("--users", type=int, default=40)
        parser.add_argument("--ads", type=int, default=6)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--produce_seconds", type=float, default=15.0,
                            help="how long (wall clock) producing the events takes")
        parser.add_argument("--early_seconds", type=float, default=1.0,
                            help="processing time between early (and billing) panes")
        parser.add_argument("--gap_minutes", type=float, default=30.0, help="session gap")
        parser.add_argument("--topic_prefix", default="", help="prefix of the three topics")
        parser.add_argument("--role", default="demo", choices=("demo", "pipeline"),
                            help="demo: everything; pipeline: only run the pipeline")
        parser.add_argument("--until", default=None, choices=("latest",),
                            help="pipeline role: stop at the offsets latest at the start")
        parser.add_argument("--timeout", type=float, default=600.0,
                            help="demo: give up waiting for convergence after this long")


# --- the events ---------------------------------------------------------------------------------

def generate(n: int, users: int, ads: int, seed: int) -> List[Tuple[float, Dict[str, Any]]]:
    """(arrival order key, event) pairs sorted by arrival: views in sessions per user spread
    over six hours of event time; arrival is event time plus a delay of up to 3 minutes, and
    for a few offline users of 1 to 3 hours."""
    rng = random.Random(seed)
    offline = set(rng.sample(range(users), max(1, users // 10)))
    out = []
    for i in range(n):
        user = rng.randrange(users)
        t = START + rng.uniform(0, 6 * HOUR)
        event = {"user": f"user{user:03d}", "ad": f"ad{rng.randrange(ads)}",
                 "seconds": rng.randrange(5, 120), "t": round(t, 3)}
        delay = rng.uniform(1, 3 * HOUR) if user in offline and rng.random() < 0.5 else \
            rng.uniform(0, 3 * MINUTE)
        out.append((t + delay, event))
    out.sort(key=lambda pair: pair[0])
    return out


def produce(bootstrap: str, topic: str, events: List[Tuple[float, dict]], seconds: float) -> None:
    """Produce the events in arrival order, spread over `seconds` of wall-clock time."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "linger.ms": 5})
    first, last = events[0][0], events[-1][0]
    started = time.monotonic()
    for arrival, event in events:
        due = started + (arrival - first) / max(last - first, 1) * seconds
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        producer.produce(topic, key=event["user"].encode(), value=json.dumps(event).encode())
        producer.poll(0)
    producer.flush(60)


# --- the pipeline -------------------------------------------------------------------------------

class SecondsPerAd(pm.CombineFn):
    """Seconds watched per ad in a session, as a dict; retractable."""

    def create_accumulator(self) -> Dict[str, int]:
        return {}

    def add_input(self, acc: Dict[str, int], view: Tuple[str, int]) -> Dict[str, int]:
        ad, seconds = view
        acc[ad] = acc.get(ad, 0) + seconds
        return acc

    def retract_input(self, acc: Dict[str, int], view: Tuple[str, int]) -> Dict[str, int]:
        ad, seconds = view
        acc[ad] -= seconds
        if not acc[ad]:
            del acc[ad]
        return acc

    def merge_accumulators(self, accs: Any) -> Dict[str, int]:
        out: Dict[str, int] = {}
        for acc in accs:
            for ad, seconds in acc.items():
                out[ad] = out.get(ad, 0) + seconds
        return out

    def extract_output(self, acc: Dict[str, int]) -> Dict[str, int]:
        return dict(sorted(acc.items()))


def session_record(kv: Tuple[str, Dict[str, int]], window: Any = pm.DoFn.WindowParam) -> dict:
    user, per_ad = kv
    return {"user": user, "start": float(window.start), "end": float(window.end),
            "seconds": sum(per_ad.values()), "ads": per_ad}


def sessions_and_billing(views: pm.PCollection, gap_minutes: float = 30.0,
                         early_seconds: float = 1.0) -> Tuple[pm.PCollection, pm.PCollection]:
    """Per-user sessions (records with start, end, seconds and seconds per ad) and
    per-advertiser billed seconds ((ad, seconds) totals), both retracting."""
    sessions = (views
                | "key by user" >> pm.Map(lambda e: (e["user"], (e["ad"], e["seconds"])))
                | "sessions" >> pm.WindowInto(
                    pm.Sessions(gap_minutes * MINUTE),
                    trigger=pm.AfterWatermark(early=pm.AfterProcessingTime(early_seconds),
                                              late=pm.AfterCount(1)),
                    accumulation_mode=pm.AccumulationMode.RETRACTING,
                    allowed_lateness=24 * HOUR)
                | "seconds per ad" >> pm.CombinePerKey(SecondsPerAd())
                | "session record" >> pm.Map(session_record))
    billing = (sessions
               | "per ad" >> pm.FlatMap(lambda s: sorted(s["ads"].items()))
               | "billing window" >> pm.WindowInto(
                   pm.GlobalWindows(),
                   trigger=pm.Repeatedly(pm.AfterProcessingTime(early_seconds)),
                   accumulation_mode=pm.AccumulationMode.RETRACTING)
               | "billed seconds" >> pm.CombinePerKey(pm.Sum()))
    return sessions, billing


def batch_answer(events: List[dict], gap_minutes: float = 30.0) -> Tuple[set, Dict[str, int]]:
    """The exact answer: every user's sessions (user, start, end, seconds) and the seconds
    billed per ad, computed directly from all the events."""
    gap = gap_minutes * MINUTE
    by_user: Dict[str, list] = defaultdict(list)
    for e in events:
        by_user[e["user"]].append(e)
    sessions, billing = set(), defaultdict(int)
    for user, views in by_user.items():
        views.sort(key=lambda e: e["t"])
        group: List[dict] = []
        for e in views + [None]:
            if group and (e is None or e["t"] >= max(v["t"] for v in group) + gap):
                sessions.add((user, _micro_seconds(group[0]["t"]),
                              _micro_seconds(max(v["t"] for v in group)) + gap,
                              sum(v["seconds"] for v in group)))
                group = []
            if e is not None:
                group.append(e)
        for e in views:
            billing[e["ad"]] += e["seconds"]
    return sessions, dict(billing)


def _micro_seconds(t: float) -> float:
    """A time as pomset holds it (whole microseconds), in seconds."""
    return pm.Timestamp(t).micros / 1_000_000


def topics(prefix: str) -> Tuple[str, str, str]:
    return f"{prefix}views", f"{prefix}sessions", f"{prefix}billing"


def run_pipeline(options: VideoOptions) -> pm.PipelineResult:
    views_topic, sessions_topic, billing_topic = topics(options.topic_prefix)
    servers = options.bootstrap_servers
    with pm.Pipeline(options=options) as p:
        views, bad = (p | "views" >> pm.ReadFromKafka(
            servers, views_topic, timestamp="t", max_out_of_orderness=5 * MINUTE,
            idle_timeout=10, until=options.until).with_exception_handling())
        sessions, billing = sessions_and_billing(views, options.gap_minutes,
                                                 options.early_seconds)
        sessions | "write sessions" >> pm.WriteToKafka(servers, sessions_topic,
                                                        key=lambda s: s["user"])
        billing | "write billing" >> pm.WriteToKafka(servers, billing_topic, key=lambda kv: kv[0])
        bad | "write bad records" >> pm.WriteToKafka(servers, f"{views_topic}-dead-letters")
    return p.result


# --- the demo -----------------------------------------------------------------------------------

def create_topics(bootstrap: str, names: List[str], partitions: int = 3) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = admin.list_topics(timeout=10).topics
    new = [NewTopic(t, num_partitions=partitions, replication_factor=1)
           for t in names if t not in existing]
    for future in admin.create_topics(new).values() if new else ():
        future.result(30)


class BillingView:
    """Applies the billing topic as it grows: per ad, the sum of value x diff."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Consumer, TopicPartition
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"view-{uuid.uuid4()}",
                                  "isolation.level": "read_committed",
                                  "fetch.max.bytes": 1 << 20, "max.partition.fetch.bytes": 1 << 20})
        parts = self.consumer.list_topics(topic, timeout=10).topics[topic].partitions
        self.consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        self.totals: Dict[str, int] = defaultdict(int)

    def poll(self, timeout: float) -> bool:
        changed = False
        for msg in self.consumer.consume(1000, timeout):
            if msg.error():
                continue
            ad, seconds = json.loads(msg.value())
            diff = -1 if dict(msg.headers() or ()).get("pomset-diff") == b"-1" else 1
            self.totals[ad] += diff * seconds
            changed = True
        return changed


def demo(options: VideoOptions, argv: List[str]) -> int:
    broker = None
    servers = options.bootstrap_servers
    if servers is None:
        from pomset.broker import EmbeddedKafka
        broker = EmbeddedKafka()
        servers = broker.start()
        print(f"started the embedded Kafka broker at {servers}")
    prefix = options.topic_prefix or f"demo-{uuid.uuid4().hex[:6]}-"
    views_topic, sessions_topic, billing_topic = topics(prefix)
    create_topics(servers, [views_topic, sessions_topic, billing_topic,
                            f"{views_topic}-dead-letters"])
    events = generate(options.events, options.users, options.ads, options.seed)
    _, expected = batch_answer([e for _, e in events], options.gap_minutes)
    log = tempfile.TemporaryFile(mode="w+")   # the pipeline's stderr, shown if it fails
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), *argv, "--role=pipeline",
                              f"--bootstrap_servers={servers}", f"--topic_prefix={prefix}"],
                             stderr=log, start_new_session=True)
    producer = threading.Thread(target=produce, daemon=True,
                                args=(servers, views_topic, events, options.produce_seconds))
    producer.start()
    view = BillingView(servers, billing_topic)
    print(f"producing {len(events)} views over {options.produce_seconds:.0f}s; the pipeline runs "
          f"on the {options.runner} runner; billed seconds per ad as the pipeline refines them:")
    started, converged = time.monotonic(), False
    try:
        while time.monotonic() - started < options.timeout and child.poll() is None:
            if view.poll(0.5):
                current = {ad: s for ad, s in sorted(view.totals.items()) if s}
                print(f"  [{time.monotonic() - started:5.1f}s] {current}")
                if not producer.is_alive() and current == expected:
                    converged = True
                    break
    finally:
        view.consumer.close()
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
            child.wait(120)
        if broker is not None:
            broker.stop()
    if not converged:
        log.seek(0)
        print(log.read()[-5000:], file=sys.stderr)
    print(f"batch answer:        {dict(sorted(expected.items()))}")
    print("the billing totals equal the batch answer: " + ("yes" if converged else "NO"))
    return 0 if converged else 1


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    options = VideoOptions(argv)
    if options.role == "pipeline":   # its outputs go to sinks: the run keeps none
        try:
            run_pipeline(options)
        except KeyboardInterrupt:
            pass
        return 0
    return demo(options, [a for a in argv if not a.startswith(("--bootstrap_servers",
                                                               "--topic_prefix"))])


if __name__ == "__main__":
    sys.exit(main())
