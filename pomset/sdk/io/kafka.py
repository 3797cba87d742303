"""Kafka IO on the confluent-kafka client: `ReadFromKafka` and `WriteToKafka`.

Reading: each record becomes an element whose value is the record's value decoded by
`value_format` ("json", "str" or "bytes"), whose event time is the record's timestamp
(`timestamp="kafka"`), a field of the JSON payload (`timestamp="field"`: a number of
`timestamp_unit`s since the epoch, seconds by default, or an ISO-8601 string), or the time it
was read (`timestamp=None`), and whose diff is taken from a `pomset-diff` header (+1 without one),
so a topic pomset wrote with retractions reads back as the same stream. A record that does not
decode is a `DeadLetter` naming its topic, partition and offset.

Watermark: per partition, the largest event time read minus `max_out_of_orderness`; the
source's is the minimum over partitions, skipping partitions that had no record for
`idle_timeout` seconds and partitions read to their end; it never goes back, and while every
partition is idle it stays where it is (as in Flink: no data says nothing about time).

Writing: the element's value encoded by `value_format`, its key from `key(element)`, and
headers `pomset-diff` ("+1" for a datum, "-1" for a retraction), `pomset-timestamp` (its event
time, seconds) and, for windowed or retracting input, `pomset-window-start`,
`pomset-window-end` (seconds), `pomset-pane-timing` and `pomset-pane-index`. The record's own
timestamp is left to the producer (the time it was written): an event time from the past as
record timestamp would make the broker's time-based retention delete the record at once. A consumer
applies the stream by adding each record with its diff: the sum over a key and window's
records is the current result.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from ...windowing import GLOBAL_WINDOW, MAX_MICROS, MIN_MICROS, NO_FIRING, GlobalWindow, WindowedValue
from ..dofn import DeadLetter
from ..errors import KafkaUnreachableError, PipelineConstructionError, UserCodeError
from ..event_time import event_time_micros, time_unit, warn_other_unit
from ..kinds import NOT_KV
from .. import plan_kinds
from ..schema import SchemaLike, as_schema, conform
from .base import DeadLetterSource, OnBad, Sink, annotates, json_loads, json_text

FORMATS = ("json", "str", "bytes")
DIFF_HEADER = "pomset-diff"
#: The embedded broker sends oversized fetch responses unless consumers cap them.
FETCH_CAP = 1 << 20
Partition = Tuple[str, int]

_raw = WindowedValue.raw


def _check_format(value_format: str, who: str) -> None:
    if value_format not in FORMATS:
        raise ValueError(f"{who}: value_format must be one of {', '.join(FORMATS)}, "
                         f"got {value_format!r}")


def _check_config(config: Optional[Dict[str, Any]], name: str, who: str) -> Dict[str, Any]:
    if config is None:
        return {}
    if not isinstance(config, dict) or not all(isinstance(k, str) for k in config):
        raise TypeError(f"{who}: {name} must be a dict of client settings, got {config!r}")
    return dict(config)


#: where the Kafka clients' own log goes (librdkafka's lines, which it would otherwise print
#: to the terminal by the hundred when a broker is down); silent unless logging says otherwise
LOG = logging.getLogger("pomset.kafka")
LOG.addHandler(logging.NullHandler())


def client_config(config: Dict[str, Any]) -> Dict[str, Any]:
    """A Kafka client's config with its log sent to Python logging (`pomset.kafka`), unless
    the user's config names a logger of its own."""
    return {"logger": LOG, **config}


def _seconds(value: Any, name: str, who: str, allow_none: bool) -> Optional[int]:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{who}: {name} must be a number of seconds >= 0, got {value!r}")
    return int(round(value * 1_000_000))


def source_watermark(partitions: Iterable[Tuple[int, bool]], floor: int) -> int:
    """A partitioned source's watermark from (partition watermark, idle) pairs: the minimum
    over partitions that are not idle, never below `floor` (the last one); `floor` when all
    are idle."""
    active = [wm for wm, idle in partitions if not idle]
    return max(floor, min(active)) if active else floor


