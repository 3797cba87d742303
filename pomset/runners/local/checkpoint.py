"""A local streaming run's checkpoints: `--checkpoint_dir` holds the run's id (`pomset.json`)
and one file per committed epoch (`epoch-NNNNNN.pkl`, the pickled state of every stage by
label, written atomically behind a checksum). The newest `KEEP` epochs are kept, so a run whose
Kafka output lost its newest commits (a broker that lost acknowledged writes) resumes from the
one Kafka still holds. The run holds the directory's lock (`sdk.checkpoint_lock`) while it lasts,
and finds out at each checkpoint when the directory was deleted under it."""
from __future__ import annotations

import os
import pickle
import re
from typing import Any, Dict, List, Optional

from ...runtime.lost_checkpoint import start_run_state
from ...sdk.checkpoint_lock import CheckpointLock
from ...sdk.durable import read_checked, write_checked
from ...sdk.errors import CheckpointError, PipelineConstructionError

_EPOCH = re.compile(r"epoch-(\d{6,})\.pkl$")
KEEP = 3


class Checkpoints:
    """The checkpoint directory of one run (created if missing) of the pipeline of `nodes`,
    which must be the one that wrote it (`runtime.fingerprint`), locked until `release()`;
    `on_lost` says what to do when it holds no run but Kafka holds the pipeline's output
    (`runtime.lost_checkpoint`)."""

    def __init__(self, directory: str, nodes: List[Any], on_lost: str = "fail") -> None:
        self.directory = os.path.abspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.lock = CheckpointLock(self.directory)
        try:
            state = start_run_state(self.directory, nodes, on_lost, leftovers=[
                name for name in os.listdir(self.directory) if _EPOCH.match(name)])
        except BaseException:
            self.lock.release()
            raise
        self.run_id = state["run_id"]
        #: the mark of a run resumed from Kafka's mark alone (`--on_lost_checkpoint`)
        self.from_mark: Optional[int] = state.get("from_mark")

    def _path(self, epoch: int) -> str:
        return os.path.join(self.directory, f"epoch-{epoch:06d}.pkl")

    def epochs(self) -> List[int]:
        return sorted(int(m.group(1)) for m in map(_EPOCH.match, os.listdir(self.directory)) if m)

    def save(self, epoch: int, states: Dict[str, Any]) -> None:
        try:
            data = pickle.dumps(states, protocol=5)
        except Exception as e:
            raise PipelineConstructionError(
                f"the run's state cannot be checkpointed (keys, values and accumulators must "
                f"pickle): {type(e).__name__}: {e}") from e
        with self.lock.writing():
            write_checked(self._path(epoch), data)

    def load(self, epoch: int) -> Dict[str, Any]:
        """Epoch `epoch`'s states; `CheckpointError` naming the file when it is damaged."""
        path = self._path(epoch)
        payload = read_checked(path)
        try:
            return pickle.loads(payload)
        except Exception as e:
            raise CheckpointError(f"checkpoint file {path} passed its checksum but does not "
                                  f"load ({type(e).__name__}: {e}): it was written by another "
                                  f"version of pomset or of the pipeline's code") from e

    def discard_after(self, epoch: int) -> None:
        """Remove the epochs after `epoch` (saved, but their output never committed)."""
        for e in self.epochs():
            if e > epoch:
                os.remove(self._path(e))

    def prune(self) -> None:
        """Keep only the newest `KEEP` epochs."""
        with self.lock.writing():
            for e in self.epochs()[:-KEEP]:
                os.remove(self._path(e))

    def release(self) -> None:
        self.lock.release()
