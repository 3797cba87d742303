"""A local run with Kafka sources or file streams (`--streaming`, `files`): reads on the real
clock until the sources end (or until Ctrl-C), committing its work in epochs of
`--checkpoint_interval` seconds.

Committing epoch N: the Kafka output is flushed (inside its open transaction), file sinks
close their part N, the state of every stage is saved as checkpoint N (with `--checkpoint_dir`),
and then the transaction commits with the sources' offsets and the mark N, atomically; the
sources' consumer groups learn the offsets only once the outputs they produced are committed.
On restart the mark Kafka holds names the checkpoint to resume from (without Kafka sinks, the
newest that is not damaged), so what a killed run wrote after its last commit is neither kept
nor repeated: exactly once. The mark lives on a topic recorded in the run's metadata the first
time it writes to Kafka, so changing its sinks later keeps the run's identity. Ctrl-C or
SIGTERM (`runtime.stop`) stops the run between two steps, after committing what it did.
Without `--checkpoint_dir` the producer is idempotent, not transactional, and a run always
starts from the sources' start offsets.

As it reads, the driver keeps the run's progress record (`runtime.backlog`: each source's lag
or files waiting, the outputs' watermark, its last round of reading and propagating as the
micro-batch), shown on the status line and kept as `progress` for `result.metrics()`."""
from __future__ import annotations

import time
import warnings
from functools import partial
from typing import Any, Callable, List, Optional, Tuple

from ...runtime.backlog import Backlog, Record, files_backlog, kafka_backlog, status_text
from ...sdk.errors import CheckpointError, CheckpointWarning
from ...sdk.io import kafka_runs
from ...sdk.io.kafka_clients import KafkaOutput, progress_topic
from ...sdk.io.kafka_watch import BrokerWatch, clusters_of, topics_of
from ...runtime.stop import Committed, StopRequest
from .checkpoint import Checkpoints
from .files import FileStreamStage
from .kafka import KafkaSinkStage, KafkaSourceStage
from .stages import SinkStage, Stage

_POLL_S = 0.05
_RECORD_S = 0.5   # how often the progress record is made while the run reads


