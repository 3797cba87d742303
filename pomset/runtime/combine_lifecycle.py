"""CombineFn lifecycle (Beam's `CombineFn.setup` and `teardown`), the same on every runner:
each copy of a CombineFn a run uses is set up once before any other call of its methods and
torn down once after its last. Stages and tasks `acquire` the CombineFns their transform
holds when they start and `release` them when they end; a process's registry counts the
holders of each distinct object, so one shared by several holders (the threads' copies of a
stage) is set up by the first and torn down by the last."""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Sequence, Tuple

from ..sdk.combinefn import CombineFn
from ..sdk.dofn import DoFn


def combine_fns_of(transform: Any) -> List[CombineFn]:
    """The CombineFns a plan node's transform calls: a grouping's combine (lifted or not,
    columnar or not), and those a DoFn holds as attributes (CombineValues' and a combine's
    with extra arguments)."""
    found: List[CombineFn] = []
    fn = getattr(transform, "combine_fn", None)
    if isinstance(fn, CombineFn):
        found.append(fn)
    dofn = getattr(transform, "fn", None)
    if isinstance(dofn, DoFn):
        found.extend(v for v in vars(dofn).values() if isinstance(v, CombineFn))
    return found


class CombineFnRegistry:
    """The CombineFns set up in this process, with how many holders each has."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: Dict[int, Tuple[CombineFn, int]] = {}

    def acquire(self, fns: Sequence[CombineFn]) -> None:
        """Hold `fns`, setting up each one not yet held."""
        with self._lock:
            for fn in fns:
                held = self._held.get(id(fn))
                if held is None:
                    fn.setup()
                    self._held[id(fn)] = (fn, 1)
                else:
                    self._held[id(fn)] = (fn, held[1] + 1)

    def release(self, fns: Sequence[CombineFn]) -> None:
        """Let go of `fns`, tearing down each one no other holder holds."""
        with self._lock:
            for fn in fns:
                held = self._held.get(id(fn))
                if held is None:
                    continue
                if held[1] > 1:
                    self._held[id(fn)] = (fn, held[1] - 1)
                else:
                    del self._held[id(fn)]
                    fn.teardown()


#: this process's registry
COMBINE_FNS = CombineFnRegistry()
