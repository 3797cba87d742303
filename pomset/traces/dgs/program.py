"""DGS programs (Kallas et al., Stream Processing with Dependency-Guided Synchronization,
Def. 2.1): a sequential program (`init` and `update`) over tagged events, the dependence
relation of its input's trace type, and fork/join pairs that split a state for independent
sets of tags and merge it back.

A program is written like the templates: as constructor arguments or by subclassing `DGS`
and overriding the methods of the same name. `update(state, tag, value, emit)` is the paper's
`update` and `out` in one: it returns the new state (it may change the state in place) and
calls `emit(output)` for each output of the event. Applied with `|` to an edge typed with a
general `pm.TraceType`, it adds one `DGSStep`, which runners deploy on a synchronization plan
(`plans`); the output equals the sequential program's on the input sorted by timestamp."""
from __future__ import annotations

from typing import (Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple)

from ...sdk.errors import PipelineConstructionError
from ...sdk.kinds import UNKNOWN
from ...sdk.ptransform import Primitive, PTransform
from ...sdk import plan_kinds
from ..edges import EdgeTrace, refuse_retractions, trace_of
from ..types import KeyValueType, TraceType

#: the state type of a program that declares none (the paper's State_0, for every tag)
STATE = "state"


class StateType:
    """A state type of a program (Def. 2.1 (4)-(5)): its name, the tags a state of this type
    may process (None: every tag) and, if it differs from the program's, its `update`."""

    def __init__(self, name: str, tags: Optional[Iterable[Any]] = None,
                 update: Optional[Callable[..., Any]] = None) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a state type's name is a non-empty str, got {name!r}")
        if update is not None and not callable(update):
            raise TypeError(f"StateType {name!r}: update must be callable, got {update!r}")
        self.name = name
        self.tags: Optional[FrozenSet[Any]] = None if tags is None else frozenset(tags)
        self.update = update

    def handles(self, tag: Any) -> bool:
        return self.tags is None or tag in self.tags

    def __repr__(self) -> str:
        tags = "every tag" if self.tags is None else sorted(map(repr, self.tags))
        return f"StateType({self.name!r}, {tags})"


class Fork:
    """A fork/join pair (Def. 2.1 (7)): `fork(state, left_tags, right_tags) -> (left, right)`
    splits a state of type `parent` into states of types `left` and `right`, each to be
    updated only with events of its tag set (the tags are independent across the two);
    `join(left, right) -> state` merges them back."""

    def __init__(self, fork: Callable[..., Tuple[Any, Any]], join: Callable[[Any, Any], Any],
                 parent: str = STATE, left: str = STATE, right: str = STATE) -> None:
        for name, fn in (("fork", fork), ("join", join)):
            if not callable(fn):
                raise TypeError(f"Fork: {name} must be callable, got {fn!r}")
        self.fork = fork
        self.join = join
        self.parent = parent
        self.left = left
        self.right = right

    @property
    def types(self) -> Tuple[str, str, str]:
        return (self.parent, self.left, self.right)

    def __repr__(self) -> str:
        return f"Fork({self.parent} -> {self.left}, {self.right})"


