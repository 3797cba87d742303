"""Synchronization plans (Def. 3.1-3.2): a tree of workers, each responsible for a set of
implementation tags, with a state type and, where it has children, the fork/join pair between
its type and theirs. Leaves process their events without waiting; a parent processes one of
its events only after joining its children's states, and forks the new state back down.

An implementation tag is `(tag, lane)`: the events of a tag independent of itself may be
dealt to several lanes (the paper's input streams of one tag), each lane to one worker; a tag
that depends on itself has the one lane 0. `validate` checks V1 (types) and V2 (workers
without an ancestor relation handle disjoint, pairwise independent tags)."""
from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from .program import DGS
from ..types import TraceType

ImplTag = Tuple[Any, int]


class PlanError(ValueError):
    """A synchronization plan that is not valid for its program (V1 or V2), naming the
    workers and tags in conflict."""


class Worker:
    """A node of a plan: its name, the implementation tags `(tag, lane)` it handles, its state
    type (None: the program's initial type) and its children (none, or two)."""

    def __init__(self, name: str, tags: Iterable[ImplTag] = (), state: Optional[str] = None,
                 children: Sequence["Worker"] = ()) -> None:
        impl = []
        for it in tags:
            if not (isinstance(it, tuple) and len(it) == 2 and isinstance(it[1], int)
                    and it[1] >= 0):
                raise TypeError(f"worker {name!r}: an implementation tag is (tag, lane) with a "
                                f"lane >= 0, got {it!r}")
            impl.append(it)
        if len(children) not in (0, 2):
            raise PlanError(f"worker {name!r} has {len(children)} children; a plan is a binary "
                            f"tree (a worker has none or two)")
        self.name = name
        self.tags: Tuple[ImplTag, ...] = tuple(impl)
        self.state = state
        self.children: Tuple[Worker, ...] = tuple(children)

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def subtree(self) -> Iterator["Worker"]:
        yield self
        for c in self.children:
            yield from c.subtree()

    def subtree_tags(self) -> frozenset:
        """The tags (not lanes) of this worker and its descendants: its fork predicate."""
        return frozenset(t for w in self.subtree() for t, _ in w.tags)

    def __repr__(self) -> str:
        return f"Worker({self.name!r}, {list(self.tags)!r}, children={len(self.children)})"


