"""CombineFn lifecycle (Beam's `CombineFn.setup` and `teardown`), the same on every runner:
each copy of a CombineFn a run uses is set up once before any other call of its methods and
torn down once after its last. Stages and tasks `acquire` the CombineFns their transform
holds when they start and `release` them when they end; a process's registry counts the
holders of each distinct object, so one shared by several holders (the threads' copies of a
stage) is set up by the first and torn down by the last."""
from __future__ import annotations

import copy
import threading
from typing import Any, Dict, List, Sequence, Tuple

from ..sdk.combinefn import CombineFn, copy_combine_fn
from ..sdk.dofn import DoFn, copy_dofn


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


def with_own_combine_fns(transform: Any) -> Any:
    """`transform`, or where it holds CombineFns a copy of it holding copies of its own: for
    a Spark task's function, which may run many times (once per group) on the objects it
    unpickled once, and sets up and tears down a CombineFn each time."""
    fn = getattr(transform, "combine_fn", None)
    dofn = getattr(transform, "fn", None)
    held = ([name for name, v in vars(dofn).items() if isinstance(v, CombineFn)]
            if isinstance(dofn, DoFn) else [])
    if not isinstance(fn, CombineFn) and not held:
        return transform
    out = copy.copy(transform)
    if isinstance(fn, CombineFn):
        out.combine_fn = copy_combine_fn(fn)
    if held:
        out.fn = copy_dofn(dofn)
        for name in held:
            setattr(out.fn, name, copy_combine_fn(getattr(dofn, name)))
    return out


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


_REGISTRY = CombineFnRegistry()


def acquire(fns: Sequence[CombineFn]) -> None:
    """Hold `fns` in this process's registry, setting up each one not yet held (a module
    function, so that a Spark task's function refers to its own process's registry)."""
    _REGISTRY.acquire(fns)


def release(fns: Sequence[CombineFn]) -> None:
    """Let go of `fns` in this process's registry, tearing down each one no longer held."""
    _REGISTRY.release(fns)
