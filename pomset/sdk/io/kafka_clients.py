"""The Kafka clients runners drive for `ReadFromKafka` and `WriteToKafka`: one reader of a
source's partitions between offsets, and one producer for a run's Kafka sinks whose
transactions commit together with a progress mark, which is how both runners write exactly
once across restarts.

The progress mark (the local runner's checkpoint epoch, Spark's micro-batch id) is stored in
the transaction as the metadata of an offset commit of the group `{run_id}-progress`, so it
becomes visible exactly when the transaction's records do."""
from __future__ import annotations

import threading
import time
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple

from ...windowing import MIN_MICROS, WindowedValue, now_micros
from ..errors import DataLossError, DataLossWarning, PipelineConstructionError
from ..run_state import run_state, update_run_state
from .kafka import Partition, PartitionWatermarks, ReadFromKafka, WriteToKafka, client_config

_TIMEOUT = 30.0
_GRACE = 30.0
_FATAL_HINT = (" (the broker lost or refused writes it had acknowledged, as the embedded broker "
               "does when killed: restart the run, which resumes from its last checkpoint whose "
               "output Kafka holds)")


class KafkaError(RuntimeError):
    """Kafka refused or failed a request; the message says which and why."""


ON_DATA_LOSS = ("warn", "fail")


class Lost(NamedTuple):
    """Offsets [start, end) of a partition that retention deleted before a reader read them."""

    source: str
    topic: str
    partition: int
    start: int
    end: int

    @property
    def count(self) -> int:
        return self.end - self.start

    def _what(self) -> str:
        return (f"{self.source}: topic {self.topic!r} partition {self.partition}: offsets "
                f"[{self.start}, {self.end}) were deleted by retention before they were read "
                f"({self.count} records lost)")

    def warning(self) -> DataLossWarning:
        """What `--on_data_loss=warn` reports (reading went on at `end`)."""
        return DataLossWarning(f"{self._what()}; reading resumed at offset {self.end} "
                               f"(--on_data_loss=fail fails the run instead)")

    def error(self) -> DataLossError:
        """What `--on_data_loss=fail` raises."""
        return DataLossError(f"{self._what()}; the run stops as --on_data_loss=fail says "
                             f"(--on_data_loss=warn goes on from offset {self.end}, reporting "
                             f"the loss)")


