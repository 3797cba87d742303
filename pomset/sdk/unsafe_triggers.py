"""Beam's check of triggers that may lose data, for a pipeline whose options set
`allow_unsafe_triggers` to False: a grouping refuses a trigger that may finish, after which
Beam drops what its window still gets. pomset's default takes every trigger (it counts and
warns of what a finished trigger drops), so the check runs only when asked for."""
from __future__ import annotations

from ..triggers import (AfterAll, AfterAny, AfterCount, AfterEach, AfterProcessingTime,
                        AfterWatermark, OrFinally, Repeatedly, Trigger)
from ..triggers.strategy import WindowingStrategy


def may_finish(trigger: Trigger, allowed_lateness_us: int) -> bool:
    """Whether `trigger` may finish, as Beam judges it: a count or processing-time trigger
    may; a repeated one never does; the watermark's does only with allowed lateness and no
    late trigger; composites as their parts (any of AfterAny's, all of AfterAll's and
    AfterEach's). A trigger of pomset's own is not judged."""
    if isinstance(trigger, Repeatedly):
        return False
    if isinstance(trigger, AfterWatermark):
        return allowed_lateness_us > 0 and trigger.late is None
    if isinstance(trigger, (AfterCount, AfterProcessingTime)):
        return True
    parts = [may_finish(t, allowed_lateness_us) for t in trigger.children]
    if isinstance(trigger, (AfterAll, AfterEach)):
        return all(parts)
    if isinstance(trigger, (AfterAny, OrFinally)):
        return any(parts)
    return False


def check_safe(strategy: WindowingStrategy, label: str) -> None:
    """Raise Beam's ValueError for a trigger that may lose data (`may_finish`)."""
    trigger = strategy.trigger
    if may_finish(trigger, strategy.allowed_lateness_us):
        raise ValueError(f"{label}: Unsafe trigger: `{trigger!r}` may lose data. Reason: "
                         f"MAY_FINISH (once it finishes, what its window still gets is "
                         f"dropped). This can be overriden with the --allow_unsafe_triggers "
                         f"flag (pomset's default without allow_unsafe_triggers=False).")