class ReadFromKafka(DeadLetterSource):
    """The records of Kafka topics as an unbounded PCollection (see the module docstring).

    `until="latest"` reads up to the offsets that are the latest when the run starts and then
    ends, its watermark moving to the end of time; by default the read never ends. A bounded
    read gives the batch answer: its watermark stays at the minimum until the whole range is
    read (`watermark="end"`, its default), so no element is late, as for files; with
    `watermark="events"` it trails the event times read, as an unbounded read's does, so that
    windows fire (and their state goes) while the range is read, and elements later than that
    are late. Without a
    checkpoint to resume from, reading starts at each partition's earliest offset (or latest,
    with `consumer_config={"auto.offset.reset": "latest"}`).

    Offsets deleted by retention before they were read (a run resumed from a checkpoint after
    the topic's log start moved past it, or a reader that fell behind) are never skipped
    silently: with `--on_data_loss=warn` (the default) reading goes on from the earliest
    offset left, the loss is counted in the source's metric `lost_to_retention` and a
    `DataLossWarning` names the topic, partition and offsets [from, to); with
    `--on_data_loss=fail` the run fails with a `DataLossError` saying the same.

    With `schema` (JSON values only: a pyarrow.Schema or a mapping of field name to type) each
    record becomes a `pm.Row` of those fields, converted to their types; a record that does
    not fit is a malformed record (a dead letter, or the run fails naming it)."""

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.KAFKA_READ

    bounded = False

    def __init__(self, bootstrap_servers: str, topics: Union[str, Sequence[str]],
                 value_format: str = "json", timestamp: Optional[str] = None,
                 max_out_of_orderness: float = 0.0, idle_timeout: Optional[float] = None,
                 consumer_config: Optional[Dict[str, Any]] = None, until: Optional[str] = None,
                 label: Optional[str] = None, schema: Optional[SchemaLike] = None, *,
                 timestamp_unit: str = "s", connect_timeout: float = 10.0,
                 watermark: Optional[str] = None) -> None:
        super().__init__(label)
        who = label or "ReadFromKafka"
        self.timestamp_unit = time_unit(timestamp_unit)
        self._unit_checked = False
        if schema is not None and value_format != "json":
            raise ValueError(f"{who}: a schema describes JSON records, so it needs "
                             f"value_format='json', not {value_format!r}")
        self.row_schema = as_schema(schema) if schema is not None else None
        if not isinstance(bootstrap_servers, str) or not bootstrap_servers:
            raise TypeError(f"{who}: bootstrap_servers must be a 'host:port[,...]' str, "
                            f"got {bootstrap_servers!r}")
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names or not all(isinstance(t, str) and t for t in names):
            raise TypeError(f"{who}: topics must be a topic name or a list of them, got {topics!r}")
        _check_format(value_format, who)
        if timestamp is not None and not (isinstance(timestamp, str) and timestamp):
            raise TypeError(f"{who}: timestamp must be None, 'kafka' or a field name, "
                            f"got {timestamp!r}")
        if timestamp not in (None, "kafka") and value_format != "json":
            raise ValueError(f"{who}: timestamp={timestamp!r} reads a field of the payload, "
                             f"which needs value_format='json', not {value_format!r}")
        if until not in (None, "latest"):
            raise ValueError(f"{who}: until must be None (read forever) or 'latest', got {until!r}")
        if watermark not in (None, "end", "events"):
            raise ValueError(f"{who}: watermark must be 'end' (held at the minimum until the "
                             f"range is read: the batch answer) or 'events' (trailing the "
                             f"event times read), got {watermark!r}")
        if watermark == "end" and until is None:
            raise ValueError(f"{who}: watermark='end' holds the watermark until the read ends, "
                             f"but without until= it never ends; give until='latest'")
        self.bootstrap_servers = bootstrap_servers
        self.topics = names
        self.value_format = value_format
        self.timestamp = timestamp
        self.out_of_orderness_us = _seconds(max_out_of_orderness, "max_out_of_orderness", who, False)
        self.idle_us = _seconds(idle_timeout, "idle_timeout", who, True)
        self.consumer_config = _check_config(consumer_config, "consumer_config", who)
        self.until = until
        #: whether the watermark stays at the minimum until every partition is read to its end
        self.holds_watermark = until is not None and watermark != "events"
        self.connect_timeout = _seconds(connect_timeout, "connect_timeout", who, False) / 1e6

    def kind(self) -> Optional[str]:
        return NOT_KV

    def schema(self) -> Any:
        return self.row_schema

    @property
    def never_ends(self) -> bool:
        return self.until is None

    # --- clients --------------------------------------------------------------------------
    def consumer(self, group_id: str) -> Any:
        """A consumer of this source's cluster, without auto commit, reading committed data,
        that reports a fetch position out of range as an error rather than jumping (readers
        assign every position themselves; see `KafkaReader`)."""
        from confluent_kafka import Consumer
        config = {"bootstrap.servers": self.bootstrap_servers, "group.id": group_id,
                  "enable.auto.commit": False, "isolation.level": "read_committed",
                  "fetch.max.bytes": FETCH_CAP, "max.partition.fetch.bytes": FETCH_CAP}
        config.update(self.consumer_config)
        config["enable.partition.eof"] = True   # readers tell a partition's end by it
        # a position out of range is an error, never a silent jump (`start_offsets` applies
        # the user's auto.offset.reset to a fresh start)
        config["auto.offset.reset"] = "error"
        return Consumer(client_config(config))

    @property
    def group_id(self) -> Optional[str]:
        return self.consumer_config.get("group.id")

    def partitions(self, consumer: Any) -> List[Partition]:
        """Every partition of the topics, in order; an error naming a topic that is missing,
        or the servers when no broker answers within `connect_timeout` seconds."""
        from confluent_kafka import KafkaException
        try:
            metadata = consumer.list_topics(timeout=self.connect_timeout)
        except KafkaException as e:
            raise KafkaUnreachableError(
                f"{self.name}: no Kafka broker answered at {self.bootstrap_servers} "
                f"({e.args[0].str() if e.args else e}; waited at most "
                f"{self.connect_timeout:g} s, connect_timeout= sets how long); is it "
                f"running?") from None
        out = []
        for topic in self.topics:
            info = metadata.topics.get(topic)
            if info is None or info.error is not None or not info.partitions:
                raise PipelineConstructionError(
                    f"{self.name}: topic {topic!r} does not exist on {self.bootstrap_servers}")
            out += [(topic, p) for p in sorted(info.partitions)]
        return out

    def start_offsets(self, consumer: Any, partitions: List[Partition]) -> Dict[Partition, int]:
        """Where reading starts without a checkpoint: each partition's earliest offset, or its
        latest with auto.offset.reset=latest."""
        from confluent_kafka import TopicPartition
        latest = self.consumer_config.get("auto.offset.reset") in ("latest", "end", "largest")
        out = {}
        for topic, p in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            out[(topic, p)] = high if latest else low
        return out

    @staticmethod
    def committed_offsets(consumer: Any, partitions: List[Partition]) -> Dict[Partition, int]:
        """The offsets the consumer's group has committed, for the partitions it has any."""
        from confluent_kafka import TopicPartition
        got = consumer.committed([TopicPartition(t, p) for t, p in partitions], timeout=10)
        return {(tp.topic, tp.partition): tp.offset for tp in got if tp.offset >= 0}

    @staticmethod
    def end_offsets(consumer: Any, partitions: List[Partition]) -> Dict[Partition, int]:
        """Each partition's latest offset now (the end of `until="latest"`)."""
        from confluent_kafka import TopicPartition
        return {(t, p): consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1]
                for t, p in partitions}

    # --- records --------------------------------------------------------------------------
    def decode(self, msg: Any, on_bad: OnBad, now_us: int) -> Optional[WindowedValue]:
        """The element for one record; None (after reporting it) when it does not decode."""
        raw = msg.value()
        value: Any = raw
        try:
            if raw is None:
                raise ValueError("has no value (a tombstone)")
            if self.value_format != "bytes":
                try:
                    value = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise ValueError(f"is not UTF-8 text ({e.reason} at byte {e.start})") from None
                if self.value_format == "json":
                    try:
                        value = json_loads(value)
                    except json.JSONDecodeError as e:
                        raise ValueError(f"is not valid JSON: {e.msg} at column {e.colno}") from None
            ts = self._event_time(msg, value, now_us)
            if self.row_schema is not None:
                if not isinstance(value, dict):
                    raise ValueError(f"is a JSON {type(value).__name__}, not an object of "
                                     f"the schema's fields")
                try:
                    value = conform(value, self.row_schema)
                except ValueError as e:
                    raise ValueError(f"does not fit the schema: {e}") from None
            diff = _diff(msg.headers())
        except ValueError as e:
            on_bad(DeadLetter(raw, self.name, f"topic {msg.topic()!r} partition {msg.partition()} "
                                              f"offset {msg.offset()}: record {e}", ""))
            return None
        return _raw(value, ts, GLOBAL_WINDOW, NO_FIRING, diff)

    def _event_time(self, msg: Any, value: Any, now_us: int) -> int:
        field = self.timestamp
        if field is None:
            return now_us
        if field == "kafka":
            kind, ms = msg.timestamp()
            if kind == 0 or ms is None or ms < 0:
                raise ValueError("has no timestamp")
            return ms * 1000
        if not isinstance(value, dict):
            raise ValueError(f"is a JSON {type(value).__name__}, not an object with the "
                             f"timestamp field {field!r}")
        if field not in value:
            raise ValueError(f"has no timestamp field {field!r}")
        try:
            micros = event_time_micros(value[field], self.timestamp_unit)
        except ValueError as e:
            raise ValueError(f"timestamp field {field!r} {e}") from None
        if not self._unit_checked:
            self._unit_checked = True
            warn_other_unit(self.name, field, value[field], self.timestamp_unit)
        return micros


