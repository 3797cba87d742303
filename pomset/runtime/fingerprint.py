"""What makes a checkpoint's state meaningful, recorded when a run first starts and checked on
every restart, on every runner: a pipeline changed where its state lives is refused, with the
step and what changed, instead of resuming the old state under the new meaning.

A pipeline's fingerprint describes, by value, each stateful step (a grouping, a template, a
ParDo with side inputs, a stateful DoFn, a source): its kind, its windowing strategy, its
combiner, its template, a stateful DoFn's state cells and timers, its sources' topics, and
which stateful steps and sources it reads (through any stateless steps between).

What may change across a restart: stateless steps (Map, FlatMap, Filter, a DoFn without side
inputs, WindowInto only as far as the groupings after it see it, sinks) may change what they
do, be added (they start afresh) or be removed. User functions (including a CallableCombineFn's
function and a key function) are compared by qualified name only: changing a function's code
under the same name is allowed and the author's responsibility, as are changes to what the
elements hold."""
from __future__ import annotations

import enum
import types
from typing import Any, Dict, List, Optional

from ..sdk.core import GroupByKey, ParDo, Source
from ..sdk.errors import CheckpointError
from ..sdk.io.kafka import ReadFromKafka
from ..sdk.relational import KeyFields
from ..sdk.userstate import get_dofn_specs
from ..sdk.run_state import run_state, update_run_state
from ..traces import DGSStep, TemplateStep
from ..triggers import Trigger
from ..windowing import WindowFn

#: bumped when what a fingerprint holds changes meaning (a recorded one of another version is
#: not compared field by field)
VERSION = 1
_DEPTH = 4   # how deep a user value's fields are described


def fingerprint(nodes: List[Any]) -> Dict[str, Any]:
    """The pipeline's fingerprint (JSON-able): its stateful steps by label."""
    reads: Dict[int, List[str]] = {}
    steps = {n.label: dict(_fields(n), reads=_reads(n, reads)) for n in nodes if _stateful(n)}
    return {"version": VERSION, "steps": steps}


def _stateful(node: Any) -> bool:
    t = node.transform
    return (isinstance(t, (GroupByKey, TemplateStep, DGSStep, Source))
            or (isinstance(t, ParDo) and (bool(node.side_inputs) or t.stateful)))


def _reads(node: Any, memo: Dict[int, List[str]]) -> List[str]:
    """The stateful steps' and sources' outputs whose elements reach `node` through stateless
    steps only (main and side inputs): the graph's shape as the state sees it."""
    out: set = set()
    for pc in node.reads():
        producer = pc.producer
        if _stateful(producer):
            out.add(pc.label)
        else:
            if id(producer) not in memo:
                memo[id(producer)] = _reads(producer, memo)
            out.update(memo[id(producer)])
    return sorted(out)


def _fields(node: Any) -> Dict[str, Any]:
    """What a stateful step's state means, by field."""
    t = node.transform
    fields: Dict[str, Any] = {"kind": type(t).__name__}
    if isinstance(t, GroupByKey):
        fields.update(_windowing(node.inputs[0].windowing))
        fields["combiner"] = describe(t.combine_fn)
        # saved wake-ups name each due window (`KernelHost.save_queues`), not only its key,
        # pickled a slot of time at a time
        fields["wake-ups"] = "by key and window, in 60 s slots"
        keying = node.inputs[0].producer.transform
        if isinstance(keying, KeyFields) and keying.aggregations:
            # a GroupBy keys by its key fields' values: a checkpoint keyed by Rows is refused
            fields["keys"] = "values of " + ", ".join(keying.keys)
    elif isinstance(t, TemplateStep):
        fields.update(template=describe(t.template), input=repr(t.input_trace.type),
                      period=t.period, parallelism=t.parallelism, sort=describe(t.sort))
    elif isinstance(t, DGSStep):
        program = t.program
        fields.update(program=describe(program), input=repr(t.trace),
                      states=[repr(s) for s in program.state_types.values()],
                      forks=[repr(f) for f in program.fork_joins])
    elif isinstance(t, ParDo):
        fields["windowing"] = describe(node.inputs[0].windowing.window_fn)
        fields["side inputs"] = [f"{type(s).__name__}({s.pcoll.label}) in "
                                 f"{describe(s.pcoll.windowing.window_fn)}"
                                 for s in node.side_inputs]
        if t.stateful:
            states, timers = get_dofn_specs(t.fn)
            fields["allowed lateness"] = f"{node.inputs[0].windowing.allowed_lateness_us / 1e6:g}s"
            fields["state"] = sorted(f"{s!r}" + (f" of {describe(s.combine_fn)}"
                                                 if hasattr(s, "combine_fn") else "")
                                     for s in states)
            fields["timers"] = sorted(f"{s!r} in {s.time_domain}" for s in timers)
    elif isinstance(t, ReadFromKafka):
        fields["topics"] = sorted(t.topics)
    return fields


