"""A streaming run's progress record, the same on every runner: per source its backlog (a Kafka
source's lag, each partition's high watermark less the run's position, in all and per
partition; a stream of files, the files waiting), the watermark of what reaches the outputs and
its delay behind the clock, the last micro-batch's duration and records, and whether the input
is caught up. `Backlog` makes the records from what a runner reads off its sources, and warns
(`BacklogWarning`) of a source whose backlog has grown for `--backlog_warning` seconds: a run
that reads slower than its input arrives falls further behind for as long as it runs."""
from __future__ import annotations

import time
import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ..sdk.errors import BacklogWarning
from ..windowing import MAX_MICROS, MIN_MICROS, now_micros

#: the key of the progress record in `result.metrics()` and of nothing else there
PROGRESS = "progress"

Partition = Tuple[str, int]
SourceBacklog = Dict[str, Any]
Record = Dict[str, Any]


def kafka_backlog(latest: Mapping[Partition, int],
                  positions: Mapping[Partition, int]) -> SourceBacklog:
    """A Kafka source's backlog: per partition ("topic:partition") its high watermark less the
    position the run has read to (never below 0; None while the high watermark is not known),
    and their sum (None while any is unknown)."""
    lags: Dict[str, Optional[int]] = {}
    for (topic, p), at in sorted(positions.items()):
        high = latest.get((topic, p))
        lags[f"{topic}:{p}"] = None if high is None else max(0, high - at)
    known = [n for n in lags.values() if n is not None]
    return {"kind": "kafka", "backlog": sum(known) if len(known) == len(lags) else None,
            "partitions": lags}


def files_backlog(waiting: int) -> SourceBacklog:
    """A stream of files' backlog: the files its pattern matches that the run has not taken."""
    return {"kind": "files", "backlog": max(0, waiting)}


def caught_up(record: Record) -> bool:
    """Whether every source's backlog was known and nothing when `record` was made."""
    return all(s["backlog"] == 0 for s in record["sources"].values())


def input_state(record: Record) -> str:
    """Whether the run was caught up with its input, for the stop line: every source's backlog
    nothing, else what each source had left (records behind, files waiting, or unknown)."""
    if caught_up(record):
        return "the input was caught up"
    left = []
    for label, s in sorted(record["sources"].items()):
        n = s["backlog"]
        unit = "files waiting" if s["kind"] == "files" else "records behind"
        left.append(f"{label}: its backlog unknown" if n is None else f"{label}: {n} {unit}")
    return f"the input was not caught up ({', '.join(left)})"


class Backlog:
    """`update` makes the run's progress record (kept as `record`) and warns, once until the
    source catches up, of a source whose backlog has been above 0 for `warn_after` seconds and
    is larger than it was `warn_after` seconds before."""

    def __init__(self, warn_after: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.warn_after = warn_after
        self.clock = clock
        self.history: Dict[str, List[Tuple[float, int]]] = {}
        self.warned: set = set()
        self.record: Record = make_record({}, None, None, None)

    def update(self, sources: Dict[str, SourceBacklog], watermark: Optional[int],
               batch_ms: Optional[float], batch_records: Optional[int]) -> Record:
        """The record of these sources' backlogs, the outputs' watermark (µs; None before
        any) and the last micro-batch (None before one ran)."""
        at = self.clock()
        for label, source in sources.items():
            self._check(label, source, at)
        self.record = make_record(sources, watermark, batch_ms, batch_records)
        return self.record

    def _check(self, label: str, source: SourceBacklog, at: float) -> None:
        n = source["backlog"]
        if n is None:
            return
        if n == 0:
            self.history.pop(label, None)
            self.warned.discard(label)
            return
        seen = self.history.setdefault(label, [])
        seen.append((at, n))
        while len(seen) > 2 and seen[1][0] <= at - self.warn_after:
            seen.pop(0)
        since, then = seen[0]
        if label in self.warned or since > at - self.warn_after or n <= then:
            return
        self.warned.add(label)
        unit = "records" if source["kind"] == "kafka" else "files"
        parts = "".join(f"; {name}: {lag}" for name, lag in source.get("partitions", {}).items())
        warnings.warn(BacklogWarning(
            f"{label}: its backlog has grown for {at - since:.0f} s, from {then} to {n} "
            f"{unit} waiting{parts}: the run reads slower than its input arrives and its "
            f"output falls further behind (--backlog_warning sets when this is said)"),
            stacklevel=3)


def make_record(sources: Dict[str, SourceBacklog], watermark: Optional[int],
                batch_ms: Optional[float], batch_records: Optional[int]) -> Record:
    """The progress record (its keys are documented in docs/results.md)."""
    if watermark is None or watermark <= MIN_MICROS:
        mark, delay = None, None
    elif watermark >= MAX_MICROS:
        mark, delay = MAX_MICROS, 0.0
    else:
        mark, delay = watermark, max(0.0, (now_micros() - watermark) / 1e6)
    record = {"sources": sources, "watermark": mark, "watermark_delay_s": delay,
              "last_batch_ms": None if batch_ms is None else round(batch_ms),
              "last_batch_records": batch_records}
    record["caught_up"] = caught_up(record)
    return record


def status_text(record: Record) -> str:
    """The record for the status line, in few characters: `lag=1234` (Kafka records waiting),
    `files=3` (files waiting), `wm-4.2s` (the watermark's delay), `batch=85ms/500`."""
    parts = []
    for kind, name in (("kafka", "lag"), ("files", "files")):
        counts = [s["backlog"] for s in record["sources"].values() if s["kind"] == kind]
        if counts:
            known = [n for n in counts if n is not None]
            parts.append(f"{name}={sum(known) if len(known) == len(counts) else '?'}")
    if record["watermark_delay_s"] is not None:
        parts.append(f"wm-{record['watermark_delay_s']:.1f}s")
    if record["last_batch_ms"] is not None:
        parts.append(f"batch={record['last_batch_ms']}ms/{record['last_batch_records']}")
    return " ".join(parts)
