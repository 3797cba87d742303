"""A checkpointed run's first start, told apart from a lost checkpoint on every runner: when the
checkpoint directory holds no run yet but Kafka holds a progress mark of this pipeline's last
run (`sdk.io.kafka_runs`), the directory was deleted or is a new one. Starting afresh then
would read the sources from their start offsets again and write the output Kafka already holds
a second time, so the run does what `--on_lost_checkpoint` says: fail (the default), restart
(a new run, explicitly) or resume_from_mark (the last run's id, from the source offsets its
mark committed, with none of its state)."""
from __future__ import annotations

import warnings
from typing import Any, Dict, List, Sequence

from ..sdk.errors import CheckpointError, CheckpointWarning
from ..sdk.io.kafka import WriteToKafka
from ..sdk.io.kafka_runs import LastRun, last_run, pipeline_group
from ..sdk.run_state import FILE, recorded
from .fingerprint import resume_run_state

_WAYS_OUT = ("pass --on_lost_checkpoint=restart to start over (a new run reading the sources "
             "from their start offsets: that output is written again), or "
             "--on_lost_checkpoint=resume_from_mark to go on from the source offsets that mark "
             "committed (the state the lost checkpoint held is gone: windows still open then "
             "emit only what arrives after it)")


def start_run_state(directory: str, nodes: List[Any], on_lost: str, resumable: bool = True,
                    leftovers: Sequence[str] = (), **fresh: Any) -> Dict[str, Any]:
    """The run's metadata (`resume_run_state`), deciding by `on_lost` when `directory` holds
    no run but Kafka holds this pipeline's output (see the module docstring); `resumable`
    says whether the runner can resume from a mark alone. `leftovers` are the runner's files
    in `directory` (checkpoints): with no run recorded they belong to a lost one, and a new
    run is refused rather than started on them."""
    if recorded(directory):
        return resume_run_state(directory, nodes, **fresh)
    sinks = [n.transform for n in nodes if isinstance(n.transform, WriteToKafka)]
    found = last_run(sinks, pipeline_group(n.transform for n in nodes)) if sinks else None
    if found is not None and on_lost == "fail":
        raise CheckpointError(f"{_what(directory, found)}: starting afresh would read the "
                              f"sources from their start offsets and write that output twice. "
                              f"Restore {found.directory} from a backup and restart; or "
                              f"{_WAYS_OUT}")
    if leftovers:
        raise CheckpointError(
            f"checkpoint directory {directory} holds no run ({FILE} is missing) but a run's "
            f"checkpoint files: {', '.join(sorted(leftovers))}; they cannot be resumed without "
            f"it, nor a new run started over them: restore the directory from a backup, or "
            f"move them away")
    if found is None:
        return resume_run_state(directory, nodes, **fresh)
    what = _what(directory, found)
    if on_lost == "restart":
        warnings.warn(f"{what}; --on_lost_checkpoint=restart: starting a new run from the "
                      f"sources' start offsets, which writes that output again",
                      CheckpointWarning, stacklevel=3)
        return resume_run_state(directory, nodes, **fresh)
    if on_lost == "resume_from_mark" and resumable:
        warnings.warn(f"{what}; --on_lost_checkpoint=resume_from_mark: run {found.run_id} goes "
                      f"on from the source offsets of mark {found.mark}, without the state "
                      f"its checkpoint held (windows open then emit only what arrives from "
                      f"now on)", CheckpointWarning, stacklevel=3)
        return resume_run_state(directory, nodes, **dict(
            fresh, run_id=found.run_id, progress_topic=found.topic, from_mark=found.mark))
    raise CheckpointError(
        f"{what}. This runner cannot resume from Kafka's mark alone (its marks do not record "
        f"the sources' offsets, its own checkpoint does): restore {found.directory} from a "
        f"backup and restart, or pass --on_lost_checkpoint=restart to start over")


def _what(directory: str, found: LastRun) -> str:
    return (f"checkpoint directory {directory} holds no run, but Kafka holds the output of "
            f"this pipeline's run {found.run_id} (checkpointed in {found.directory}) up to its "
            f"progress mark {found.mark} (consumer group {found.run_id}-progress, topic "
            f"{found.topic!r})")