class KafkaReader:
    """Reads a source's partitions with one consumer, from `positions` up to `ends` (each
    partition's end offset, when the read ends), decoding records and tracking the source's
    watermark. Malformed records go to `on_bad` (`source.dead_letters`).

    A position below its partition's log start (deleted by retention: the consumer reports it
    out of range, see `ReadFromKafka.consumer`) moves to the log start: the offsets skipped
    are appended to `lost` for the caller to report (`on_data_loss="warn"`), or raise a
    `DataLossError` (`"fail"`)."""

    def __init__(self, source: ReadFromKafka, consumer: Any, positions: Dict[Partition, int],
                 ends: Optional[Dict[Partition, int]], on_bad: Any,
                 clock: Optional[dict] = None, on_data_loss: str = "warn") -> None:
        from confluent_kafka import TopicPartition
        if on_data_loss not in ON_DATA_LOSS:
            raise ValueError(f"on_data_loss must be one of {ON_DATA_LOSS}, got {on_data_loss!r}")
        self.source = source
        self.on_bad = on_bad
        self.on_data_loss = on_data_loss
        self.lost: List[Lost] = []
        self.positions = dict(positions)
        self.ends = ends
        self.consumer = consumer
        self.clock = PartitionWatermarks(self.positions, source.out_of_orderness_us,
                                         source.idle_us, now_micros(), source.holds_watermark)
        if clock is not None:
            self.clock.restore(clock)
        self.open = set(self.positions)
        if ends is not None:
            for p in list(self.open):
                if self.positions[p] >= ends[p]:
                    self._finish(p)
        self.consumer.assign([TopicPartition(t, p, self.positions[(t, p)]) for t, p in self.open])

    @property
    def done(self) -> bool:
        return not self.open

    def _finish(self, p: Partition) -> None:
        self.open.discard(p)
        self.clock.finish(p)

    def poll(self, max_records: int, timeout: float) -> List[WindowedValue]:
        """Up to `max_records` elements read within about `timeout` seconds (fewer when the
        partitions have no more now)."""
        from confluent_kafka import KafkaError as Err, TopicPartition
        if not self.open:
            return []
        out: List[WindowedValue] = []
        if self.ends is not None:   # consume waits for max_records or the timeout: ask no more
            max_records = max(1, min(max_records, sum(self.ends[p] - self.positions[p]
                                                      for p in self.open)))
        messages = self.consumer.consume(max_records, timeout)
        now = now_micros()
        ends, decode, on_bad, saw = self.ends, self.source.decode, self.on_bad, self.clock.saw
        finished = []
        for msg in messages:
            err = msg.error()
            p = (msg.topic(), msg.partition())
            if p not in self.open:
                continue
            if err is not None:
                if err.code() == Err._AUTO_OFFSET_RESET:
                    self._out_of_range(p, err.str())
                elif err.code() != Err._PARTITION_EOF:
                    raise KafkaError(f"{self.source.name}: reading topic {msg.topic()!r} "
                                     f"partition {msg.partition()}: {err.str()}")
                else:
                    self.positions[p] = max(self.positions[p], msg.offset())
            else:
                offset = msg.offset()
                if ends is not None and offset >= ends[p]:
                    finished.append(p)
                    continue
                self.positions[p] = offset + 1
                wv = decode(msg, on_bad, now)
                if wv is not None:
                    saw(p, wv.ts, now)
                    out.append(wv)
                else:
                    saw(p, MIN_MICROS, now)   # a record all the same: the partition is active
            if ends is not None and self.positions[p] >= ends[p]:
                finished.append(p)
        for p in finished:
            if p in self.open:
                self._finish(p)
                self.consumer.pause([TopicPartition(*p)])
        return out

    def _out_of_range(self, p: Partition, why: str) -> None:
        """The broker no longer holds partition `p`'s position: when retention moved its log
        start past it, go on from the log start (or up to the end, when that is before it),
        recording or failing on the offsets lost; anything else is an error."""
        from confluent_kafka import TopicPartition
        at = self.positions[p]
        low, high = self.consumer.get_watermark_offsets(TopicPartition(*p), timeout=_TIMEOUT)
        if at >= low:
            raise KafkaError(f"{self.source.name}: topic {p[0]!r} partition {p[1]} has no offset "
                             f"{at}, though it holds [{low}, {high}) (was it recreated?): {why}")
        end = low if self.ends is None else min(low, self.ends[p])
        lost = Lost(self.source.name, p[0], p[1], at, end)
        if self.on_data_loss == "fail":
            raise lost.error()
        self.lost.append(lost)
        self.positions[p] = end
        self.consumer.incremental_unassign([TopicPartition(*p)])
        if self.ends is not None and end >= self.ends[p]:
            self._finish(p)
        else:
            self.consumer.incremental_assign([TopicPartition(*p, end)])

    def take_lost(self) -> List[Lost]:
        """The losses found since the last call (see the class docstring)."""
        lost, self.lost = self.lost, []
        return lost

    def watermark(self) -> int:
        return self.clock.watermark(now_micros())

    def snapshot(self) -> dict:
        return {"positions": dict(self.positions), "clock": self.clock.snapshot()}

    def close(self) -> None:
        self.consumer.close()


def read_range(source: ReadFromKafka, consumer: Any, partition: Partition, start: int,
               end: int, on_bad: Any,
               on_data_loss: str = "warn") -> Tuple[List[WindowedValue], int, List[Lost]]:
    """The elements of one partition's offsets [start, end), the largest event time among
    them and the offsets of the range retention deleted before they were read (a Spark task's
    share of a micro-batch)."""
    reader = KafkaReader(source, consumer, {partition: start}, {partition: end}, on_bad,
                         on_data_loss=on_data_loss)
    out: List[WindowedValue] = []
    deadline = time.monotonic() + 120
    while not reader.done:
        if time.monotonic() > deadline:
            raise KafkaError(f"{source.name}: topic {partition[0]!r} partition {partition[1]} "
                             f"did not deliver offsets {reader.positions[partition]}..{end} "
                             f"within 120s")
        out += reader.poll(10_000, 1.0)
    consumer.unassign()
    return out, reader.clock.latest[partition], reader.take_lost()