class DGS(PTransform):
    """A DGS program as a transform: `events | pm.DGS(init=..., update=..., fork=...,
    join=...)` on an edge typed `pm.TraceType({tag: type, ...}, depends=[...])`, whose items
    are `(tag, value)` pairs. Outputs are the emitted values, each at its event's timestamp.

    `states` and `forks` declare several state types and the fork/join pairs between them;
    by default there is one state type for every tag and `fork`/`join` convert it to itself.
    `plan` fixes the synchronization plan (a `SyncPlan`); otherwise the runner asks the
    optimizer for one with a leaf per worker, from `rates` (events per second of each tag) or,
    without them, the tags' counts in the first input it sees. `trace` declares the input's
    trace type, so the program can be checked (`check_consistency`) before it is applied."""

    def __init__(self, *, init: Optional[Callable[[], Any]] = None,
                 update: Optional[Callable[..., Any]] = None,
                 fork: Optional[Callable[..., Tuple[Any, Any]]] = None,
                 join: Optional[Callable[[Any, Any], Any]] = None,
                 states: Optional[Sequence[StateType]] = None,
                 forks: Optional[Sequence[Fork]] = None,
                 trace: Optional[TraceType] = None,
                 plan: Any = None, rates: Optional[Dict[Any, float]] = None,
                 label: Optional[str] = None) -> None:
        super().__init__(label)
        for name, fn in (("init", init), ("update", update), ("fork", fork), ("join", join)):
            if fn is not None:
                if not callable(fn):
                    raise TypeError(f"{type(self).__name__}: {name} must be callable, got {fn!r}")
                setattr(self, name, fn)
        for name in ("init", "update"):
            if not _given(self, name):
                raise TypeError(f"{type(self).__name__} needs {name} (pass it or override it in "
                                f"a subclass)")
        if trace is not None:
            self.trace = trace
        if getattr(self, "trace", None) is not None and (
                not isinstance(self.trace, TraceType) or isinstance(self.trace, KeyValueType)):
            raise TypeError(f"{type(self).__name__}: trace must be a general "
                            f"pm.TraceType({{tag: type}}, depends=[...]), got {self.trace!r}")
        self.state_types = self._state_types(states)
        self.fork_joins = self._forks(forks)
        if plan is not None:
            from .plans import SyncPlan
            if not isinstance(plan, SyncPlan):
                raise TypeError(f"{type(self).__name__}: plan must be a SyncPlan, got {plan!r}")
        self.plan = plan
        self.rates = None if rates is None else dict(rates)

    trace: Optional[TraceType] = None

    def init(self) -> Any:
        raise NotImplementedError

    def update(self, state: Any, tag: Any, value: Any, emit: Callable[[Any], None]) -> Any:
        raise NotImplementedError

    def fork(self, state: Any, left: FrozenSet[Any], right: FrozenSet[Any]) -> Tuple[Any, Any]:
        raise NotImplementedError

    def join(self, left: Any, right: Any) -> Any:
        raise NotImplementedError

    def _state_types(self, states: Optional[Sequence[StateType]]) -> Dict[str, StateType]:
        if states is None:
            return {STATE: StateType(STATE)}
        states = list(states)
        if not states or not all(isinstance(s, StateType) for s in states):
            raise TypeError(f"{type(self).__name__}: states is a list of pm.dgs.StateType, the "
                            f"first the initial state's type, got {states!r}")
        if states[0].tags is not None:
            raise ValueError(f"{type(self).__name__}: the initial state type "
                             f"{states[0].name!r} must handle every tag (Def. 2.1: pred_0 is "
                             f"true); give it tags=None")
        names = [s.name for s in states]
        if len(set(names)) != len(names):
            raise ValueError(f"{type(self).__name__}: state type names repeat: {names}")
        return {s.name: s for s in states}

    def _forks(self, forks: Optional[Sequence[Fork]]) -> List[Fork]:
        if forks is None:
            if not (_given(self, "fork") and _given(self, "join")):
                return []
            if len(self.state_types) != 1:
                raise TypeError(f"{type(self).__name__} declares several state types: give "
                                f"forks=[pm.dgs.Fork(fork, join, parent, left, right), ...]")
            only = next(iter(self.state_types))
            return [Fork(self.fork, self.join, only, only, only)]
        forks = list(forks)
        for f in forks:
            if not isinstance(f, Fork):
                raise TypeError(f"{type(self).__name__}: forks is a list of pm.dgs.Fork, got {f!r}")
            for name in f.types:
                if name not in self.state_types:
                    raise ValueError(f"{type(self).__name__}: {f!r} names state type {name!r}, "
                                     f"which is not among {sorted(self.state_types)}")
        return forks

    # --- what checkers, plans and runtimes ask of a program ---

    @property
    def initial_type(self) -> str:
        return next(iter(self.state_types))

    def update_of(self, state_type: str) -> Callable[..., Any]:
        """The update function of a state type."""
        return self.state_types[state_type].update or self.update

    def fork_join(self, parent: str, left: str, right: str) -> Optional[Fork]:
        """The fork/join pair between these state types, if the program has one."""
        for f in self.fork_joins:
            if f.types == (parent, left, right):
                return f
        return None

    def trace_type(self, got: Optional[TraceType] = None) -> TraceType:
        """The program's input trace type: declared, or the edge's (`got`)."""
        t = self.trace if self.trace is not None else got
        if t is None:
            raise TypeError(f"{type(self).__name__} has no trace type: pass "
                            f"trace=pm.TraceType({{tag: type}}, depends=[...])")
        return t

    def expand(self, pcoll: Any) -> Any:
        step = pcoll.pipeline.scope_label()
        got = trace_of(pcoll)
        fix = ("declare the input's type with `| pm.Typed(pm.TraceType({tag: type, ...}, "
               "depends=[(tag, tag), ...]), period=...)`; its items are (tag, value) pairs")
        if got is None:
            raise PipelineConstructionError(
                f"DGS {step!r} needs a typed input whose trace type names the tags and their "
                f"dependence, but {pcoll.label!r} has no trace type. Fix: {fix}")
        if isinstance(got.type, KeyValueType):
            raise PipelineConstructionError(
                f"DGS {step!r} needs a general trace type (tags and a dependence relation): it "
                f"got {got.describe()}. Fix: {fix}")
        if self.trace is not None and not got.type.fits(self.trace):
            raise PipelineConstructionError(
                f"DGS {step!r} was written for {self.trace!r}, but its input is "
                f"{got.describe()}")
        if self.plan is not None:
            self.plan.validate(self, got.type)
        return pcoll.pipeline.apply_as_scope(DGSStep(self, got), pcoll)


def _given(program: DGS, name: str) -> bool:
    """Whether a program's function was passed or overridden (not DGS's placeholder)."""
    fn = getattr(program, name)
    return getattr(fn, "__func__", None) is not getattr(DGS, name)


class DGSStep(Primitive):
    """One DGS program in the graph, with its input's trace: what runners deploy."""

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.DGS

    def __init__(self, program: DGS, input_trace: EdgeTrace) -> None:
        super().__init__(program.label)
        self.program = program
        self.input_trace = input_trace

    @property
    def trace(self) -> TraceType:
        return self.input_trace.type

    def validate(self, node: Any) -> None:
        refuse_retractions(node, "DGS")
        tags = self.trace.tags
        for st in self.program.state_types.values():
            unknown = [] if st.tags is None else [t for t in st.tags if t not in tags]
            if unknown:
                raise PipelineConstructionError(
                    f"DGS {node.label!r}: state type {st.name!r} names tags "
                    f"{sorted(map(repr, unknown))} that the input's trace type "
                    f"{self.trace!r} lacks")

    def outputs(self, node: Any) -> Dict[Optional[str], Any]:
        from ...sdk.core import default_strategy
        return {None: node.inputs[0].derive(windowing=default_strategy(), kind=UNKNOWN)}
