"""The local runner: builds stages from the pipeline's plan (`runtime.plan`, through its
translator table `stages.STAGES`) and drives its sources and clock.

Bounded sources are read in bundles, then their watermark jumps from MIN to MAX (batch is
streaming with a watermark that jumps once). A TestStream then replays its steps on its own
processing clock, starting at 0; without one, processing time is the real clock. Kafka sources,
and with `--streaming` file sources (as streams of files, `files`), are then read by the
`StreamingDriver`, which commits the run's output in epochs.
"""
from __future__ import annotations

import time
from functools import partial
from typing import Any, Callable, Dict

from ...sdk.errors import PipelineConstructionError
from ...sdk.result import PipelineResult
from ...runtime.backlog import PROGRESS
from ...runtime.collector import rarely_collecting
from ...runtime.fusion import Fusion
from ...runtime.plan import DRIVER_READ, lower
from ...runtime.spill import memory_budget
from ...runtime.stop import stopping
from ...runtime.test_stream import stream_steps
from ...windowing import MAX_MICROS, now_micros
from .executor import SequentialExecutor
from .files import FileStreamStage
from .kafka import KafkaSinkStage, KafkaSourceStage
from .oplus import ELASTIC_INTERVAL, OPlusStage
from .parallel import ParallelExecutor
from .progress import Progress
from .stages import GroupStage, SourceStage, stage_for
from .streaming import StreamingDriver



class LocalRunner:
    """Runs a pipeline on this machine: with the sequential reference executor at
    `--workers=1`, else with the ordered-parallel executor (`parallel.py`)."""

    def run(self, pipeline: Any) -> PipelineResult:
        options = pipeline.options
        record: Dict[int, list] = {id(pc): [] for pc in pipeline.recorded()}
        workers = options.workers
        executor = (SequentialExecutor(record) if workers == 1
                    else ParallelExecutor(record, workers, options.worker_mode,
                                          options.schedule, options.schedule_seed))
        plan = lower(pipeline)
        fusion = Fusion(plan.nodes)
        stages = [stage_for(node, executor, fusion, options.shuffle_merges, options.streaming)
                  for node in plan]
        executor.wire(stages)
        oplus = {s.label: s for s in stages if isinstance(s, OPlusStage)}
        for s in oplus.values():
            s.elastic = ELASTIC_INTERVAL if options.elastic else None
        pipeline.controls.attach({label: s.request for label, s in oplus.items()})
        progress = Progress(stages, options.quiet)
        executor.on_bundle = progress.tick

        sources = [s for s in stages if isinstance(s, SourceStage)]
        streams = [s for s in sources if s.node.kind == DRIVER_READ]
        if len(streams) > 1:
            raise PipelineConstructionError("a pipeline may have at most one TestStream, found "
                                            f"{[s.label for s in streams]}")
        kafka = [s for s in sources if isinstance(s, KafkaSourceStage)]
        files = [s for s in sources if isinstance(s, FileStreamStage)]
        if streams and (kafka or files):
            raise PipelineConstructionError(
                f"a pipeline reads a TestStream or streams (Kafka, or files with --streaming), "
                f"not both: {streams[0].label} and {(kafka or files)[0].label}")
        real_clock = not streams
        uses_kafka = kafka or any(isinstance(s, KafkaSinkStage) for s in stages)
        driven = uses_kafka or files
        if not streams and not driven:   # every source bounded: groupings may spill
            budget = memory_budget(options.memory_limit)
            for s in stages:
                if isinstance(s, GroupStage):
                    s.may_spill(budget, options.temp_location)
        driver = StreamingDriver(stages, executor, options,
                                 lambda: self._tick_clock(executor)) if driven else None
        started = time.monotonic()
        # Ctrl-C and SIGTERM stop a streaming run at a safe point (`runtime.stop`)
        with stopping(driver is not None) as stop, rarely_collecting():
            if driver is not None:
                stop.committed = driver.committed_so_far
            try:
                for s in stages:
                    s.start()
                executor.set_processing_time(now_micros() if real_clock else 0)
                resumed = driver is not None and driver.restore()
                for source in sources:   # a resumed run read its bounded sources before
                    if (source not in streams and source not in kafka and source not in files
                            and not resumed):
                        self._read(source, executor, options.bundle_size, real_clock,
                                   progress.note)
                for stream in streams:
                    self._replay(stream, executor)
                if driver is not None:
                    driver.run(progress.note, stop, progress.status)
                executor.quiesce()
            except BaseException:
                executor.shutdown()
                if driver is not None:
                    driver.abort()
                for s in stages:
                    try:
                        s.abort()
                    except Exception:  # the run's own error is the one to report
                        pass
                raise
            finally:
                progress.close()
                if driver is not None:
                    driver.release()
            executor.shutdown()
            for s in stages:
                s.finish()
            if driver is not None:
                stop.progress = driver.progress if driver.sources else None
            stop.end()
        metrics = {s.label: s.metrics() for s in stages}
        if driver is not None and driver.sources:
            metrics[PROGRESS] = driver.progress
        result = PipelineResult(record, metrics, time.monotonic() - started, executor.times)
        progress.summary(result.metrics())
        return result

    def _read(self, source: SourceStage, executor: SequentialExecutor, bundle_size: int,
              real_clock: bool, note: Callable[[str], None]) -> None:
        """Push a bounded source's bundles, then move its watermark from MIN to MAX (saying
        so on the status line: the windows that close then may take a while to fire)."""
        for bundle in source.bundles(bundle_size):
            source.push(bundle)
            if real_clock:
                executor.serial(lambda: self._tick_clock(executor))
            executor.propagate()

        def end() -> None:
            note(f"{source.label} read; closing its windows")
            source.out_wm = MAX_MICROS
            executor.propagate()
        executor.serial(end)

    @staticmethod
    def _tick_clock(executor: SequentialExecutor) -> None:
        due = executor.next_processing_timer()
        now = now_micros()
        if due is not None and due <= now:
            executor.set_processing_time(now)
        else:
            executor.pt = now

    @staticmethod
    def _replay(stream: SourceStage, executor: SequentialExecutor) -> None:
        """A TestStream's steps, each one propagation: its elements pushed, its watermark
        moved, or the processing clock moved (firing what is due)."""
        def step(elements: list, wm: int, pt: int) -> None:
            if pt > executor.pt:
                executor.set_processing_time(pt)
                return
            if elements:
                stream.push(elements)
            stream.out_wm = max(stream.out_wm, wm)
            executor.propagate()

        for elements, wm, pt in stream_steps(stream.node.transform):
            executor.serial(partial(step, elements, wm, pt))
