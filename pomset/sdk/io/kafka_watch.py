"""Whether a run's Kafka brokers answer. A broker that stops answering without closing its
connections (a stopped process, a frozen machine, a network that drops packets) makes the
clients wait without an error: reads return nothing and the run seems idle. `BrokerWatch`
asks each cluster for its metadata about every second, on a thread of its own, and says when
one has not answered for `--kafka_stall_warning` seconds: a `KafkaStallWarning` naming its
bootstrap servers and how long, a note on the status line while it lasts, and another warning
when it answers again (the run goes on where it was). With each answer it also asks for the
latest offsets of the partitions of the topics the run reads (`latest`), from which the runner
tells each Kafka source's lag (`runtime.backlog`)."""
from __future__ import annotations

import threading
import time
import warnings
from typing import Any, Dict, Iterable, Optional, Set, Tuple

from ..errors import KafkaStallWarning
from .kafka import ReadFromKafka, WriteToKafka, client_config

#: the prefixes of the client settings that say how to reach and log into a cluster (the rest
#: of a source's or sink's config is the consumer's or the producer's own)
_CONNECTION = ("bootstrap.servers", "security.", "sasl.", "ssl.", "client.", "socket.",
               "broker.", "logger")


def clusters_of(transforms: Iterable[Any]) -> Dict[str, Dict[str, Any]]:
    """The clusters the Kafka sources and sinks among `transforms` talk to: bootstrap
    servers -> the connection settings of the first one's config."""
    out: Dict[str, Dict[str, Any]] = {}
    for t in transforms:
        if isinstance(t, ReadFromKafka):
            config = t.consumer_config
        elif isinstance(t, WriteToKafka):
            config = t.producer_config
        else:
            continue
        out.setdefault(t.bootstrap_servers, {
            k: v for k, v in {"bootstrap.servers": t.bootstrap_servers, **config}.items()
            if k.startswith(_CONNECTION)})
    return out


def topics_of(transforms: Iterable[Any]) -> Dict[str, Set[str]]:
    """The topics the Kafka sources among `transforms` read, by bootstrap servers."""
    out: Dict[str, Set[str]] = {}
    for t in transforms:
        if isinstance(t, ReadFromKafka):
            out.setdefault(t.bootstrap_servers, set()).update(t.topics)
    return out


class BrokerWatch:
    """Asks each cluster (`clusters_of`) for its metadata every `every` seconds; `check()`,
    called by the run's own loop, warns of a cluster that has left a question unanswered for
    `after` seconds or more and gives the status line's note while one has. `latest` holds
    the latest (committed) offset of each partition of the `topics` read, as last answered."""

    def __init__(self, clusters: Dict[str, Dict[str, Any]], after: float,
                 every: float = 1.0, topics: Optional[Dict[str, Set[str]]] = None) -> None:
        self.after, self.every = after, every
        self.topics = topics or {}
        self.latest: Dict[Tuple[str, int], int] = {}
        self.clients: Dict[str, Any] = {}
        if clusters:
            from confluent_kafka.admin import AdminClient
            self.clients = {servers: AdminClient(client_config(config))
                            for servers, config in clusters.items()}
        # servers -> when the question they have not answered yet was asked
        self.asked: Dict[str, float] = {}
        self.warned: Dict[str, float] = {}   # servers warned of -> when that question was asked
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._ask, name="pomset-kafka-watch", daemon=True)

    def start(self) -> "BrokerWatch":
        if self.clients:
            self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(2 * self.every + 1)

    def _ask(self) -> None:
        from confluent_kafka import KafkaException
        while not self.stopping.is_set():
            for servers, client in self.clients.items():
                self.asked.setdefault(servers, time.monotonic())
                try:
                    metadata = client.list_topics(timeout=self.every)
                except KafkaException:
                    continue
                del self.asked[servers]
                self._offsets(servers, client, metadata)
            self.stopping.wait(self.every)

    def _offsets(self, servers: str, client: Any, metadata: Any) -> None:
        """Ask the cluster for the latest offsets of its partitions that the run reads."""
        from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec
        wanted = [TopicPartition(topic, p) for topic in sorted(self.topics.get(servers, ()))
                  if topic in metadata.topics for p in metadata.topics[topic].partitions]
        if not wanted:
            return
        futures = client.list_offsets({tp: OffsetSpec.latest() for tp in wanted},
                                      isolation_level=IsolationLevel.READ_COMMITTED,
                                      request_timeout=self.every)
        latest = dict(self.latest)
        for tp, future in futures.items():
            try:
                latest[(tp.topic, tp.partition)] = future.result().offset
            except KafkaException:
                continue
        self.latest = latest

    def refresh(self) -> None:
        """Ask every cluster for the latest offsets now, on the caller's thread (the run's
        last progress record, once the watch is stopped)."""
        from confluent_kafka import KafkaException
        for servers, client in self.clients.items():
            if servers in self.topics:
                try:
                    self._offsets(servers, client, client.list_topics(timeout=self.every))
                except KafkaException:
                    continue

    def check(self) -> Optional[str]:
        """Warn, once each time, of a cluster that has not answered for `after` seconds and of
        its answering again; the note for the status line while any is silent, else None."""
        now = time.monotonic()
        notes = []
        for servers in self.clients:
            at = self.asked.get(servers)
            silent = 0.0 if at is None else now - at
            if silent >= self.after:
                if servers not in self.warned:
                    self.warned[servers] = at
                    warnings.warn(KafkaStallWarning(
                        f"the Kafka broker at {servers} has not answered for {silent:.1f} s: "
                        f"the run waits for it, reading and writing nothing, and goes on when "
                        f"it answers (--kafka_stall_warning sets when this is said)"),
                        stacklevel=2)
                notes.append(f"Kafka {servers} not answering for {_clock(silent)}")
            elif at is None and servers in self.warned:
                since = self.warned.pop(servers)
                warnings.warn(KafkaStallWarning(
                    f"the Kafka broker at {servers} answers again, after {now - since:.0f} s "
                    f"without an answer: the run goes on"), stacklevel=2)
        return "; ".join(notes) or None


def unanswered(error: BaseException) -> bool:
    """Whether a Kafka client's error is a broker's silence (a request that timed out, a lost
    connection, no broker up) rather than a refusal: a run waits on such a broker."""
    from confluent_kafka import KafkaError, KafkaException
    if not isinstance(error, KafkaException) or not error.args:
        return False
    code = error.args[0].code() if isinstance(error.args[0], KafkaError) else None
    return code in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"

