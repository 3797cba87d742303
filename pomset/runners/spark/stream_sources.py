"""Python data sources that feed a streaming query, each micro-batch its elements followed by
one marker row with the source's watermark and processing time (see `codec`):

- `pomset_steps` releases a scripted list of steps, one per micro-batch: a `TestStream`'s steps
  (its watermark and its own processing clock), or a `Create`'s elements in one step that also
  moves the watermark to the end of time;
- `pomset_files` reads the files a pattern matches as they appear (all new ones, or at most
  `--max_files_per_batch`, per micro-batch), each file in one task by the source's own reader;
  its watermark trails the largest event time read by `--max_out_of_orderness`, and reaches
  the end of time once the files there at the start have been read when the run is told to
  stop there (`--streaming_until=latest`);
- `pomset_kafka` reads a `ReadFromKafka`'s partitions between the offsets Spark plans per
  micro-batch (`KafkaReader`).

All take their payload (pickled, base64) as the option `payload`, support Spark's
`availableNow` trigger, and take their offsets from Spark's checkpoint on restart."""
from __future__ import annotations

import base64
import bisect
import io
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from ...runtime.columnar import Columns
from ...runtime.file_stream import FileListing, file_watermark, latest_time
from ...runtime.reads import read_tagged
from ...runtime.markers import ChannelMarker
from ...sdk.io.kafka_clients import read_range
from ...sdk.io.kafka_watch import unanswered
from ...windowing import MAX_MICROS, MIN_MICROS, now_micros
from . import codec, packs
from .batch import BATCH_ROWS

COLUMN_ROWS = 1 << 18   # rows of a columnar pack: one Arrow batch of a file read as columns

STEPS, FILES, KAFKA = "pomset_steps", "pomset_files", "pomset_kafka"


def payload(obj: Any) -> str:
    """An object as the `payload` option of these sources."""
    return base64.b64encode(codec.dumps(obj)).decode("ascii")


def _load(options: Any) -> Any:
    return codec.loads(base64.b64decode(options["payload"]))


def _ipc(batch: pa.RecordBatch) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, batch.schema) as w:
        w.write_batch(batch)
    return sink.getvalue()


def script(channel: str, steps: List[tuple]) -> List[bytes]:
    """Micro-batches for `pomset_steps`: each step (elements, watermark, processing time or
    None) as its encoded rows, the elements and then the marker."""
    return [_ipc(packs.element_rows(elements, [ChannelMarker(channel, wm, pt)], None, keyed=False))
            for elements, wm, pt in steps]


class _Source(DataSource):
    """A format of streaming rows (`codec.STREAM`) whose reader is made from the payload, a
    dict of its arguments."""

    format = ""
    reader: Any = None

    @classmethod
    def name(cls) -> str:
        return cls.format

    def schema(self) -> str:
        return codec.STREAM

    def streamReader(self, schema: Any) -> Any:
        return self.reader(**_load(self.options))


class StepsReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A scripted stream: the micro-batches `script` made, one per micro-batch."""

    def __init__(self, batches: List[bytes]) -> None:
        self.batches = batches

    def initialOffset(self) -> dict:
        return {"step": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        pass   # the script is all there is

    def latestOffset(self, start: dict, limit: Any) -> dict:
        return {"step": min(start["step"] + 1, len(self.batches))}

    def partitions(self, start: dict, end: dict) -> List[InputPartition]:
        return [InputPartition(self.batches[i]) for i in range(start["step"], end["step"])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from pa.ipc.open_stream(partition.value)

    def commit(self, end: dict) -> None:
        pass


class FilesReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The files a source's pattern matches, new ones as they appear, released as
    `runtime.file_stream` says. Offsets: `n`, how many files (in release order) have been
    released (at most `max_files` more per micro-batch, if set), `tick`, bumped
    every `interval_s` without new files so that a marker-only micro-batch moves the
    processing clock, and `end`, true in the micro-batch that ends the stream (when it ends)."""

    def __init__(self, channel: str, source: Any, label: str, until_latest: bool,
                 out_of_orderness_us: Optional[int], interval_s: float, real_clock: bool,
                 max_files: Optional[int]) -> None:
        self.channel, self.source, self.label = channel, source, label
        self.real_clock = real_clock
        self.until_latest = until_latest
        self.out_of_orderness_us = out_of_orderness_us
        self.interval_s = interval_s
        self.listing = FileListing(source.pattern, max_files)
        self.target: Optional[int] = None
        self.last_tick = time.monotonic()
        if until_latest:
            self.prepareForTriggerAvailableNow()

    @property
    def files(self) -> List[str]:
        return self.listing.files

    def initialOffset(self) -> dict:
        return {"n": 0, "tick": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        if self.target is None:
            self.target = self.listing.list_new()

    def latestOffset(self, start: dict, limit: Any) -> dict:
        if self.target is not None:   # `end`: the micro-batch that ends the stream
            if start["n"] >= self.target and start.get("end"):
                return start
            n = self.listing.upto(start["n"], self.target)
            return {"n": n, "tick": start["tick"], "end": n == self.target}
        available = self.listing.list_new()
        if available > start["n"]:
            self.last_tick = time.monotonic()
            return {"n": self.listing.upto(start["n"], available), "tick": start["tick"]}
        if time.monotonic() - self.last_tick >= self.interval_s:
            self.last_tick = time.monotonic()
            return {"n": start["n"], "tick": start["tick"] + 1}
        return start

    def partitions(self, start: dict, end: dict) -> List[InputPartition]:
        if len(self.files) < end["n"]:   # restarted: the files released before, in their order
            self.listing.list_new()
        ends = bool(end.get("end"))
        parts = [InputPartition(("file", path)) for path in self.files[start["n"]:end["n"]]]
        return parts + [InputPartition(("clock", MAX_MICROS if ends else MIN_MICROS))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        kind, arg = partition.value
        if kind == "clock":
            clock = now_micros() if self.real_clock else None
            yield packs.rows([], [ChannelMarker(self.channel, arg, clock)], None, keyed=False)
            return
        yield from self._read_file(arg)

    def _read_file(self, path: str) -> Iterator[pa.RecordBatch]:
        latest = MIN_MICROS
        read = 0
        for tag, bundle in read_tagged(self.source, self.label, BATCH_ROWS, COLUMN_ROWS, [path]):
            if isinstance(bundle, Columns):
                if not len(bundle):
                    continue
                read += len(bundle)
                latest = latest_time(bundle, latest)
                yield packs.rows([packs.pack_columns(bundle)], [], None, keyed=False)
                continue
            if tag is None:
                read += len(bundle)
                latest = latest_time(bundle, latest)
            yield packs.element_rows(bundle, [], tag, keyed=False)
        # the channel's watermark is the largest its files' markers say (`file_stream`)
        wm = file_watermark(latest, self.out_of_orderness_us)
        yield packs.rows([], [ChannelMarker(self.channel, wm)], None, keyed=False)
        yield packs.counts_row(self.label, {"read": read}, on_bus=False)

    def commit(self, end: dict) -> None:
        pass


class StepsSource(_Source):
    format, reader = STEPS, StepsReader


class FilesSource(_Source):
    format, reader = FILES, FilesReader


class KafkaReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A `ReadFromKafka`'s partitions. Offsets: `o`, the next offset of each partition
    ("topic:partition" -> offset, the broker's latest when a micro-batch is planned), and
    `tick`, bumped every `interval_s` without new records (a marker-only micro-batch that
    moves the clock and tells which partitions went idle) and with the micro-batch that
    releases the offsets latest at the start, when the read ends there (that one says every
    partition finished). With `max_records` (Spark's `maxOffsetsPerTrigger`) a micro-batch
    releases about that many offsets, shared among the partitions by their backlog
    (`at_most`).

    Each partition is a channel of its own: its offset range ends with a marker of its largest
    event time less the allowed out-of-orderness. A micro-batch reads its ranges in at most
    `tasks` tasks (the stateful steps' buckets: by default the cores), so that they run in one
    wave: a task's fixed cost, a tenth of a second with its Python workers, is paid once per
    core, not once per partition; the ranges are cut into equal shares (`spread`), a partition
    between two tasks where they do not divide (each part ends with its own marker: a
    channel's watermark is the largest its markers say). The
    micro-batch's clock, read by the least loaded task, marks partitions idle for longer than
    the source's `idle_timeout` (an idle `ChannelMarker`) and partitions read to their end
    (the end of time); a bounded read that holds its watermark
    (`ReadFromKafka.holds_watermark`) marks the minimum instead of its event times until
    then. What the tasks say (the clock, the idle and the finished partitions, the hold) is
    decided when the micro-batch is planned and kept in its end offset, so a micro-batch
    Spark runs again after a restart computes exactly what it computed before: the output it
    committed to Kafka then stays consistent with the state.

    A task whose range starts below its partition's log start (retention deleted offsets
    before they were read) reads from the log start and sends the driver the count
    (`lost_to_retention`) and a `DataLossWarning` to issue there, or fails with a
    `DataLossError` (`on_data_loss`, see `read_range`)."""

    def __init__(self, channels: Dict[str, str], source: Any, label: str, group_id: str,
                 until_latest: bool, interval_s: float, real_clock: bool,
                 on_data_loss: str = "warn", tasks: int = 1,
                 max_records: Optional[int] = None) -> None:
        self.channels, self.source, self.label = channels, source, label
        self.max_records = max_records
        self.tasks = max(1, tasks)
        self.group_id = group_id
        self.on_data_loss = on_data_loss
        self.interval_s, self.real_clock = interval_s, real_clock
        self._consumer: Any = None
        self.partitions_ = source.partitions(self.consumer)
        self.target: Optional[Dict[str, int]] = None
        self.active_at = {_name(p): time.monotonic() for p in self.partitions_}
        self.last_tick = time.monotonic()
        if until_latest:
            self.prepareForTriggerAvailableNow()

    @property
    def consumer(self) -> Any:
        """The driver's consumer (metadata, offsets, commits); tasks make their own."""
        if self._consumer is None:
            self._consumer = self.source.consumer(self.group_id)
        return self._consumer

    def __getstate__(self) -> dict:
        return dict(self.__dict__, _consumer=None)

    def initialOffset(self) -> dict:
        starts = self.source.start_offsets(self.consumer, self.partitions_)
        return {"o": {_name(p): o for p, o in starts.items()}, "tick": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        if self.target is None:
            ends = self.source.end_offsets(self.consumer, self.partitions_)
            self.target = {_name(p): o for p, o in ends.items()}

    def latestOffset(self, start: dict, limit: Any) -> dict:
        offsets, tick = self._next(start)
        if offsets == start["o"] and tick == start["tick"]:
            return start
        now = time.monotonic()
        for name, stop in offsets.items():
            if stop > start["o"].get(name, stop):
                self.active_at[name] = now
        idle_s = None if self.source.idle_us is None else self.source.idle_us / 1e6
        finished = [n for n, stop in offsets.items()
                    if self.target is not None and stop >= self.target[n]]
        idle = [n for n in offsets if n not in finished and idle_s is not None
                and now - self.active_at[n] >= idle_s]
        return {"o": offsets, "tick": tick, "clock": now_micros() if self.real_clock else None,
                "idle": idle, "finished": finished, "hold": self.source.holds_watermark}

    def _next(self, start: dict) -> tuple:
        """The offsets and tick of the next micro-batch (the start's when there is none)."""
        if self.target is not None:   # micro-batches to the target, the last ends the read
            offsets = at_most(start["o"], self.target, self.max_records)
            if offsets == start["o"] and len(start.get("finished", ())) == len(offsets):
                return start["o"], start["tick"]
            return offsets, start["tick"] + 1
        try:
            ends = {_name(p): o for p, o in
                    self.source.end_offsets(self.consumer, self.partitions_).items()}
        except Exception as e:
            if not unanswered(e):
                raise
            return start["o"], start["tick"]   # no micro-batch until the broker answers
        moved = at_most(start["o"], ends, self.max_records)
        if moved != start["o"]:
            self.last_tick = time.monotonic()
            return moved, start["tick"]
        if time.monotonic() - self.last_tick >= self.interval_s:
            self.last_tick = time.monotonic()
            return start["o"], start["tick"] + 1
        return start["o"], start["tick"]

    def partitions(self, start: dict, end: dict) -> List[InputPartition]:
        ranges = [(name, start["o"].get(name, stop), stop) for name, stop in end["o"].items()
                  if stop > start["o"].get(name, stop)]
        groups = spread(ranges, self.tasks)
        loads = [sum(stop - first for _, first, stop in group) for group in groups]
        # Spark may plan a first micro-batch ending at the initial offset: only the clock
        clock = (end.get("clock"), end.get("idle", []), end.get("finished", []))
        with_clock = loads.index(min(loads))
        return [InputPartition((group, end.get("hold", False), clock if i == with_clock else None))
                for i, group in enumerate(groups)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        ranges, hold, clock = partition.value
        for name, first, stop in ranges:
            yield from self._read_range(name, first, stop, hold)
        if clock is not None:
            at, idle, finished = clock
            first_channel = next(iter(self.channels.values()))
            markers = ([ChannelMarker(first_channel, processing_time=at)]
                       + [ChannelMarker(self.channels[p], idle=True) for p in idle]
                       + [ChannelMarker(self.channels[p], MAX_MICROS) for p in finished])
            yield packs.rows([], markers, None, keyed=False)

    def _read_range(self, name: str, first: int, stop: int, hold: bool) -> Iterator[pa.RecordBatch]:
        """One partition's offsets [first, stop): its elements, dead letters, marker, counts."""
        source, dead = self.source, []
        consumer = source.consumer(self.group_id)
        try:
            out, latest, lost = read_range(source, consumer, _split(name), first, stop,
                                           source.dead_letters(self.label, dead),
                                           self.on_data_loss)
        finally:
            consumer.close()
        wm = MIN_MICROS if latest == MIN_MICROS or hold else latest - source.out_of_orderness_us
        if dead:
            yield packs.element_rows(dead, [], source.dead_letter_tag, keyed=False)
        yield packs.element_rows(out, [ChannelMarker(self.channels[name], wm)], None, keyed=False)
        yield packs.counts_row(self.label, {"read": len(out), "lost_to_retention":
                                            sum(x.count for x in lost)}, on_bus=False)
        for x in lost:   # a task's warnings would stay in the executor's log
            yield packs.counts_row(self.label, x.warning(), on_bus=False)

    def commit(self, end: dict) -> None:
        """Tell the consumer group how far the query has read (Spark's checkpoint, not the
        group, is what a restart resumes from)."""
        from confluent_kafka import TopicPartition
        offsets = [TopicPartition(*_split(name), o) for name, o in end["o"].items()]
        if offsets:
            self.consumer.commit(offsets=offsets, asynchronous=False)

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


LEAST_PIECE = 4096   # the fewest records a task reads of a partition it shares with another


def spread(ranges: List[Tuple[str, int, int]], tasks: int,
           least: int = LEAST_PIECE) -> List[List[Tuple[str, int, int]]]:
    """A micro-batch's offset ranges, (partition, first, stop), as the ranges each of at most
    `tasks` tasks reads: taken one after another and cut into shares of equal size, so that
    the tasks take about as long when the partitions do not divide among them (3 partitions
    on 2 cores). A range cut between two tasks has its first part in the earlier one, whose
    rows a stateful step takes first (`stateful`), so a key's records keep their order. A cut
    closer than `least` records to a range's end moves to that end: no task opens a
    partition for a sliver of it. At least one task, with no ranges when there are none."""
    total = sum(stop - first for _, first, stop in ranges)
    n = max(1, min(tasks, total))
    starts, at = [], 0   # where each range starts, in records from the first one's start
    for _, first, stop in ranges:
        starts.append(at)
        at += stop - first
    cuts = []   # where each share after the first starts
    for k in range(1, n):
        c = total * k // n
        for a, (_, first, stop) in zip(starts, ranges):
            b = a + stop - first
            if a < c < b and min(c - a, b - c) < least:
                c = a if c - a <= b - c else b
        cuts.append(c)
    groups: List[List[Tuple[str, int, int]]] = [[] for _ in range(n)]
    for a, (name, first, stop) in zip(starts, ranges):
        b = a + stop - first
        bounds = sorted({a, b, *(c for c in cuts if a < c < b)})
        for lo, hi in zip(bounds, bounds[1:]):
            groups[bisect.bisect_right(cuts, lo)].append((name, first + lo - a, first + hi - a))
    return [g for g in groups if g] or [[]]


def at_most(start: Dict[str, int], ends: Dict[str, int], most: Optional[int]) -> Dict[str, int]:
    """The offsets to read up to from `start` towards `ends` (never back), about `most` of
    them in all: each partition's share in proportion to its backlog, rounded down, the
    records rounding left over going to the partitions whose shares it cut most; a partition
    with records waiting gets at least one (as Spark rounds a share under one up), so none
    waits behind a bigger backlog for ever, and a micro-batch may release a few more than
    `most`."""
    upto = {p: max(o, start.get(p, 0)) for p, o in ends.items()}
    backlog = {p: o - start.get(p, 0) for p, o in upto.items()}
    total = sum(backlog.values())
    if most is None or total <= most:
        return upto
    share = {p: most * n // total for p, n in backlog.items()}
    for p in sorted(backlog, key=lambda p: (share[p] - most * backlog[p] / total, p))[
            :most - sum(share.values())]:
        share[p] += 1
    return {p: start.get(p, 0) + max(share[p], min(1, backlog[p])) for p in upto}


def _name(partition: tuple) -> str:
    return f"{partition[0]}:{partition[1]}"


def _split(name: str) -> tuple:
    topic, p = name.rsplit(":", 1)
    return topic, int(p)


class KafkaSource(_Source):
    format, reader = KAFKA, KafkaReader


def register(spark: Any) -> None:
    """Make these sources known to the session."""
    spark.dataSource.register(StepsSource)
    spark.dataSource.register(FilesSource)
    spark.dataSource.register(KafkaSource)