class SyncPlan:
    """A synchronization plan: the tree under `root`. Workers are numbered in pre-order."""

    def __init__(self, root: Worker) -> None:
        if not isinstance(root, Worker):
            raise TypeError(f"SyncPlan takes its root Worker, got {root!r}")
        self.root = root
        self.workers: List[Worker] = list(root.subtree())
        names = [w.name for w in self.workers]
        if len(set(names)) != len(names):
            raise PlanError(f"worker names repeat: {names}")
        self.index = {id(w): i for i, w in enumerate(self.workers)}
        self.parent: List[Optional[int]] = [None] * len(self.workers)
        for i, w in enumerate(self.workers):
            for c in w.children:
                self.parent[self.index[id(c)]] = i
        self.owner: Dict[ImplTag, int] = {}
        for i, w in enumerate(self.workers):
            for it in w.tags:
                if it in self.owner:
                    raise PlanError(f"implementation tag {it!r} is handled by both "
                                    f"{self.workers[self.owner[it]].name!r} and {w.name!r}; "
                                    f"each is handled by one worker")
                self.owner[it] = i

    def children(self, i: int) -> List[int]:
        return [self.index[id(c)] for c in self.workers[i].children]

    def ancestors(self, i: int) -> List[int]:
        out, p = [], self.parent[i]
        while p is not None:
            out.append(p)
            p = self.parent[p]
        return out

    def lanes(self, tag: Any) -> int:
        """How many lanes the plan deals a tag's events to."""
        return 1 + max((lane for t, lane in self.owner if t == tag), default=0)

    @property
    def leaves(self) -> List[int]:
        return [i for i, w in enumerate(self.workers) if w.is_leaf]

    def state_type(self, program: DGS, i: int) -> str:
        return self.workers[i].state or program.initial_type

    def validate(self, program: DGS, trace: Optional[TraceType] = None) -> None:
        """Raise PlanError unless the plan is valid for the program (V1 and V2) and covers
        every tag of its trace type."""
        t = program.trace_type(trace)
        for it in self.owner:
            if it[0] not in t.tags:
                raise PlanError(f"worker {self.workers[self.owner[it]].name!r} handles tag "
                                f"{it[0]!r}, which is not in the alphabet {sorted(map(repr, t.tags))}")
            if it[1] > 0 and t.depends(it[0], it[0]):
                raise PlanError(f"tag {it[0]!r} depends on itself, so its events keep one lane; "
                                f"worker {self.workers[self.owner[it]].name!r} has lane {it[1]}")
        for tag in t.tags:
            missing = [lane for lane in range(self.lanes(tag)) if (tag, lane) not in self.owner]
            if missing:
                raise PlanError(f"no worker handles tag {tag!r} (lanes {missing})")
        self._v1(program)
        self._v2(t)

    def _v1(self, program: DGS) -> None:
        """V1: each worker's state type handles its tags; a worker with children has the
        fork/join pair between its type and theirs."""
        for i, w in enumerate(self.workers):
            st_name = self.state_type(program, i)
            st = program.state_types.get(st_name)
            if st is None:
                raise PlanError(f"V1: worker {w.name!r} has state type {st_name!r}, which the "
                                f"program lacks (it has {sorted(program.state_types)})")
            bad = sorted({repr(tag) for tag, _ in w.tags if not st.handles(tag)})
            if bad:
                raise PlanError(f"V1: worker {w.name!r} handles tags {bad}, which its state type "
                                f"{st_name!r} cannot process")
            if w.children:
                kids = [self.state_type(program, c) for c in self.children(i)]
                if program.fork_join(st_name, *kids) is None:
                    raise PlanError(f"V1: worker {w.name!r} ({st_name}) has children of types "
                                    f"{kids}, but the program has no fork/join between "
                                    f"{st_name} and ({', '.join(kids)})")
        if self.parent[0] is None and self.state_type(program, 0) != program.initial_type:
            raise PlanError(f"V1: the root {self.workers[0].name!r} must have the initial state "
                            f"type {program.initial_type!r}")

    def _v2(self, t: TraceType) -> None:
        """V2: workers with no ancestor relation handle disjoint, pairwise independent tags."""
        n = len(self.workers)
        related = [set(self.ancestors(i)) | {i} for i in range(n)]
        for i in range(n):
            for j in range(i + 1, n):
                if j in related[i] or i in related[j]:
                    continue
                for a, la in self.workers[i].tags:
                    for b, lb in self.workers[j].tags:
                        if t.depends(a, b):
                            raise PlanError(
                                f"V2: workers {self.workers[i].name!r} and "
                                f"{self.workers[j].name!r} are not ancestor and descendant, "
                                f"but handle dependent tags {a!r} (lane {la}) and {b!r} "
                                f"(lane {lb}); one must be the other's ancestor or the tags "
                                f"independent")

    def describe(self) -> str:
        """The tree as indented text: each worker, its tags (with lanes) and state type."""
        lines: List[str] = []

        def walk(w: Worker, depth: int) -> None:
            tags = ", ".join(_impl_repr(it) for it in w.tags) or "-"
            kind = "leaf" if w.is_leaf else "joins its children"
            state = f" [{w.state}]" if w.state else ""
            lines.append(f"{'  ' * depth}{w.name}{state}: {tags} ({kind})")
            for c in w.children:
                walk(c, depth + 1)
        walk(self.root, 0)
        return "\n".join(lines)

    def to_dot(self) -> str:
        """The plan in Graphviz's dot language, for drawing."""
        out = ["digraph plan {", "  node [shape=box];"]
        for i, w in enumerate(self.workers):
            tags = "\\n".join(_impl_repr(it) for it in w.tags) or "-"
            label = f"{w.name}\\n{tags}".replace('"', '\\"')
            out.append(f'  w{i} [label="{label}"];')
        for i, p in enumerate(self.parent):
            if p is not None:
                out.append(f"  w{p} -> w{i};")
        out.append("}")
        return "\n".join(out)

    def __repr__(self) -> str:
        return f"SyncPlan(\n{self.describe()}\n)"


def _impl_repr(it: ImplTag) -> str:
    tag, lane = it
    return f"{tag!r}" if lane == 0 else f"{tag!r}#{lane}"

