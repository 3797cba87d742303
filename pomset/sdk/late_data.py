"""The warning every run that dropped late elements ends with, whichever runner ran it: the
counts come from `result.metrics()`, which every runner fills the same way."""
from __future__ import annotations

import warnings
from typing import Any, Dict, List

from .core import GroupByKey
from .errors import LateDataWarning


def warn_dropped(nodes: List[Any], metrics: Dict[str, Dict[str, int]]) -> None:
    """One `LateDataWarning` per step that dropped elements, naming it, the count, its share
    of what the step received, and what keeps them."""
    for node in nodes:
        counts = metrics.get(node.label, {})
        dropped = counts.get("dropped", 0)
        if not dropped:
            continue
        received = counts.get("received", 0)
        share = f" ({dropped / received:.1%} of the {received:,} it received)" if received else ""
        if isinstance(node.transform, GroupByKey) or getattr(node.transform, "stateful", False):
            why = ("their windows had expired (they came later than the watermark plus the "
                   "allowed lateness) or been closed by a trigger that finished (one not "
                   "Repeatedly). Keep them with a larger allowed_lateness= on the WindowInto "
                   "before it, or a repeating trigger (for a streaming file source, "
                   "--max_out_of_orderness also lets its watermark trail further)")
        else:
            why = ("they came behind the step's input watermark. Keep them by letting the "
                   "source's watermark trail further (--max_out_of_orderness for a streaming "
                   "file source)")
        keep = (" or send them to a side output with .with_late_output()"
                if isinstance(node.transform, GroupByKey) else "")
        warnings.warn(f"{node.label!r} dropped {dropped:,} late elements{share}: {why}{keep}. "
                      f"result.metrics()[{node.label!r}]['dropped'] counts them.",
                      LateDataWarning, stacklevel=3)
