"""A streaming run's metadata in its checkpoint directory (`pomset.json`): its id, which names
its Kafka consumer groups and transactions, and whatever a runner must keep the same when the
run resumes. Written atomically; a damaged one is an error naming it."""
from __future__ import annotations

import json
import os
import uuid
from typing import Any, Dict

from .durable import write_atomic
from .errors import CheckpointError

FILE = "pomset.json"


def _path(directory: str) -> str:
    return os.path.join(directory, FILE)


def _read(path: str) -> Dict[str, Any]:
    try:
        with open(path) as f:
            state = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(
            f"the run's metadata {path} is damaged ({type(e).__name__}: {e}); it names the run "
            f"whose checkpoints are here: restore it from a backup, or start the run afresh "
            f"with an empty --checkpoint_dir") from None
    if not isinstance(state, dict) or not isinstance(state.get("run_id"), str):
        raise CheckpointError(f"the run's metadata {path} has no run_id: it is damaged or "
                              f"not pomset's; start afresh with an empty --checkpoint_dir")
    return state


def recorded(directory: str) -> bool:
    """Whether a run recorded its metadata in `directory` (it is not a first start)."""
    return os.path.exists(_path(directory))


def run_state(directory: str, **fresh: Any) -> Dict[str, Any]:
    """What was recorded when the run in `directory` first started, or, on its first start,
    `fresh` (with a new `run_id` unless it names one), recorded now."""
    path = _path(directory)
    if os.path.exists(path):
        return _read(path)
    state = dict({"run_id": f"pomset-{uuid.uuid4().hex[:16]}"}, **fresh)
    write_atomic(path, json.dumps(state, sort_keys=True).encode())
    return state


def update_run_state(directory: str, **fields: Any) -> Dict[str, Any]:
    """Record `fields` in the run's metadata (which must exist), keeping the rest."""
    path = _path(directory)
    state = dict(_read(path), **fields)
    write_atomic(path, json.dumps(state, sort_keys=True).encode())
    return state
