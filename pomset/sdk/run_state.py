"""A streaming run's metadata in its checkpoint directory (`pomset.json`): its id, which names
its Kafka consumer groups and transactions, and whatever a runner must keep the same when the
run resumes."""
from __future__ import annotations

import json
import os
import uuid
from typing import Any, Dict


def run_state(directory: str, **fresh: Any) -> Dict[str, Any]:
    """What was recorded when the run in `directory` first started, or, on its first start,
    `fresh` with a new `run_id`, recorded now."""
    path = os.path.join(directory, "pomset.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    state = dict(fresh, run_id=f"pomset-{uuid.uuid4().hex[:16]}")
    with open(path, "w") as f:
        json.dump(state, f)
    return state