class KafkaOutput:
    """One producer for a run's Kafka sinks: `write` each sink's elements; `commit(mark,
    offsets)` makes them visible with the progress mark and the source offsets they came from
    (in one transaction when the run has a `transactional_id`, else after a flush, which is
    at-least-once). A `pointer` (group, metadata: `kafka_runs.pointer`) is committed with the
    first transaction, on the progress topic."""

    def __init__(self, sinks: List[Tuple[WriteToKafka, Any]], run_id: str,
                 transactional: bool, progress_topic: Optional[str] = None,
                 pointer: Optional[Tuple[str, str]] = None) -> None:
        from confluent_kafka import Producer
        clusters = {s.cluster() for s, _ in sinks}
        if transactional and len(clusters) > 1:
            raise PipelineConstructionError(
                "exactly-once output needs every WriteToKafka of a run on one cluster with one "
                f"producer_config; got {len(clusters)}: {[s.name for s, _ in sinks]}")
        first = sinks[0][0]
        topic = progress_topic or min(s.topic for s, _ in sinks)
        config = {"bootstrap.servers": first.bootstrap_servers, "enable.idempotence": True,
                  "linger.ms": 5, "error_cb": self._on_error}
        config.update(first.producer_config)
        self.transactional = transactional
        self.transactional_id = f"{run_id}-{topic}" if transactional else None
        if transactional:
            config["transactional.id"] = self.transactional_id
        self.fatal: Optional[str] = None
        self.producer = Producer(client_config(config))
        self.bootstrap = first.bootstrap_servers
        self.group_metadata: Dict[str, Any] = {}
        self.run_id = run_id
        self.progress_partition = (topic, 0)
        self.encoders = {id(s): s.encoder(pc) for s, pc in sinks}
        self.topics = {id(s): s.topic for s, _ in sinks}
        self.errors: List[str] = []
        self.in_transaction = False
        self.wedged = False
        self.pointer = pointer
        self.last_mark: Optional[int] = None   # the mark of this producer's last commit
        if transactional:
            self._transact("start the transactional producer", self.producer.init_transactions,
                           _TIMEOUT)

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        """`fn(*args)`, its failure raised as a `KafkaError` saying what could not be done and
        the producer's fatal error, if it had one (the real cause, which librdkafka may report
        only through `error_cb`)."""
        from confluent_kafka import KafkaException
        try:
            return fn(*args)
        except (KafkaException, SystemError) as e:
            cause = e.args[0].str() if isinstance(e, KafkaException) else str(e)
            raise KafkaError(f"Kafka output: could not {what}: "
                             f"{self.fatal or cause}{_FATAL_HINT if self.fatal else ''}") from None

    def _transact(self, what: str, fn: Any, *args: Any) -> Any:
        """A transactional request (`_call`) that must answer within its timeout and a grace:
        librdkafka can wait forever on a coordinator that lost the transaction's state (a
        broker that crashed), which would wedge the run."""
        outcome: List[Any] = []

        def call() -> None:
            try:
                outcome.append((True, self._call(what, fn, *args)))
            except BaseException as e:   # handed to the caller's thread
                outcome.append((False, e))
        waiter = threading.Thread(target=call, name="pomset-kafka-transaction", daemon=True)
        waiter.start()
        waiter.join(_TIMEOUT + _GRACE)
        if not outcome:
            self.wedged = True
            raise KafkaError(f"Kafka output: could not {what}: no answer within "
                             f"{_TIMEOUT + _GRACE:.0f}s (a broker that crashed can lose a "
                             f"transaction's state: restart the run, which resumes from its last "
                             f"checkpoint whose output Kafka holds)")
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    def _on_error(self, err: Any) -> None:
        if err.fatal() and self.fatal is None:
            self.fatal = f"fatal producer error {err.name()}: {err.str()}"

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None and len(self.errors) < 5:
            self.errors.append(f"topic {msg.topic()!r}: {err.str()}")

    def _check(self) -> None:
        if self.fatal is not None:
            raise KafkaError(f"Kafka output: {self.fatal}{_FATAL_HINT}")

    def begin(self) -> None:
        if self.transactional and not self.in_transaction:
            self._call("begin a transaction", self.producer.begin_transaction)
            self.in_transaction = True

    def write(self, sink: WriteToKafka, bundle: List[WindowedValue]) -> None:
        self.write_records(sink, map(self.encoders[id(sink)], bundle))

    def write_records(self, sink: WriteToKafka, records: Iterable[Tuple]) -> None:
        """Write records (key, value, headers) as `sink.encoder` makes them from elements."""
        self.begin()
        self._call("write records", self._produce, self.topics[id(sink)], records)
        self._check()

    def _produce(self, topic: str, records: Iterable[Tuple]) -> None:
        produce, poll, on_delivery = self.producer.produce, self.producer.poll, self._on_delivery
        for key, value, headers in records:
            while True:
                try:
                    produce(topic, value, key, headers=headers, on_delivery=on_delivery)
                    break
                except BufferError:
                    poll(0.05)
        poll(0)

    def flush(self) -> None:
        left = self._call("deliver the records written", self.producer.flush, _TIMEOUT)
        self._check()
        if self.errors or left:
            raise KafkaError("Kafka output: records were not delivered: "
                             + "; ".join(self.errors or [f"{left} still queued after {_TIMEOUT}s"]))

    def commit(self, mark: int, offsets: Dict[str, Dict[Partition, int]]) -> None:
        """Make everything written so far visible, recording `mark` and, per consumer group,
        the source offsets read."""
        from confluent_kafka import TopicPartition
        if not self.transactional:
            self.flush()
            return
        self.begin()
        topic, partition = self.progress_partition
        marks = {self.progress_group: [TopicPartition(topic, partition, max(mark, 0),
                                                            metadata=str(mark))]}
        if self.pointer is not None:
            group, metadata = self.pointer
            marks[group] = [TopicPartition(topic, partition, 0, metadata=metadata)]
        for group, positions in offsets.items():
            marks.setdefault(group, []).extend(TopicPartition(t, p, o) for (t, p), o in
                                               positions.items())
        for group, parts in marks.items():
            meta = self.group_metadata.get(group)
            if meta is None:
                meta = self.group_metadata[group] = _group_metadata(self.bootstrap, group)
            self._transact("add offsets to the transaction",
                           self.producer.send_offsets_to_transaction, parts, meta, _TIMEOUT)
        self._transact("commit the transaction", self.producer.commit_transaction, _TIMEOUT)
        self.in_transaction = False
        self.last_mark = mark
        self.pointer = None
        if self.errors:
            raise KafkaError("Kafka output: records were not delivered: " + "; ".join(self.errors))

    @property
    def progress_group(self) -> str:
        return f"{self.run_id}-progress"

    def committed_mark(self) -> Optional[int]:
        """The progress mark of the last committed transaction of this run, if any."""
        return committed_mark(self.bootstrap, self.run_id, self.progress_partition[0])

    def abort(self) -> None:
        if self.in_transaction and not self.wedged:
            try:
                self._transact("abort the transaction", self.producer.abort_transaction, _TIMEOUT)
            except Exception:   # the run's own error is the one to report
                pass
        self.in_transaction = False

    def close(self) -> None:
        self.flush()


