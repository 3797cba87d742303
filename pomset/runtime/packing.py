"""Bundles of elements as plain lists, for whatever crosses to another process (the local
runner's worker processes): pickled several times faster than the elements themselves, and a
window or pane many elements share pickled once."""
from __future__ import annotations

from typing import Any

from ..windowing import WindowedValue


class Shared:
    """Elements that share their window, pane and diff: their values and timestamps."""

    __slots__ = ("values", "stamps", "window", "pane", "diff")

    def __init__(self, values: list, stamps: list, window: Any, pane: Any, diff: int) -> None:
        self.values, self.stamps = values, stamps
        self.window, self.pane, self.diff = window, pane, diff

    def __reduce__(self) -> tuple:
        return Shared, (self.values, self.stamps, self.window, self.pane, self.diff)


class Spread:
    """Elements with windows, panes or diffs of their own: five lists."""

    __slots__ = ("columns",)

    def __init__(self, columns: tuple) -> None:
        self.columns = columns

    def __reduce__(self) -> tuple:
        return Spread, (self.columns,)


def pack(bundle: Any) -> Any:
    """A list of elements as `Shared` or `Spread`; anything else (columns, an empty list) as
    it is."""
    if type(bundle) is not list or not bundle:
        return bundle
    first = bundle[0]
    window, pane, diff = first.window, first.pane, first.diff
    for wv in bundle:
        if wv.window is not window or wv.pane is not pane or wv.diff != diff:
            return Spread(([wv.value for wv in bundle], [wv.ts for wv in bundle],
                           [wv.window for wv in bundle], [wv.pane for wv in bundle],
                           [wv.diff for wv in bundle]))
    return Shared([wv.value for wv in bundle], [wv.ts for wv in bundle], window, pane, diff)


def unpack(bundle: Any) -> Any:
    """What `pack` took."""
    raw = WindowedValue.raw
    kind = type(bundle)
    if kind is Shared:
        window, pane, diff = bundle.window, bundle.pane, bundle.diff
        return [raw(v, t, window, pane, diff) for v, t in zip(bundle.values, bundle.stamps)]
    if kind is Spread:
        return [raw(v, t, w, p, d) for v, t, w, p, d in zip(*bundle.columns)]
    return bundle
