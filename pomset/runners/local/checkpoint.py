"""A local streaming run's checkpoints: `--checkpoint_dir` holds the run's id (`pomset.json`)
and one file per committed epoch (`epoch-NNNNNN.pkl`, the pickled state of every stage by
label, written atomically)."""
from __future__ import annotations

import os
import pickle
import re
from typing import Any, Dict, List

from ...runtime.fingerprint import resume_run_state
from ...sdk.errors import PipelineConstructionError

_EPOCH = re.compile(r"epoch-(\d{6,})\.pkl$")


class Checkpoints:
    """The checkpoint directory of one run (created if missing) of the pipeline of `nodes`,
    which must be the one that wrote it (`runtime.fingerprint`)."""

    def __init__(self, directory: str, nodes: List[Any]) -> None:
        self.directory = os.path.abspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.run_id = resume_run_state(self.directory, nodes, every_step=True)["run_id"]

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
        tmp = self._path(epoch) + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path(epoch))

    def load(self, epoch: int) -> Dict[str, Any]:
        with open(self._path(epoch), "rb") as f:
            return pickle.load(f)

    def discard(self, keep: int) -> None:
        """Remove every epoch but `keep`."""
        for epoch in self.epochs():
            if epoch != keep:
                os.remove(self._path(epoch))
