"""What a streaming query tells of its sources' backlog (`runtime.backlog`): a Kafka source's
position is the end offset of its last micro-batch (Spark's progress report, the offsets of
`stream_sources.KafkaReader`), less than the partitions' latest offsets (`BrokerWatch.latest`);
a stream of files has the files its pattern matches beyond the count its last micro-batch
released (`stream_sources.FilesReader`). The query's progress lists its sources in the order
the plan reads them, which is the pipeline's."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ...runtime.backlog import SourceBacklog, files_backlog, kafka_backlog
from ...runtime.plan import kinds
from ...sdk.io.base import expand_pattern


class QuerySources:
    """The backlog sources of a streaming plan: its Kafka sources (label -> partition names,
    "topic:partition") and its streams of files (label -> pattern)."""

    def __init__(self, plan: Any) -> None:
        self.kafka: Dict[str, List[str]] = {}
        self.files: Dict[str, str] = {}
        for node in plan.plan:
            if node.kind == kinds.KAFKA_READ:
                self.kafka[node.label] = sorted(plan.partition_channels[node.label])
            elif node.kind == kinds.READ and not node.makes_bundles:
                self.files[node.label] = node.transform.pattern

    def __bool__(self) -> bool:
        return bool(self.kafka or self.files)

    def backlog(self, last: Optional[Mapping[str, Any]],
                latest: Mapping[Tuple[str, int], int]) -> Dict[str, SourceBacklog]:
        """Each source's backlog after the micro-batch of progress report `last` (None before
        the first: a Kafka source's lag not known yet, every file waiting)."""
        ends = [_offset(s.get("endOffset")) for s in (last or {}).get("sources", [])]
        kafka = [e["o"] for e in ends if "o" in e]
        files = [e["n"] for e in ends if "n" in e]
        out: Dict[str, SourceBacklog] = {}
        for label, names in self.kafka.items():
            at = next((o for o in kafka if sorted(o) == names), None)
            positions = {_split(n): (at[n] if at else 0) for n in names}
            out[label] = kafka_backlog(latest if at else {}, positions)
        for i, (label, pattern) in enumerate(self.files.items()):
            taken = files[i] if i < len(files) else 0
            out[label] = files_backlog(len(expand_pattern(pattern)) - taken)
        return out


def last_batch(reports: List[Mapping[str, Any]], batch_id: Optional[int],
               records: int) -> Tuple[Optional[float], Optional[int]]:
    """(duration ms, records read) of micro-batch `batch_id`, the last that read records
    (`records` of them), its duration from its progress report among `reports`; (None, None)
    before one did."""
    if batch_id is None:
        return None, None
    ms = next((r.get("durationMs", {}).get("triggerExecution") for r in reversed(reports)
               if r.get("batchId") == batch_id), None)
    return ms, records


def _offset(value: Any) -> Dict[str, Any]:
    """A source's offset in a progress report: a dict, or its JSON."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _split(name: str) -> Tuple[str, int]:
    topic, p = name.rsplit(":", 1)
    return topic, int(p)
