"""A plan node: one graph node as a runner executes it, its kind and the facts its
translation needs, so that no runner inspects the SDK transform to find out what it is."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Optional


@dataclasses.dataclass(frozen=True, eq=False)
class PlanNode:
    """`kind` is one of `plan.kinds`; `graph` the pipeline's node it stands for (its label,
    inputs, outputs, side inputs and transform are repeated here)."""

    kind: str
    graph: Any
    label: str
    transform: Any
    inputs: List[Any]
    outputs: Dict[Optional[str], Any]
    side_inputs: List[Any]
    #: the schema of the main input's rows (a pyarrow.Schema), None when unknown or a source
    schema: Any = None
    #: whether the runtime's columnar path runs it over `Columns` (`runtime.columnar`)
    native: bool = False
    #: a source that makes its elements itself (`bundles(size)`: a Create's values, merged
    #: DGS streams) rather than a file source the runtime reads
    makes_bundles: bool = False
    #: an element-wise step whose main output is elements of its input, unchanged (a Filter)
    passes_elements: bool = False
    #: an element-wise step whose user function is an object with state of its own (a DoFn),
    #: which a runner copies for each worker
    has_dofn: bool = False
    #: the output tag of its dead letters, if it sends them one (a source or a ParDo)
    dead_letter_tag: Optional[str] = None
    #: a source that is read until the run is stopped (a Kafka source with no end)
    never_ends: bool = False
    #: a grouping's windowing strategy (its main input's)
    strategy: Any = None
    #: a grouping's reducer factory (a new reducer per call)
    reducer: Optional[Callable[[], Any]] = None

    def reads(self) -> List[Any]:
        """The PCollections this node reads: its main inputs, then its side inputs'."""
        return list(self.inputs) + [s.pcoll for s in self.side_inputs]

    def with_transform(self, transform: Any) -> "PlanNode":
        """The same node running `transform` instead (a worker's copy of its DoFn)."""
        return dataclasses.replace(self, transform=transform)

    def __repr__(self) -> str:
        return f"<PlanNode {self.label}: {self.kind}>"