def _diff(headers: Optional[List[Tuple[str, bytes]]]) -> int:
    for name, value in headers or ():
        if name == DIFF_HEADER:
            if value in (b"+1", b"1"):
                return 1
            if value == b"-1":
                return -1
            raise ValueError(f"has a {DIFF_HEADER} header {value!r} that is neither +1 nor -1")
    return 1


class PartitionWatermarks:
    """A source's watermark from its partitions (see `source_watermark`), on a clock in
    microseconds; a partition that was read to its end holds nothing back."""

    def __init__(self, partitions: Iterable[Partition], out_of_orderness_us: int,
                 idle_us: Optional[int], now_us: int, hold: bool = False) -> None:
        self.latest: Dict[Partition, int] = {p: MIN_MICROS for p in partitions}
        self.hold = hold   # a partition not read to its end holds the watermark at the minimum
        self.active_at: Dict[Partition, int] = {p: now_us for p in self.latest}
        self.finished: set = set()
        self.out_of_orderness_us = out_of_orderness_us
        self.idle_us = idle_us
        self.wm = MIN_MICROS

    def saw(self, partition: Partition, ts: int, now_us: int) -> None:
        self.active_at[partition] = now_us
        if ts > self.latest[partition]:
            self.latest[partition] = ts

    def finish(self, partition: Partition) -> None:
        self.finished.add(partition)

    def partition_wm(self, partition: Partition) -> int:
        if partition in self.finished:
            return MAX_MICROS
        latest = self.latest[partition]
        if self.hold or latest == MIN_MICROS:
            return MIN_MICROS
        return latest - self.out_of_orderness_us

    def idle(self, partition: Partition, now_us: int) -> bool:
        return (self.idle_us is not None and not self.hold and partition not in self.finished
                and now_us - self.active_at[partition] >= self.idle_us)

    def watermark(self, now_us: int) -> int:
        self.wm = source_watermark(((self.partition_wm(p), self.idle(p, now_us))
                                    for p in self.latest), self.wm)
        return self.wm

    def snapshot(self) -> dict:
        """What a restarted run resumes with (which partitions are finished it finds anew)."""
        return {"latest": dict(self.latest), "wm": self.wm}

    def restore(self, state: dict) -> None:
        self.latest.update(state["latest"])
        self.wm = state["wm"]


