"""Pipeline: builds the graph of primitive transforms and hands it to a runner."""
from __future__ import annotations

import logging
import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .asserts import run_checks
from .errors import PipelineConstructionError
from .options import PipelineOptions
from .overrides import AppliedPTransform, output_pairs
from .ptransform import Primitive, PTransform, input_parts
from .pvalue import PBegin, PCollection
from .runners import get_runner
from . import type_check
from .late_data import warn_dropped
from .running import Controls, RunningPipeline


class Node:
    """One applied primitive transform: its label, inputs, side inputs and outputs."""

    def __init__(self, label: str, transform: Primitive, inputs: List[PCollection]) -> None:
        self.label = label
        self.transform = transform
        self.inputs = inputs
        #: whether its pipeline checked types when it was applied (sdk/type_check.py)
        self.type_checked = False
        self.side_inputs = transform.side_inputs()
        self.outputs: Dict[Optional[str], PCollection] = {}

    def reads(self) -> List[PCollection]:
        """The PCollections this node reads: its main inputs, then its side inputs'."""
        return list(self.inputs) + [s.pcoll for s in self.side_inputs]

    def __repr__(self) -> str:
        return f"<Node {self.label}: {type(self.transform).__name__}>"

    def __str__(self) -> str:
        """As Beam's AppliedPTransform prints: the full label and the transform's class."""
        return f"AppliedPTransform({self.label}, {type(self.transform).__name__})"


def pipeline_of(pvalue: Any) -> "Pipeline":
    if isinstance(pvalue, (PCollection, PBegin)):
        return pvalue.pipeline
    if isinstance(pvalue, dict):
        pvalue = list(pvalue.values())
    if isinstance(pvalue, (list, tuple)) and pvalue and all(isinstance(p, PCollection) for p in pvalue):
        pipelines = {id(p.pipeline) for p in pvalue}
        if len(pipelines) > 1:
            raise PipelineConstructionError("PCollections from different pipelines cannot be combined")
        return pvalue[0].pipeline
    raise TypeError(f"a transform must be applied to a Pipeline or PCollection(s), not {pvalue!r}")


