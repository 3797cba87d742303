"""PCollections, the multi-output tuple of ParDo, and side-input views."""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, Optional, Tuple

from ..triggers.strategy import WindowingStrategy
from ..windowing.beam_keywords import beam_keywords
from .fluent import FluentMethods
from .type_check import UNSET, infer

if TYPE_CHECKING:
    from .pipeline import Node, Pipeline


class PValue:
    """Beam's base of what a transform takes and gives: a value of one pipeline."""

    def __init__(self, pipeline: "Pipeline") -> None:
        self.pipeline = pipeline


class PBegin(PValue):
    """The input of a root transform (a source): `pipeline | Create(...)`."""


class PCollection(PValue, FluentMethods):
    """A (possibly unbounded) collection of elements, each with a timestamp, window, pane and diff."""

    def __init__(self, pipeline: "Pipeline", producer: Optional["Node"], tag: Optional[str],
                 windowing: WindowingStrategy, bounded: bool, kind: Optional[str],
                 may_retract: bool = False, schema: Any = None) -> None:
        self.pipeline = pipeline
        self.producer = producer
        self.tag = tag
        self.windowing = windowing
        self.bounded = bounded
        self.kind = kind
        self.may_retract = may_retract
        # a pyarrow.Schema when every element is a Row of these fields (sdk/schema.py)
        self.schema = schema
        self.consumers: list = []
        # the data-trace type of this edge, where a template or pm.Typed set it (traces.edges)
        self.trace: Any = None
        self.kept = False   # marked by keep(): the run keeps it for result.collect
        #: its element type, once worked out or set (sdk/type_check.py); UNSET until then
        self.known_type: Any = UNSET
        #: the composites whose output it is, with their inputs, innermost first: where its
        #: producer gives no type, theirs is its type
        self.type_fallbacks: list = []

    @property
    def element_type(self) -> Any:
        """Beam's type of its elements: what its producer declares (`with_output_types`),
        else infers from its input's; None where the pipeline does not check types."""
        if self.known_type is UNSET:
            return infer(self)
        return self.known_type

    @element_type.setter
    def element_type(self, hint: Any) -> None:
        self.known_type = hint

    @property
    def is_bounded(self) -> bool:
        """Beam's name for `bounded`: whether the collection ends."""
        return self.bounded

    def keep(self) -> "PCollection":
        """Keep this PCollection's elements for `result.collect`, as the run produces them;
        returns it, so a chain can end in `.keep()`. By default a run keeps only the
        PCollections no transform reads (a sink reads what it writes): mark an intermediate
        one before running to collect it too, rather than keep every one (`--collect=all`),
        which holds all of a run's data in memory (and, on Spark, persists it)."""
        self.kept = True
        return self

    def derive(self, **changes: Any) -> "PCollection":
        """A new PCollection like this one, with some properties changed (set on the node);
        its schema is kept only when given (a step may change what its elements are)."""
        fields = dict(windowing=self.windowing, bounded=self.bounded, kind=self.kind,
                      may_retract=self.may_retract)
        fields.update(changes)
        return PCollection(self.pipeline, None, None, **fields)

    def apply(self, transform: Any, label: Optional[str] = None) -> Any:
        """Apply a transform to this PCollection (the same as `self | transform`)."""
        return self.pipeline.apply(transform, self, label)

    def __or__(self, transform: Any) -> Any:
        return self.pipeline.apply(transform, self)

    @property
    def label(self) -> str:
        base = self.producer.label if self.producer else "?"
        return base if self.tag is None else f"{base}.{self.tag}"

    def __repr__(self) -> str:
        return f"<PCollection {self.label}>"