# --- writing ------------------------------------------------------------------------------------

def _key_bytes(key: Any) -> Optional[bytes]:
    if key is None or isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode("utf-8")
    return json_text(key).encode("utf-8")


class WriteToKafka(Sink):
    """Writes its input to a Kafka topic (see the module docstring for the record layout).
    `key` is a function of the element giving the record key (bytes, str, or anything JSON
    can encode), or None for no key."""

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.KAFKA_WRITE

    def __init__(self, bootstrap_servers: str, topic: str,
                 key: Optional[Callable[[Any], Any]] = None, value_format: str = "json",
                 producer_config: Optional[Dict[str, Any]] = None,
                 label: Optional[str] = None) -> None:
        super().__init__(label)
        who = label or "WriteToKafka"
        if not isinstance(bootstrap_servers, str) or not bootstrap_servers:
            raise TypeError(f"{who}: bootstrap_servers must be a 'host:port[,...]' str, "
                            f"got {bootstrap_servers!r}")
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"{who}: topic must be a topic name, got {topic!r}")
        if key is not None and not callable(key):
            raise TypeError(f"{who}: key must be a function of the element or None, got {key!r}")
        _check_format(value_format, who)
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.key = key
        self.value_format = value_format
        self.producer_config = _check_config(producer_config, "producer_config", who)

    def cluster(self) -> Tuple[str, Tuple[Tuple[str, str], ...]]:
        """Sinks with equal clusters share one producer (and so one transaction)."""
        return self.bootstrap_servers, tuple(sorted((k, str(v)) for k, v in
                                                    self.producer_config.items()))

    def encoder(self, pcoll: Any) -> Callable[[WindowedValue], Tuple]:
        """A function from an element to its record: (key, value, headers)."""
        annotate = annotates(pcoll)
        fmt, key_of, name = self.value_format, self.key, self.name

        def encode(wv: WindowedValue) -> Tuple:
            v = wv.value
            if fmt == "json":
                value = json_text(v).encode("utf-8")
            elif fmt == "str":
                if not isinstance(v, str):
                    raise UserCodeError(f"{name}: value_format='str' needs str elements, "
                                        f"got {type(v).__name__} {v!r}"[:300])
                value = v.encode("utf-8")
            else:
                if not isinstance(v, (bytes, bytearray)):
                    raise UserCodeError(f"{name}: value_format='bytes' needs bytes elements, "
                                        f"got {type(v).__name__} {v!r}"[:300])
                value = bytes(v)
            try:
                key = _key_bytes(key_of(v)) if key_of is not None else None
            except Exception as e:
                raise UserCodeError(f"{name}: key function failed on {v!r}: "
                                    f"{type(e).__name__}: {e}"[:500]) from e
            headers = [(DIFF_HEADER, b"+1" if wv.diff > 0 else b"-1"),
                       ("pomset-timestamp", repr(wv.ts / 1_000_000).encode())]
            if annotate:
                headers += _window_headers(wv)
            return key, value, headers
        return encode


def _window_headers(wv: WindowedValue) -> List[Tuple[str, bytes]]:
    out = []
    w = wv.window
    if not isinstance(w, GlobalWindow):
        start = getattr(w, "start_us", None)
        if start is not None:
            out.append(("pomset-window-start", repr(start / 1_000_000).encode()))
        out.append(("pomset-window-end", repr((w.max_ts + 1) / 1_000_000).encode()))
    pane = wv.pane if wv.pane is not None else NO_FIRING
    out.append(("pomset-pane-timing", pane.timing.value.encode()))
    out.append(("pomset-pane-index", str(pane.index).encode()))
    return out