def committed_mark(bootstrap_servers: str, run_id: str, topic: str) -> Optional[int]:
    """The progress mark run `run_id` last committed on `topic`, if any."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer(client_config({"bootstrap.servers": bootstrap_servers,
                                       "group.id": f"{run_id}-progress",
                                       "enable.auto.commit": False}))
    try:
        got = consumer.committed([TopicPartition(topic, 0)], timeout=_TIMEOUT)
    finally:
        consumer.close()
    meta = got[0].metadata if got else None
    return int(meta) if meta not in (None, "") else None


def progress_topic(directory: str, sinks: List[WriteToKafka], run_id: str) -> Tuple[str, bool]:
    """The topic that carries run `run_id`'s progress mark (and names its transactional id),
    and whether the run wrote to Kafka before. It is recorded in the run's metadata the first
    time the run writes to Kafka, so adding, removing or reordering sinks later keeps the run's
    identity; a run recorded before pomset kept it marked its progress on one of its sinks'
    topics, found by asking each."""
    state = run_state(directory)
    if "progress_topic" in state:
        return state["progress_topic"], True
    topics = [s.topic for s in sinks]
    found = next((t for t in topics
                  if committed_mark(sinks[0].bootstrap_servers, run_id, t) is not None), None)
    topic = found or min(topics)
    update_run_state(directory, progress_topic=topic)
    return topic, found is not None


def _group_metadata(bootstrap_servers: str, group: str) -> Any:
    from confluent_kafka import Consumer
    consumer = Consumer(client_config({"bootstrap.servers": bootstrap_servers,
                                       "group.id": group}))
    try:
        return consumer.consumer_group_metadata()
    finally:
        consumer.close()