class DoOutputsTuple:
    """The outputs of a multi-output ParDo: `out.main`, `out.tagname`, `out['tagname']`
    (`out[None]` is the main output), or unpacked as Beam's are: the main output first where
    it was named (`with_outputs(..., main=...)`), then the tags in the order declared. Where
    unknown tags are allowed (`with_outputs()`), asking for a tag makes its output."""

    def __init__(self, main_tag: str, outputs: Dict[Optional[str], PCollection],
                 main_first: bool = True, tags: Optional[Tuple[str, ...]] = None,
                 allow_unknown_tags: bool = False) -> None:
        self._main_tag = main_tag
        self._outputs = outputs
        self._main_first = main_first
        self._tags = tags
        self._allow_unknown = allow_unknown_tags

    def __getitem__(self, tag: Optional[str]) -> PCollection:
        if tag == self._main_tag:
            tag = None
        if tag not in self._outputs and self._allow_unknown and isinstance(tag, str):
            main = self._outputs[None]
            out = main.derive(kind=None)
            out.producer, out.tag, out.pipeline = main.producer, tag, main.pipeline
            self._outputs[tag] = out
        try:
            return self._outputs[tag]
        except KeyError:
            known = [self._main_tag] + [t for t in self._outputs if t is not None]
            raise KeyError(f"no output tagged {tag!r}; outputs are {known}") from None

    def __getattr__(self, tag: str) -> PCollection:
        if tag.startswith("_"):
            raise AttributeError(tag)
        try:
            return self[tag]
        except KeyError as e:
            raise AttributeError(str(e)) from None

    def tagged(self) -> Dict[Optional[str], PCollection]:
        """Its outputs so far, by tag (None: the main output)."""
        return dict(self._outputs)

    def by_tag(self) -> Dict[str, PCollection]:
        """Its outputs so far by the tags they are asked by (the main one's, its tag)."""
        return {self._main_tag if t is None else t: p for t, p in self._outputs.items()}

    def _order(self) -> list:
        if self._tags is None:
            return list(self._outputs)
        return ([None] if self._main_first else []) + list(self._tags)

    def without(self, tag: str) -> "DoOutputsTuple":
        """These outputs but the one tagged `tag` (the dead letters an ErrorHandler took)."""
        tags = None if self._tags is None else tuple(t for t in self._tags if t != tag)
        return DoOutputsTuple(self._main_tag, {t: p for t, p in self._outputs.items() if t != tag},
                              self._main_first, tags, self._allow_unknown)

    def __iter__(self) -> Iterator[PCollection]:
        return iter([self[tag] for tag in self._order()])

    def __len__(self) -> int:
        return len(self._order())


class SideInput:
    """A view of a PCollection passed as an extra argument to ParDo/Map/FlatMap/Filter.

    A main-input element in window W reads the side input's window that the side input's
    WindowFn maps W to (the global window for globally windowed side inputs); it waits until
    the side input's watermark has passed that window."""

    def __init__(self, pcoll: PCollection) -> None:
        if not isinstance(pcoll, PCollection):
            raise TypeError(f"{type(self).__name__} takes a PCollection, got {pcoll!r}")
        self.pcoll = pcoll

    @property
    def pvalue(self) -> PCollection:
        """Beam's name for the PCollection it views."""
        return self.pcoll

    def view(self, values: list) -> Any:
        raise NotImplementedError


class AsList(SideInput):
    """The side input's values as a list."""

    def view(self, values: list) -> Any:
        return list(values)


class AsIter(AsList):
    """The side input's values as an iterable."""


class AsDict(SideInput):
    """The side input's (key, value) pairs as a dict."""

    def view(self, values: list) -> Any:
        return dict(values)


_NO_DEFAULT = object()


class EmptySideInput:
    """What `AsSingleton` of an empty side input without a default gives, as in Beam: a
    DoFn tells it apart with `isinstance(side, EmptySideInput)`."""

    def __repr__(self) -> str:
        return "EmptySideInput()"


class AsSingleton(SideInput):
    """The side input's single value (or, when it has none, `default`, Beam's
    `default_value`, else an `EmptySideInput`); more than one value is an error."""

    @beam_keywords(default_value="default")
    def __init__(self, pcoll: PCollection, default: Any = _NO_DEFAULT) -> None:
        super().__init__(pcoll)
        self.default = default

    def view(self, values: list) -> Any:
        options = {} if self.default is _NO_DEFAULT else {"default": self.default}
        try:
            return self._from_runtime_iterable(values, options)
        except ValueError as e:
            raise ValueError(f"AsSingleton({self.pcoll.label}): {e}") from None

    @staticmethod
    def _from_runtime_iterable(values: Iterable[Any], options: Dict[str, Any]) -> Any:
        """The single value of `values`; when there is none, `options["default"]`, or an
        `EmptySideInput` without one (as Beam's); more than one is an error, worded as Beam's."""
        rest = iter(values)
        head = list(itertools.islice(rest, 2))
        if len(head) == 1:
            return head[0]
        if not head:
            return options.get("default", EmptySideInput())
        size = len(head) + sum(1 for _ in rest)
        raise ValueError(f"PCollection of size {size} with more than one element accessed as a "
                         f'singleton view. First two elements encountered are "{head[0]}", '
                         f'"{head[1]}".')