def _windowing(strategy: Any) -> Dict[str, str]:
    return {"windowing": describe(strategy.window_fn), "trigger": describe(strategy.trigger),
            "accumulation mode": strategy.accumulation_mode.name,
            "allowed lateness": f"{strategy.allowed_lateness_us / 1e6:g}s",
            "timestamp combiner": strategy.timestamp_combiner.name}


def describe(value: Any, depth: int = _DEPTH) -> Optional[str]:
    """A value as text, the same in every process that builds it alike: pomset's windowing
    functions and triggers by their reprs (which name every parameter), functions and classes
    by qualified name, other objects as their class and fields."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value) if value is not None else None
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        return _qualified(value)
    if _faithful(value):
        return repr(value)
    if depth == 0:
        return _qualified(type(value))
    if isinstance(value, (list, tuple)):
        return f"[{', '.join(str(describe(v, depth - 1)) for v in value)}]"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(str(describe(v, depth - 1)) for v in value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(sorted(f"{describe(k, depth - 1)}: {describe(v, depth - 1)}"
                                      for k, v in value.items())) + "}"
    fields = sorted(getattr(value, "__dict__", {}).items())
    name = _qualified(type(value))
    return f"{name}({', '.join(f'{k}={describe(v, depth - 1)}' for k, v in fields)})"


def _qualified(f: Any) -> str:
    """A function's or class's name, with its module unless it is pomset's."""
    module = getattr(f, "__module__", None) or ""
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", repr(f))
    return name if module.split(".")[0] in ("pomset", "builtins") else f"{module}.{name}"


def _faithful(value: Any) -> bool:
    """Whether `value`'s repr names all it is: a built-in WindowFn, or a trigger made of
    built-in triggers only (a custom one's repr need not name its parameters)."""
    if isinstance(value, WindowFn):
        return type(value).__module__.startswith("pomset.")
    if isinstance(value, Trigger):
        return (type(value).__module__.startswith("pomset.")
                and all(_faithful(c) for c in value.children))
    return False


def check_compatible(recorded: Dict[str, Any], current: Dict[str, Any], directory: str) -> None:
    """Raise `CheckpointError` naming each step whose state the recorded pipeline's checkpoint
    cannot give the current one, and what changed (old → new)."""
    problems: List[str] = []
    if recorded.get("version") != current["version"]:
        problems.append(f"its fingerprint is of another version of pomset "
                        f"({recorded.get('version')} → {current['version']})")
    else:
        old, new = recorded["steps"], current["steps"]
        for label in [x for x in new if x in old]:
            changed = [f"its {field}: {_show(old[label].get(field))} → "
                       f"{_show(new[label].get(field))}"
                       for field in dict.fromkeys(list(old[label]) + list(new[label]))
                       if old[label].get(field) != new[label].get(field)]
            if changed:
                problems.append(f"step {label!r} changed {'; '.join(changed)}")
        problems += [f"stateful step {x!r} is new" for x in new if x not in old]
        problems += [f"stateful step {x!r} was removed" for x in old if x not in new]
    if problems:
        raise CheckpointError(
            f"the checkpoint in {directory} holds the state of another pipeline: "
            f"{'; '.join(problems)}. Restart with a new --checkpoint_dir, or run the pipeline "
            f"that wrote it (docs/fault-tolerance.md: 'What may change across a restart')")


def _show(value: Any) -> str:
    if isinstance(value, list):
        return f"[{', '.join(map(str, value))}]"
    return "none" if value is None else str(value)


def resume_run_state(directory: str, nodes: List[Any], **fresh: Any) -> Dict[str, Any]:
    """The run's metadata (`run_state`), its fingerprint recorded on the first start and
    checked against the pipeline's on every restart. A checkpoint written before pomset
    recorded fingerprints has none: the current pipeline's is recorded then, unchecked."""
    current = fingerprint(nodes)
    state = run_state(directory, fingerprint=current, **fresh)
    if "fingerprint" not in state:
        return update_run_state(directory, fingerprint=current)
    check_compatible(state["fingerprint"], current, directory)
    return state
