"""O+, the generalized windowed operator of STRETCH (Gulisano et al., §4.2): windows that
advance by `advance` and span `size` seconds of event time, kept per key, where a multi-key
function gives each input tuple any number of keys (so one tuple may update several keys'
windows: wordcount, paircount) and several inputs share each window (a join).

Per key, window instances start at multiples of `advance`; `window="multi"` keeps every
instance a tuple falls in (sliding windows: a tuple updates `size / advance` of them),
`"single"` keeps one per key that slides forward by `advance` (a tuple updates the earliest
one it falls in). The functions (the paper's Table I):

- `keys(value)`: the keys of an input tuple (an iterable, possibly empty); a list of functions,
  one per input, when the inputs differ;
- `initial()`: a fresh state for one input of a new window instance (default: a list);
- `update(w, value, emit)`: a tuple falls in window `w` (default: append (w.ts, value) to its
  state); `w.key`, `w.start`, `w.end`, `w.ts` (the tuple's timestamp), `w.input` (which
  input it came from) and `w.state` (the input's state; `w.states`, all inputs', when there
  are several) are there to read and set;
- `output(w, emit)`: `w` expired (the watermark passed its end);
- `slide(w)`: (`"single"` only) `w` moved forward by `advance`: drop what fell out of it
  (default: the (ts, value) pairs before `w.start`); a window left with only empty states ends.

`emit(value)` sends an output at the window's last instant (`w.end` minus one microsecond),
so outputs come in timestamp order per instance (the paper's Lemma 2) and a downstream step
sees them as on time. Outputs of one timestamp are ordered by key hash, then per window in
emission order: the same whatever the parallelism or its changes.

Runners deploy it by VSN parallelism on the local runner (`parallelism` instances sharing one
state, changed while running with `set_parallelism` or `--elastic`, up to `max_parallelism`
without moving state) and shared-nothing on Spark (each tuple duplicated to its keys, then
grouped by key: the paper's Corollary 1).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ..sdk.errors import PipelineConstructionError
from ..sdk.kinds import UNKNOWN
from ..sdk.ptransform import Primitive
from ..sdk import plan_kinds
from ..windowing.time import duration_micros
from .edges import refuse_retractions

WINDOW_TYPES = ("multi", "single")


def _no_output(w: Any, emit: Callable[[Any], None]) -> None:
    return None


def default_initial() -> list:
    return []


def default_update(w: Any, value: Any, emit: Callable[[Any], None]) -> None:
    """Table I's default: keep the tuple in its input's state."""
    w.state.append((w.ts, value))


def default_slide(w: Any) -> None:
    """Table I's default: drop the kept tuples that fell out of the window."""
    start = w.start
    for i, state in enumerate(w.states):
        w.states[i] = [(ts, v) for ts, v in state if ts >= start]


class OPlus(Primitive):
    """`pcoll | pm.OPlus(advance=, size=, keys=, update=, output=, ...)`, or
    `(left, right) | pm.OPlus(...)` for an operator with two inputs. See the module's text."""

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.OPLUS

    #: its instance count may change while it runs (`RunningPipeline.set_parallelism`)
    elastic = True

    def __init__(self, *, advance: float, size: float,
                 keys: Union[Callable[[Any], Any], Sequence[Callable[[Any], Any]]],
                 update: Callable[..., None] = default_update,
                 output: Callable[..., None] = _no_output,
                 slide: Callable[[Any], None] = default_slide,
                 initial: Callable[[], Any] = default_initial,
                 window: str = "multi", parallelism: int = 1,
                 max_parallelism: Optional[int] = None, label: Optional[str] = None) -> None:
        super().__init__(label)
        self.advance = duration_micros(advance)
        self.size = duration_micros(size)
        if self.advance <= 0 or self.size <= 0:
            raise ValueError(f"OPlus needs a positive advance and size, got advance={advance!r} "
                             f"and size={size!r}")
        if window not in WINDOW_TYPES:
            raise ValueError(f"OPlus window= is 'multi' or 'single', got {window!r}")
        for name, fn in (("update", update), ("output", output), ("slide", slide),
                         ("initial", initial)):
            if not callable(fn):
                raise TypeError(f"OPlus {name}= must be callable, got {fn!r}")
        self.keys: List[Callable[[Any], Any]] = (
            list(keys) if isinstance(keys, (list, tuple)) else [keys])
        if not self.keys or not all(callable(k) for k in self.keys):
            raise TypeError(f"OPlus keys= is a function of the value (or one per input), "
                            f"got {keys!r}")
        if not isinstance(parallelism, int) or parallelism < 1:
            raise ValueError(f"parallelism must be an int >= 1, got {parallelism!r}")
        if max_parallelism is not None and (not isinstance(max_parallelism, int)
                                            or max_parallelism < parallelism):
            raise ValueError(f"max_parallelism must be an int >= parallelism ({parallelism}), "
                             f"got {max_parallelism!r}")
        self.update, self.output, self.slide, self.initial = update, output, slide, initial
        self.window = window
        self.parallelism = parallelism
        self.max_parallelism = max_parallelism

    def default_label(self) -> str:
        return "OPlus"

    def validate(self, node: Any) -> None:
        n = len(node.inputs)
        if len(self.keys) not in (1, n):
            raise PipelineConstructionError(
                f"OPlus {node.label!r} has {n} inputs and {len(self.keys)} key functions: give "
                f"one for all inputs or one per input")
        refuse_retractions(node, "OPlus")

    def outputs(self, node: Any) -> Dict[Optional[str], Any]:
        from ..sdk.core import default_strategy
        return {None: node.inputs[0].derive(windowing=default_strategy(), kind=UNKNOWN)}

    @property
    def most_instances(self) -> int:
        """The most instances it may run as: `max_parallelism`, else `parallelism`."""
        return self.max_parallelism or self.parallelism

    def key_function(self, index: int) -> Callable[[Any], Any]:
        """The multi-key function of input `index`."""
        return self.keys[index] if len(self.keys) > 1 else self.keys[0]
