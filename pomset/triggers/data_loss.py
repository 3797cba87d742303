"""DataLossReason: whether a trigger may be why a window's elements are dropped (Beam's
`Trigger.may_lose_data`)."""
from __future__ import annotations

import enum


class DataLossReason(enum.Flag):
    """Why a trigger may lose data, as flags: NO_POTENTIAL_LOSS (it never finishes before its
    window expires, so every element reaches a pane), MAY_FINISH (once it has finished, the
    window's later elements are dropped: counted and warned of); CONDITION_NOT_GUARANTEED is
    Beam's deprecated flag, never answered (a window's pending elements are emitted when it
    expires)."""

    NO_POTENTIAL_LOSS = 0
    MAY_FINISH = enum.auto()
    CONDITION_NOT_GUARANTEED = enum.auto()


def may_finish(reason: DataLossReason) -> bool:
    """Whether `reason` includes MAY_FINISH."""
    return bool(reason & DataLossReason.MAY_FINISH)


def loss_if(finishes: bool) -> DataLossReason:
    """MAY_FINISH when `finishes`, else NO_POTENTIAL_LOSS."""
    return DataLossReason.MAY_FINISH if finishes else DataLossReason.NO_POTENTIAL_LOSS