class Pipeline:
    """A graph of transforms. Use as a context manager (it runs on exit) or call `run()`."""

    def __init__(self, runner: Optional[str] = None, options: Optional[PipelineOptions] = None,
                 argv: Optional[Sequence[str]] = None) -> None:
        if options is None:
            options = PipelineOptions(argv)
        if runner is not None:
            options.set_runner(runner)
        self.options = options
        self.nodes: List[Node] = []
        #: every application of a transform so far, composites and primitives, in order
        self.applied: List[AppliedPTransform] = []
        self._labels: set = set()
        self._scope: List[str] = []
        self._result: Any = None
        self._running: Optional[RunningPipeline] = None
        self.controls = Controls()
        #: `assert_that`s to check once the pipeline has run: (pcoll, matcher, name, elements)
        self.checks: List[Tuple[Any, Any, str, bool]] = []

    @property
    def _options(self) -> PipelineOptions:
        """Beam's attribute for the pipeline's options (`get_pipeline_options()`)."""
        return self.options

    def get_pipeline_options(self) -> PipelineOptions:
        """The pipeline's options (Beam's name)."""
        return self.options

    # --- construction -----------------------------------------------------------------------
    def apply(self, transform: Any, pvalue: Any = None, label: Optional[str] = None) -> Any:
        if pvalue is None:
            pvalue = PBegin(self)
        if not isinstance(transform, PTransform):
            raise TypeError(f"expected a PTransform, got {transform!r}")
        name = label or transform.label or transform.default_label_for(self.options)
        full = self._unique("/".join(self._scope + [name]), transform)
        applied = AppliedPTransform(full, transform, tuple(
            p for p in input_parts(pvalue) if isinstance(p, PCollection)), list(self._scope))
        self.applied.append(applied)   # before what it applies in turn: outermost first
        start = len(self.nodes)
        checked = type_check.checking(self)
        if checked:
            type_check.check_input(transform, _pcollections_in(pvalue))
        if isinstance(transform, Primitive):
            inputs = _as_inputs(pvalue)
            node = Node(full, type_check.runtime_checked(self, transform, full), inputs)
            node.type_checked = checked
            transform.validate(node)
            node.outputs = transform.outputs(node)
            for tag, out in node.outputs.items():
                out.producer, out.tag, out.pipeline = node, tag, self
            for pc in node.reads():
                pc.consumers.append(node)
            self.nodes.append(node)
            result = transform.result(node)
        else:
            self._scope.append(full.rsplit("/", 1)[-1])
            try:
                result = transform.expand(pvalue)
            finally:
                self._scope.pop()
            if checked:
                type_check.note_composite(transform, _pcollections_in(pvalue), result)
        applied.result, applied.nodes = result, self.nodes[start:]
        if checked:
            type_check.check_strictness(self, transform, full)
        return result

    def visit(self, visitor: Any) -> None:
        """Beam's: show `visitor` (a `PipelineVisitor`) every application, outermost first,
        and the PCollections each primitive gives."""
        inside: Dict[str, List[AppliedPTransform]] = {}
        for applied in self.applied:
            inside.setdefault("/".join(applied.scope), []).append(applied)

        def walk(scope: str) -> None:
            for applied in inside.get(scope, []):
                if isinstance(applied.transform, Primitive):
                    visitor.visit_transform(applied)
                    for pcoll in applied.outputs.values():
                        visitor.visit_value(pcoll, applied)
                elif applied.full_label != scope:   # not a template's step, at its label
                    visitor.enter_composite_transform(applied)
                    walk(applied.full_label)
                    visitor.leave_composite_transform(applied)
        walk("")

    def replace_all(self, overrides: Sequence[Any]) -> None:
        """Beam's: each application an override matches (`PTransformOverride`), composite
        or primitive, replaced by the transform it gives, under the same label, reading the
        inputs it gives and read by what read the replaced one's outputs."""
        for override in overrides:
            for applied in list(self.applied):
                if any(a is applied for a in self.applied) and override.matches(applied):
                    self._replace(applied, override)

    def _replace(self, applied: AppliedPTransform, override: Any) -> None:
        transform = override.get_replacement_transform_for_applied_ptransform(applied)
        inputs = tuple(override.get_replacement_inputs(applied))
        pvalue = PBegin(self) if not inputs else inputs[0] if len(inputs) == 1 else inputs
        old = {id(n) for n in applied.nodes}
        position = next((i for i, n in enumerate(self.nodes) if id(n) in old), len(self.nodes))
        self.nodes = [n for n in self.nodes if id(n) not in old]
        for node in applied.nodes:
            for pc in node.reads():
                pc.consumers[:] = [c for c in pc.consumers if c is not node]
        prefix = applied.full_label
        inside = (lambda label: label == prefix or label.startswith(prefix + "/"))
        self._labels = {label for label in self._labels if not inside(label)}
        self.applied = [a for a in self.applied if not inside(a.full_label)]
        before, scope = len(self.nodes), self._scope
        self._scope = list(applied.scope)
        try:
            out = self.apply(transform, pvalue, prefix.rsplit("/", 1)[-1])
        finally:
            self._scope = scope
        added = self.nodes[before:]   # in the replaced one's place: inputs stay before it
        del self.nodes[before:]
        self.nodes[position:position] = added
        pairs = output_pairs(applied.result, out)
        if transform.get_type_hints().simple_output() is None:   # Beam's: the type stays
            for old_pc, new_pc in pairs:
                new_pc.element_type = old_pc.element_type
        self._rewire(pairs)

    def _rewire(self, pairs: List[Tuple[PCollection, PCollection]]) -> None:
        """What read each old PCollection reads its new one instead: steps (as main or side
        input) and assertions."""
        new = {id(old): pc for old, pc in pairs}
        for old, pc in pairs:
            pc.consumers.extend(c for c in old.consumers if c not in pc.consumers)
            pc.kept = pc.kept or old.kept
            old.consumers.clear()
        for node in self.nodes:
            node.inputs = [new.get(id(pc), pc) for pc in node.inputs]
            for side in node.side_inputs:
                side.pcoll = new.get(id(side.pcoll), side.pcoll)
        self.checks = [(new.get(id(c[0]), c[0]),) + tuple(c[1:]) for c in self.checks]

    def scope_label(self) -> str:
        """The label of the composite transform being expanded (for its messages)."""
        return "/".join(self._scope)

    def apply_as_scope(self, transform: Primitive, pvalue: Any) -> Any:
        """Apply a primitive under the label of the composite being expanded, not below it:
        for a composite that is one step once it has checked its input (a template)."""
        full = self.scope_label()
        name = self._scope.pop()
        self._labels.discard(full)
        try:
            return self.apply(transform, pvalue, name)
        finally:
            self._scope.append(name)

    def __or__(self, transform: PTransform) -> Any:
        return self.apply(transform, PBegin(self))

    def create(self, values: Any, **kwargs: Any) -> PCollection:
        """Fluent start: `p.create([...])` is `p | Create([...])`."""
        from .core import Create
        return self | Create(values, **kwargs)

    @property
    def applied_labels(self) -> set:
        """The full labels (`Outer/Inner`) of every transform applied so far, composites
        included (Beam's name)."""
        return set(self._labels)

    def _unique(self, label: str, transform: Any = None) -> str:
        """`label`, or where it is taken, `label_2`, `label_3`... (with
        `--auto_unique_labels`, Beam's random suffix instead)."""
        out, n = label, 1
        while out in self._labels:
            n += 1
            if transform is not None and self.options.auto_unique_labels:
                scope = label.rpartition("/")[0]
                out = f"{scope}/{self._generate_unique_label(transform)}".lstrip("/")
            else:
                out = f"{label}_{n}"
        self._labels.add(out)
        return out

    def _generate_unique_label(self, transform: Any) -> str:
        """Beam's `--auto_unique_labels` label: the transform's, with six random hex digits."""
        name = transform.label or transform.default_label()
        return f"{name}_{uuid.uuid4().hex[:6]}"

    # --- running ----------------------------------------------------------------------------
    def recorded(self) -> List[PCollection]:
        """The PCollections a run keeps for `result.collect`. With `--collect=all` every one;
        `none` none; `leaves` those no transform reads (what a sink writes is read by the
        sink, so not kept) and those marked with `PCollection.keep()`; by default (`auto`)
        the same, except that a run whose source never ends keeps only the marked ones (a
        stream kept in memory forever would only grow). So a run whose results all go to sinks
        keeps nothing, however large its input."""
        mode = self.options.collect
        if mode == "none":
            return []
        ends = not any(getattr(n.transform, "never_ends", False) for n in self.nodes)
        leaves = mode == "leaves" or (mode == "auto" and ends)
        return [pc for n in self.nodes for pc in n.outputs.values()
                if mode == "all" or pc.kept or (leaves and not pc.consumers)]

    def run(self) -> Any:
        """Run the pipeline to completion on the runner its options name; returns the result.
        A pipeline runs once: after a `with` block has run it, `run()` returns that result."""
        if self._result is None:
            self.options.warn_unknown()
            self._result = get_runner(self.options.runner).run(self)
            warn_dropped(self.nodes, self._result.metrics())
            run_checks(self.checks, self._result)
        return self._result

    def __getstate__(self) -> Dict[str, Any]:
        # a run's workers get the graph; the assertions are checked where it was built
        return {**self.__dict__, "checks": [], "applied": [], "_running": None}

    def start(self) -> RunningPipeline:
        """Run the pipeline on a background thread; the handle waits for the result and
        changes what may change while it runs (`set_parallelism`)."""
        return RunningPipeline(self)

    @property
    def result(self) -> Any:
        """The run's result; while a run started by a `with` block with
        `--no_wait_until_finish` goes on, its handle (`wait_until_finish()`)."""
        return self._result if self._result is not None else self._running

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            return
        if self.options.no_wait_until_finish:
            self._running = self.start()
            logging.info('Job execution continues without waiting for completion. Use '
                         '"wait_until_finish" in PipelineResult to block until finished.')
        else:
            self.run()


def _pcollections_in(pvalue: Any) -> List[PCollection]:
    """The PCollections a transform is applied to (none for anything else)."""
    if isinstance(pvalue, PCollection):
        return [pvalue]
    if isinstance(pvalue, dict):
        pvalue = list(pvalue.values())
    if isinstance(pvalue, (list, tuple)):
        return [p for p in pvalue if isinstance(p, PCollection)]
    return []


def _as_inputs(pvalue: Any) -> List[PCollection]:
    if isinstance(pvalue, PBegin):
        return []
    if isinstance(pvalue, PCollection):
        return [pvalue]
    if isinstance(pvalue, dict):
        pvalue = list(pvalue.values())
    if isinstance(pvalue, (list, tuple)) and all(isinstance(p, PCollection) for p in pvalue):
        return list(pvalue)
    raise TypeError(f"expected PCollection(s), got {pvalue!r}")
