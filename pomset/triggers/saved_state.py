"""A key's state as bytes, a window's record pickled on its own, for a host that keeps states
between steps as bytes (Spark's state store): a restored key unpickles only the records the
kernel reads, and saving it pickles again only those, so a step's work on a key follows the
windows it touches, not every window the key keeps (a long allowed lateness keeps many)."""
from __future__ import annotations

import pickle
from typing import Any, Dict, List, Optional

from ..windowing import IntervalWindow
from .kernel import KeyState, WindowRec

_DUMPS = pickle.dumps
_LOADS = pickle.loads
_interval = IntervalWindow.from_micros
_LAST_OUT = WindowRec.__slots__.index("last_out")   # where `__getstate__` puts it


class SavedKeyState(KeyState):
    """A `KeyState` restored by `state_from_bytes`: a window not read since holds its record's
    bytes (and its watermark hold, if any, in `saved_holds`), unpickled on first access; its
    holds are answered from `saved_holds` without unpickling."""

    __slots__ = ("saved_holds",)

    def __init__(self) -> None:
        super().__init__()
        self.saved_holds: Dict[Any, int] = {}

    def _load(self, window: Any, data: bytes) -> Any:
        rec = _record(window, data)
        dict.__setitem__(self, window, rec)
        return rec

    def get(self, window: Any, default: Any = None) -> Any:
        rec = dict.get(self, window, default)
        return self._load(window, rec) if type(rec) is bytes else rec

    def __getitem__(self, window: Any) -> Any:
        rec = dict.__getitem__(self, window)
        return self._load(window, rec) if type(rec) is bytes else rec

    def pop(self, window: Any, *default: Any) -> Any:
        rec = dict.pop(self, window, *default)
        return _record(window, rec) if type(rec) is bytes else rec

    def values(self) -> Any:
        self._load_all()
        return dict.values(self)

    def items(self) -> Any:
        self._load_all()
        return dict.items(self)

    def hold_of(self, window: Any) -> Optional[int]:
        rec = dict.get(self, window)
        if type(rec) is bytes:
            return self.saved_holds.get(window)
        return None if rec is None else rec.hold

    def min_hold(self, bound: int) -> int:
        saved = self.saved_holds
        for window, rec in dict.items(self):
            hold = saved.get(window) if type(rec) is bytes else rec.hold
            if hold is not None and hold < bound:
                bound = hold
        return bound

    def _load_all(self) -> None:
        for window, rec in list(dict.items(self)):
            if type(rec) is bytes:
                self._load(window, rec)


def _record_bytes(rec: WindowRec) -> bytes:
    """A window's record pickled without its window, which the key's state saves once, in
    its own record and in what its last pane emitted (retracting mode) alike."""
    state = rec.__getstate__()
    window, last_out = state[0], state[_LAST_OUT]
    if last_out:
        state = (*state[:_LAST_OUT], [(kv, ts, None if w == window else w, diff)
                                      for kv, ts, w, diff in last_out], *state[_LAST_OUT + 1:])
    return _DUMPS(state[1:], protocol=5)


def _record(window: Any, data: bytes) -> WindowRec:
    """A window's record from `_record_bytes`."""
    state = (window, *_LOADS(data))
    last_out = state[_LAST_OUT]
    if last_out:
        state = (*state[:_LAST_OUT], [(kv, ts, window if w is None else w, diff)
                                      for kv, ts, w, diff in last_out], *state[_LAST_OUT + 1:])
    rec = WindowRec.__new__(WindowRec)
    rec.__setstate__(state)
    return rec


def state_to_bytes(ks: KeyState) -> bytes:
    """The key's state saved: its windows (interval windows as their bounds), their records
    each pickled on its own (a record never read since it was restored is kept as its
    bytes), the windows' holds, the merge order and the output watermark."""
    saved = ks.saved_holds if type(ks) is SavedKeyState else {}
    windows: List[Any] = []
    recs: List[bytes] = []
    holds: Dict[int, int] = {}
    for i, (window, rec) in enumerate(dict.items(ks)):
        windows.append(window)
        if type(rec) is bytes:
            recs.append(rec)
            hold = saved.get(window)
        else:
            recs.append(_record_bytes(rec))
            hold = rec.hold
        if hold is not None:
            holds[i] = hold
    if ks.order:
        at = {window: i for i, window in enumerate(windows)}
        order = [at[window] for window in ks.order]
    else:
        order = []
    if all(type(window) is IntervalWindow for window in windows):
        windows = [x for window in windows for x in (window.start_us, window.max_ts + 1)]
        bounds = True
    else:
        bounds = False
    return _DUMPS((bounds, windows, recs, holds, order, ks.out_wm, ks.step), protocol=5)


def state_from_bytes(data: bytes) -> KeyState:
    """A key's state as `state_to_bytes` saved it, its records left as bytes until read (a
    `KeyState` pickled whole, as checkpoints before this form hold, comes back as it was)."""
    saved = _LOADS(data)
    if isinstance(saved, KeyState):
        return saved
    bounds, windows, recs, holds, order, out_wm, step = saved
    if bounds:
        windows = [_interval(windows[i], windows[i + 1]) for i in range(0, len(windows), 2)]
    ks = SavedKeyState()
    dict.update(ks, zip(windows, recs))
    ks.saved_holds = {windows[i]: hold for i, hold in holds.items()}
    ks.order = [windows[i] for i in order]
    ks.out_wm = out_wm
    ks.step = step
    return ks
