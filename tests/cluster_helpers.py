"""A pipeline's own module, next to its script (tests/cluster_job.py): its functions are pickled
by reference, so a cluster's executors import it from what pomset ships."""
from __future__ import annotations

from typing import Tuple


def key_value(record: dict) -> Tuple[str, int]:
    """A record's (key, value), the value tripled."""
    return record["k"], 3 * record["v"]