class StreamingDriver:
    """Drives one run's Kafka sources and file streams and commits its epochs (see the module
    docstring)."""

    def __init__(self, stages: List[Stage], executor: Any, options: Any,
                 tick_clock: Callable[[], None]) -> None:
        self.stages, self.executor, self.options = stages, executor, options
        self.tick_clock = tick_clock
        self.kafka_sources = [s for s in stages if isinstance(s, KafkaSourceStage)]
        self.file_streams = [s for s in stages if isinstance(s, FileStreamStage)]
        self.sources: List[Any] = self.kafka_sources + self.file_streams
        self.kafka_sinks = [s for s in stages if isinstance(s, KafkaSinkStage)]
        # a streaming run writes files in parts, one per epoch (a bounded one writing to
        # Kafka, its one file as usual)
        self.file_sinks = [s for s in stages if isinstance(s, SinkStage)] if self.sources else []
        self.checkpoints = (Checkpoints(options.checkpoint_dir, [s.node for s in stages],
                                        options.on_lost_checkpoint)
                            if options.checkpoint_dir else None)
        self.run_id = (self.checkpoints.run_id if self.checkpoints else
                       f"pomset-{time.time_ns():x}")
        self.output: Optional[KafkaOutput] = None
        self.epoch = 0
        self.committed: Optional[tuple] = None
        self.backlog = Backlog(options.backlog_warning)
        read = {id(x) for s in stages for x in s.node.inputs}
        # the stages the run's outputs leave from: sinks, and steps nobody reads
        self.outputs = [s for s in stages
                        if not any(id(x) in read for x in s.node.outputs.values())]
        self.batch: Tuple[Optional[float], Optional[int]] = (None, None)

    def restore(self) -> bool:
        """Open the output and put back the state of the checkpoint to resume from; whether
        there was one."""
        wrote_before = False
        if self.kafka_sinks:
            topic, pointer = None, None
            if self.checkpoints is not None:
                topic, wrote_before = progress_topic(
                    self.checkpoints.directory, [s.node.transform for s in self.kafka_sinks],
                    self.run_id)
                pointer = kafka_runs.pointer((s.node.transform for s in self.stages),
                                             self.run_id, self.checkpoints.directory)
            self.output = KafkaOutput([(s.node.transform, s.node.inputs[0])
                                       for s in self.kafka_sinks], self.run_id,
                                      transactional=self.checkpoints is not None,
                                      progress_topic=topic, pointer=pointer)
            for s in self.kafka_sinks:
                s.output = self.output
        epoch, states = self._resume(wrote_before)
        if epoch is not None:
            for s in self.stages:   # a step added since (a sink, say) starts afresh
                if s.label in states:
                    s.restore(states[s.label])
            self.epoch = epoch
        for s in self.file_sinks:
            s.sink.remove_parts_after(self.epoch)
            s.start_part(self.epoch + 1)
        # resumed from Kafka's mark alone: the sources go on from the offsets it committed
        from_mark = epoch is not None and not states
        for s in self.kafka_sources:
            s.open(self.run_id, self.options.on_data_loss, from_committed=from_mark)
        for f in self.file_streams:
            f.open(self.options)
        return epoch is not None

    def _resume(self, wrote_before: bool) -> Tuple[Optional[int], Optional[dict]]:
        """The epoch to resume from and its states ((None, None): start afresh).

        With Kafka output it is the epoch whose mark Kafka holds; epochs after it were saved
        but never committed. Without, it is the newest checkpoint that loads: a damaged one
        falls back to the one before, whose successors' file parts are written again."""
        if self.checkpoints is None:
            return None, None
        epochs, where = self.checkpoints.epochs(), self.checkpoints.directory
        if self.output is not None and wrote_before:
            mark = self.output.committed_mark()
            self.checkpoints.discard_after(mark if mark is not None else -1)
            if mark is None:
                return None, None
            if mark not in epochs and mark == self.checkpoints.from_mark:
                return mark, {}
            if mark not in epochs:
                raise CheckpointError(
                    f"Kafka holds the output of epoch {mark} of run {self.run_id}, but {where} "
                    f"has no checkpoint of it (epochs {epochs}): the checkpoints and the output "
                    f"topics are out of step; start afresh with a new --checkpoint_dir and "
                    f"empty output topics")
            if mark < epochs[-1] - 1:   # a crash before a commit leaves one epoch ahead
                warnings.warn(f"Kafka holds the output of epoch {mark} of run {self.run_id}, but "
                              f"{where} had checkpoints up to epoch {epochs[-1]} (the broker "
                              f"lost writes it had acknowledged): resuming from epoch {mark}",
                              CheckpointWarning, stacklevel=2)
            try:
                return mark, self.checkpoints.load(mark)
            except CheckpointError as e:
                raise CheckpointError(
                    f"{e}. Kafka already holds the output of epoch {mark}, so resuming from an "
                    f"older checkpoint would write output twice: restore the file from a "
                    f"backup, or start afresh with a new --checkpoint_dir and empty output "
                    f"topics") from None
        for i in range(len(epochs) - 1, -1, -1):
            try:
                return epochs[i], self.checkpoints.load(epochs[i])
            except CheckpointError as e:
                if i == 0:
                    raise CheckpointError(
                        f"{e}. There is no older checkpoint to fall back to: restore the file "
                        f"from a backup, or start afresh with a new --checkpoint_dir") from None
                warnings.warn(f"{e}; resuming from the checkpoint before it, epoch "
                              f"{epochs[i - 1]}", CheckpointWarning, stacklevel=2)
        return None, None

    @property
    def progress(self) -> Record:
        """The run's progress record (`runtime.backlog`), as last made."""
        return self.backlog.record

    def run(self, note: Callable[[str], None], stop: StopRequest,
            status: Callable[[str], None] = lambda text: None) -> None:
        """Read until every source has ended (or `stop` is requested: Ctrl-C, SIGTERM),
        committing epoch by epoch; a broker that stops answering is warned of and shown with
        `note` (`kafka_watch`), the progress record with `status`."""
        interval = self.options.checkpoint_interval
        due = time.monotonic() + interval
        bundle = self.options.bundle_size
        transforms = [s.node.transform for s in self.stages]
        watch = BrokerWatch(clusters_of(transforms), self.options.kafka_stall_warning,
                            topics=topics_of(transforms)).start()
        shown: Optional[str] = None
        recorded = time.monotonic()
        try:
            while True:   # at least once: a resumed run may find every source ended
                stalled = watch.check()
                if stalled != shown:
                    note(stalled or "")
                    shown = stalled
                if time.monotonic() - recorded >= _RECORD_S:
                    status(status_text(self._record(watch.latest)))
                    recorded = time.monotonic()
                timeout = _POLL_S / max(1, len(self.sources))
                began = time.monotonic()
                got = sum(s.poll(bundle, timeout) for s in self.sources if not s.done)
                marks = [(s, s.watermark()) for s in self.sources]
                self.executor.serial(partial(self._step, marks))
                if got:
                    self.batch = (1000 * (time.monotonic() - began), got)
                if stop.requested or all(s.done for s in self.sources):
                    break   # a step ended: a safe point to commit at
                if time.monotonic() >= due:
                    self.commit()
                    due = time.monotonic() + interval
        finally:
            watch.stop()
        self.commit(final=True)
        watch.refresh()
        status(status_text(self._record(watch.latest)))

    def _record(self, latest: dict) -> Record:
        """Make the progress record from the partitions' latest offsets and the sources'
        positions (`Backlog.update`, which warns of a backlog that keeps growing)."""
        sources = {s.label: files_backlog(s.waiting()) if isinstance(s, FileStreamStage)
                   else kafka_backlog(latest, s.reader.positions)
                   for s in self.sources if isinstance(s, FileStreamStage) or s.reader is not None}
        marks = [min(s.in_wms) if not s.node.outputs else s.out_wm for s in self.outputs]
        return self.backlog.update(sources, min(marks, default=None), *self.batch)

    def committed_so_far(self) -> Committed:
        """The last epoch committed, where, and its Kafka transaction (for the stop line)."""
        output = self.output
        kafka = (f"{output.transactional_id} (mark {output.last_mark})"
                 if output is not None and output.last_mark is not None else None)
        return Committed("epoch", self.epoch or None,
                         self.checkpoints.directory if self.checkpoints else None, kafka)

    def _step(self, marks: list) -> None:
        """Move the clock, then the sources' watermarks (as read when their bundles were
        handed over), then propagate."""
        self.tick_clock()
        for s, wm in marks:
            s.out_wm = max(s.out_wm, wm)
        self.executor.propagate()

    def _progress(self) -> tuple:
        """What changes whenever the run's state does: elements moved, watermarks, firings
        (a processing-time firing that emits nothing may pass unseen: redoing it after a
        restart is as if it had come later)."""
        return tuple((s.received, tuple(s.emitted.values()), s.out_wm, tuple(s.in_wms))
                     for s in self.stages)

    def commit(self, final: bool = False) -> None:
        """Commit the current epoch (see the module docstring) and start the next; nothing to
        do when nothing happened since the last commit (an idle stream costs no checkpoints)."""
        self.executor.quiesce()
        progress = self._progress()
        if progress == self.committed and not final:
            return
        self.committed = progress
        epoch = self.epoch + 1
        if self.output is not None:
            self.output.flush()
        for s in self.file_sinks:
            s.start_part(epoch + 1)
        if self.checkpoints is not None:
            self.checkpoints.save(epoch, {s.label: s.snapshot() for s in self.stages})
        if self.output is not None:
            self.output.commit(epoch, {s.group_id: s.positions() for s in self.kafka_sources})
        if self.output is None or not self.output.transactional:
            for s in self.kafka_sources:
                s.commit_offsets()
        if self.checkpoints is not None:
            self.checkpoints.prune()
        self.epoch = epoch

    def abort(self) -> None:
        if self.output is not None:
            self.output.abort()

    def release(self) -> None:
        """Let another run take the checkpoint directory."""
        if self.checkpoints is not None:
            self.checkpoints.release()
