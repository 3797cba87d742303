"""A local run with Kafka sources: reads on the real clock until the sources end (or until
Ctrl-C), committing its work in epochs of `--checkpoint_interval` seconds.

Committing epoch N: the Kafka output is flushed (inside its open transaction), file sinks
close their part N, the state of every stage is saved as checkpoint N (with `--checkpoint_dir`),
and then the transaction commits with the sources' offsets and the mark N, atomically; the
sources' consumer groups learn the offsets only once the outputs they produced are committed.
On restart the mark Kafka holds names the checkpoint to resume from (without Kafka sinks, the
newest), so what a killed run wrote after its last commit is neither kept nor repeated:
exactly once. Ctrl-C or SIGTERM stops the run after committing what it did. Without
`--checkpoint_dir` the producer is idempotent, not transactional, and a run always starts from
the sources' start offsets."""
from __future__ import annotations

import signal
import threading
import time
from typing import Any, Callable, List, Optional

from ...sdk.errors import PipelineConstructionError
from ...sdk.io.kafka_clients import KafkaOutput
from .checkpoint import Checkpoints
from .kafka import KafkaSinkStage, KafkaSourceStage
from .stages import SinkStage, Stage

_POLL_S = 0.05


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


class StreamingDriver:
    """Drives one run's Kafka sources and commits its epochs (see the module docstring)."""

    def __init__(self, stages: List[Stage], executor: Any, options: Any,
                 tick_clock: Callable[[], None]) -> None:
        self.stages, self.executor, self.options = stages, executor, options
        self.tick_clock = tick_clock
        self.sources = [s for s in stages if isinstance(s, KafkaSourceStage)]
        self.kafka_sinks = [s for s in stages if isinstance(s, KafkaSinkStage)]
        # a streaming run writes files in parts, one per epoch (a bounded one writing to
        # Kafka, its one file as usual)
        self.file_sinks = [s for s in stages if isinstance(s, SinkStage)] if self.sources else []
        self.checkpoints = Checkpoints(options.checkpoint_dir) if options.checkpoint_dir else None
        self.run_id = (self.checkpoints.run_id if self.checkpoints else
                       f"pomset-{time.time_ns():x}")
        self.output: Optional[KafkaOutput] = None
        self.epoch = 0
        self.committed: Optional[tuple] = None

    def restore(self) -> bool:
        """Open the output and put back the state of the checkpoint to resume from; whether
        there was one."""
        if self.kafka_sinks:
            self.output = KafkaOutput([(s.node.transform, s.node.inputs[0])
                                       for s in self.kafka_sinks], self.run_id,
                                      transactional=self.checkpoints is not None)
            for s in self.kafka_sinks:
                s.output = self.output
        epoch = self._resume_epoch()
        if epoch is not None:
            states = self.checkpoints.load(epoch)
            missing = [s.label for s in self.stages if s.label not in states]
            if missing:
                raise PipelineConstructionError(
                    f"the checkpoint in {self.checkpoints.directory} is of another pipeline: it "
                    f"has no state for {missing}")
            for s in self.stages:
                s.restore(states[s.label])
            self.epoch = epoch
        for s in self.file_sinks:
            s.start_part(self.epoch + 1)
        for s in self.sources:
            s.open(self.run_id, self.options.on_data_loss)
        return epoch is not None

    def _resume_epoch(self) -> Optional[int]:
        if self.checkpoints is None:
            return None
        epochs = self.checkpoints.epochs()
        if self.output is not None:
            mark = self.output.committed_mark()
            if mark is not None and mark not in epochs:
                raise PipelineConstructionError(
                    f"Kafka has output of epoch {mark} of run {self.run_id}, but "
                    f"{self.checkpoints.directory} has no checkpoint of it (epochs {epochs})")
        else:
            mark = max(epochs, default=None)
        # epochs after the mark were saved but their transaction never committed
        self.checkpoints.discard(keep=mark if mark is not None else -1)
        return mark

    def run(self) -> None:
        """Read until every source has ended (or Ctrl-C, or SIGTERM), committing epoch by
        epoch."""
        interval = self.options.checkpoint_interval
        due = time.monotonic() + interval
        bundle = self.options.bundle_size
        stop_on_term = threading.current_thread() is threading.main_thread()
        if stop_on_term:
            previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            while not all(s.done for s in self.sources):
                timeout = _POLL_S / len(self.sources)
                for s in self.sources:
                    if not s.done:
                        s.poll(bundle, timeout)
                self.tick_clock()
                for s in self.sources:
                    s.watermark()
                self.executor.propagate()
                if time.monotonic() >= due:
                    self.commit()
                    due = time.monotonic() + interval
        except KeyboardInterrupt:
            pass   # stop where we are: commit what was done
        finally:
            if stop_on_term:
                signal.signal(signal.SIGTERM, previous)
        self.commit(final=True)

    def _progress(self) -> tuple:
        """What changes whenever the run's state does: elements moved, watermarks, firings
        (a processing-time firing that emits nothing may pass unseen: redoing it after a
        restart is as if it had come later)."""
        return tuple((s.received, tuple(s.emitted.values()), s.out_wm, tuple(s.in_wms))
                     for s in self.stages)

    def commit(self, final: bool = False) -> None:
        """Commit the current epoch (see the module docstring) and start the next; nothing to
        do when nothing happened since the last commit (an idle stream costs no checkpoints)."""
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
            self.output.commit(epoch, {s.group_id: s.positions() for s in self.sources})
        if self.output is None or not self.output.transactional:
            for s in self.sources:
                s.commit_offsets()
        if self.checkpoints is not None:
            self.checkpoints.discard(keep=epoch)
        self.epoch = epoch

    def abort(self) -> None:
        if self.output is not None:
            self.output.abort()
