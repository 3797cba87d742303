"""Pipeline: builds the graph of primitive transforms and hands it to a runner."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .asserts import run_checks
from .errors import PipelineConstructionError
from .options import PipelineOptions
from .ptransform import Primitive, PTransform
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
        self._labels: set = set()
        self._scope: List[str] = []
        self._result: Any = None
        self.controls = Controls()
        #: `assert_that`s to check once the pipeline has run: (pcoll, matcher, name, elements)
        self.checks: List[Tuple[Any, Any, str, bool]] = []

    @property
    def _options(self) -> PipelineOptions:
        """Beam's name for `options` (Beam's tests set type-check options through it)."""
        return self.options

    # --- construction -----------------------------------------------------------------------
    def apply(self, transform: Any, pvalue: Any = None, label: Optional[str] = None) -> Any:
        if pvalue is None:
            pvalue = PBegin(self)
        if not isinstance(transform, PTransform):
            raise TypeError(f"expected a PTransform, got {transform!r}")
        name = label or transform.label or transform.default_label()
        full = self._unique("/".join(self._scope + [name]))
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
        if checked:
            type_check.check_strictness(self, transform, full)
        return result

    @property
    def applied_labels(self) -> set:
        """Beam's name: the full label of every transform applied so far."""
        return set(self._labels)

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

    def _unique(self, label: str) -> str:
        out, n = label, 1
        while out in self._labels:
            n += 1
            out = f"{label}_{n}"
        self._labels.add(out)
        return out

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
        return {**self.__dict__, "checks": []}

    def start(self) -> RunningPipeline:
        """Run the pipeline on a background thread; the handle waits for the result and
        changes what may change while it runs (`set_parallelism`)."""
        return RunningPipeline(self)

    @property
    def result(self) -> Any:
        return self._result

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
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
