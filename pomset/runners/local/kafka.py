"""The local runner's Kafka stages: a source reading its partitions through a `KafkaReader`,
and a sink handing its elements to the run's `KafkaOutput` (one producer, one transaction per
checkpoint epoch, shared by every Kafka sink of the run)."""
from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional, Tuple

from ...runtime.plan import KAFKA_READ, KAFKA_WRITE
from ...sdk.io.kafka_clients import KafkaReader
from ...sdk.io.meter import offsets_read
from .stages import STAGES, SourceStage, Stage


class KafkaSourceStage(SourceStage):
    """A `ReadFromKafka`: `open` assigns its partitions (where a checkpoint left them, else
    where the source starts), `poll` pushes what arrived (the streaming driver moves its
    watermark). Offsets lost to retention are counted (`lost_to_retention`) and warned about as found."""

    state = SourceStage.state + ("lost_to_retention",)

    def __init__(self, node: Any, executor: Any) -> None:
        super().__init__(node, executor)
        self.reader: Optional[KafkaReader] = None
        self.resume: Optional[dict] = None
        self.dead: List[Any] = []
        self.group_id = ""
        self.lost_to_retention = 0
        self.starts: Dict[Any, int] = {}

    def open(self, run_id: str, on_data_loss: str = "warn", from_committed: bool = False) -> None:
        """Assign the partitions where the checkpoint left them, else (`from_committed`) where
        the consumer group committed, else where the source starts."""
        t = self.node.transform
        self.group_id = t.group_id or f"{run_id}-{self.label}"
        consumer = t.consumer(self.group_id)
        try:
            partitions = t.partitions(consumer)
            positions = t.start_offsets(consumer, partitions)
            if from_committed:
                positions.update(t.committed_offsets(consumer, partitions))
            if self.resume is not None:
                positions.update((p, o) for p, o in self.resume["positions"].items()
                                 if p in positions)
            ends = t.end_offsets(consumer, partitions) if t.until == "latest" else None
        except BaseException:
            consumer.close()
            raise
        self.starts = dict(positions)
        self.reader = KafkaReader(t, consumer, positions, ends,
                                  t.dead_letters(self.label, self.dead),
                                  self.resume["clock"] if self.resume else None, on_data_loss)

    @property
    def done(self) -> bool:
        return self.reader.done

    def progress(self) -> Optional[Tuple[int, int]]:
        """(offsets read, offsets to read) of a read that ends (`until="latest"`); None for
        one that does not, or before it opens."""
        r = self.reader
        if r is None or r.ends is None:
            return None
        return offsets_read(self.starts, r.positions, r.ends, r.open)

    def poll(self, max_records: int, timeout: float) -> int:
        """Push the records that arrive within `timeout` seconds; how many there were."""
        bundle = self.reader.poll(max_records, timeout)
        for lost in self.reader.take_lost():
            self.lost_to_retention += lost.count
            warnings.warn(lost.warning(), stacklevel=2)
        if bundle:
            self.push(bundle)
        if self.dead:
            self.emit_dead(self.node.transform.dead_letter_tag, self.dead)
        return len(bundle)

    def watermark(self) -> int:
        """The watermark of what was read so far (the reader's)."""
        return self.reader.watermark()

    def metrics(self) -> Dict[str, int]:
        return dict(super().metrics(), lost_to_retention=self.lost_to_retention)

    def positions(self) -> Dict[Any, int]:
        return dict(self.reader.positions)

    def commit_offsets(self) -> None:
        """Tell the consumer group how far the run has read (once its outputs are committed)."""
        from confluent_kafka import TopicPartition
        self.reader.consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in
                                             self.reader.positions.items()], asynchronous=False)

    def snapshot(self) -> Dict[str, Any]:
        return dict(super().snapshot(), reader=self.reader.snapshot())

    def restore(self, state: Dict[str, Any]) -> None:
        state = dict(state)
        self.resume = state.pop("reader")
        super().restore(state)

    def finish(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None

    def abort(self) -> None:
        self.finish()


class KafkaSinkStage(Stage):
    """A `WriteToKafka`: its elements go to the run's shared output (`output`, set by the
    streaming driver)."""

    def __init__(self, node: Any, executor: Any) -> None:
        super().__init__(node, executor)
        self.output: Any = None

    def receive(self, index: int, bundle: list) -> None:
        self.received += len(bundle)
        self.output.write(self.node.transform, bundle)

    def metrics(self) -> Dict[str, int]:
        return {"received": self.received, "written": self.received}


STAGES.register(KAFKA_READ, lambda node, executor, build: KafkaSourceStage(node, executor))
STAGES.register(KAFKA_WRITE, lambda node, executor, build: KafkaSinkStage(node, executor))
