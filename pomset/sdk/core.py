"""The core transforms: in-memory sources, element-wise ParDo and its shorthands, windowing,
grouping and combining, and the composites built from them."""
from __future__ import annotations

import copy
import logging
import numbers
import datetime as _dt
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Union
from typing import Iterable as TypingIterable, Tuple as TypingTuple

from ..triggers import AccumulationMode, DefaultTrigger, Trigger
from ..triggers.reducers import BufferReducer, CombineReducer
from ..windowing import (GLOBAL_WINDOW, NO_FIRING, BoundedWindow, GlobalWindows, MIN_MICROS, Timestamp, TimestampCombiner,
                         TimestampedValue, WindowedValue, WindowFn, AssignedWindows,
                         duration_micros)
from ..triggers.strategy import WindowingStrategy
from .combinefn import K, V, CombineFn, Count, as_combine_fn, combine_all
from .dofn import BatchTypes, DeadLetter, DoFn, batch_types
from .userstate import is_stateful_dofn, validate_stateful_dofn
from ..windowing.beam_keywords import beam_keywords
from .errors import PipelineConstructionError
from .event_time import event_time_micros, time_unit
from .kinds import KV, NOT_KV, UNKNOWN, element_kind, kind_of_return, kind_of_values
from .ptransform import Primitive, PTransform, label_from_callable
from . import plan_kinds
from .process_returns import warn_of_process_returns
from .pvalue import AsList, AsSingleton, DoOutputsTuple, PCollection, SideInput
from .schema import Row, SchemaLike, as_schema, conform, infer_schema
from .type_hints import TypeCheckError
from .unsafe_triggers import check_safe
from .fn_types import combine_fn_types, pardo_hints, pardo_output, per_key_hints
from .type_check import element_violation, fits, generic_violation
from .row_type import row_type_of
from .type_hints import IOTypeHints, type_of, union_of


def default_strategy() -> WindowingStrategy:
    """The windowing of a collection nothing has windowed yet (a source's, a typed trace's):
    the global window with the default trigger."""
    return WindowingStrategy()


def _single_input(node: Any, what: str) -> PCollection:
    if not node.inputs:   # applied to the pipeline itself, as Beam words it
        raise PipelineConstructionError(f"{what} {node.label!r} takes one PCollection: it "
                                        f"was applied to the pipeline. Got a PBegin/Pipeline "
                                        f"instead.")
    if len(node.inputs) != 1:
        raise PipelineConstructionError(f"{what} {node.label!r} takes one PCollection, got {len(node.inputs)}")
    return node.inputs[0]


# --- sources ------------------------------------------------------------------------------------

class Source(Primitive):
    """A root transform producing elements; bounded sources end with the watermark at MAX."""

    #: True for a source that makes its elements itself (`bundles(size)`), not read from files
    makes_bundles = False

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.READ

    bounded = True
    #: True for a source that is read until the run is stopped
    never_ends = False

    def kind(self) -> Optional[str]:
        return UNKNOWN

    def schema(self) -> Any:
        """The schema of the rows this source produces (a pyarrow.Schema), or None when its
        elements are not rows of one schema."""
        return None

    def element_count(self) -> Optional[int]:
        """How many elements it produces, where known before the read (a Create's)."""
        return None

    def validate(self, node: Any) -> None:
        if node.inputs:
            raise PipelineConstructionError(f"source {node.label!r} must be applied to the pipeline, "
                                            f"not to a PCollection")

    def outputs(self, node: Any) -> Dict[Optional[str], PCollection]:
        return {None: PCollection(None, None, None, default_strategy(), self.bounded, self.kind(),
                                  schema=self.schema())}


_TIMED = (TimestampedValue, WindowedValue)


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, _TIMED) else value


#: how many of a Create's values its inferred element type looks at
TYPED_VALUES = 10_000


class Create(Source):
    """A bounded PCollection of the given values; `TimestampedValue`s carry their event time,
    other values get the minimum timestamp, all in the global window. With `schema` (a
    pyarrow.Schema or a mapping of field name to type) each value must be a mapping of those
    fields, and becomes a `pm.Row` of them; values that are all `pm.Row`s of the same fields
    and types give their schema without one. Beam's `reshuffle=` is accepted and changes
    nothing: pomset's runners place the work themselves."""

    makes_bundles = True

    def __init__(self, values: Iterable[Any], label: Optional[str] = None,
                 schema: Optional[SchemaLike] = None, reshuffle: bool = True) -> None:
        super().__init__(label)
        if isinstance(values, (str, bytes, dict)):
            raise TypeError(f"Create takes an iterable of elements, not a {type(values).__name__}")
        self.values = list(values)
        self._schema = None
        if schema is not None:
            self._schema = as_schema(schema)
            self.values = [self._conformed(i, v) for i, v in enumerate(self.values)]
        elif self.values and all(isinstance(_plain(v), Row) for v in self.values):
            self._schema = infer_schema(_plain(v) for v in self.values)

    def _conformed(self, index: int, value: Any) -> Any:
        row = _plain(value)
        if not isinstance(row, Mapping):
            raise PipelineConstructionError(
                f"Create: value {index} ({row!r}) is not a row (a mapping of the schema's "
                f"fields {self._schema.names})")
        try:
            out = conform(row, self._schema)
        except ValueError as e:
            raise PipelineConstructionError(f"Create: value {index} {e}") from None
        if isinstance(value, WindowedValue):
            return WindowedValue.raw(out, value.ts, value.window, value.pane, value.diff)
        if isinstance(value, TimestampedValue):
            return TimestampedValue(out, value.timestamp)
        return out

    def schema(self) -> Any:
        return self._schema

    def element_count(self) -> Optional[int]:
        return len(self.values)

    def kind(self) -> Optional[str]:
        return kind_of_values(v.value if isinstance(v, (TimestampedValue, WindowedValue)) else v
                              for v in self.values)

    def infer_output_type(self, input_type: Any) -> Any:
        """The Union of its values' types (Any for none; of the first `TYPED_VALUES` of a
        larger Create, so building a pipeline stays cheap), unless it declares one; of
        `Row`s of the same fields, their `RowTypeConstraint`."""
        declared = self.get_type_hints().simple_output()
        if declared is not None:
            return declared
        values = [_plain(v) for v in self.values[:TYPED_VALUES]]
        rows = row_type_of(values)
        return rows if rows is not None else union_of(type_of(v) for v in values)

    def bundles(self, size: int) -> Iterator[List[WindowedValue]]:
        """Fresh WindowedValues for the values, `size` at a time (made per bundle, so a large
        Create does not keep an element object per value alive for the whole run)."""
        values, raw = self.values, WindowedValue.raw
        for i in range(0, len(values), size):
            bundle = []
            append = bundle.append
            for v in values[i:i + size]:
                if not isinstance(v, _TIMED):
                    append(raw(v, MIN_MICROS, GLOBAL_WINDOW, NO_FIRING, 1))
                elif isinstance(v, WindowedValue):
                    append(raw(v.value, v.ts, v.window, v.pane, v.diff))
                else:
                    append(raw(v.value, v.ts, GLOBAL_WINDOW, NO_FIRING, 1))
            yield bundle


# --- ParDo ---------------------------------------------------------------------------------------

class ParDo(Primitive):
    """Applies a DoFn to every element. Extra arguments that are side-input views
    (`AsList`, `AsDict`, `AsSingleton`, `AsIter`) are filled in per window. A DoFn with a
    `process_batch` is batched: its batch types, from its type hints, are `batch_types`."""

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.STATEFUL_PARDO if self.stateful else plan_kinds.ELEMENTWISE

    call = "dofn"
    #: whether the main output is unpacked first (`with_outputs(main=...)`)
    main_named = False
    #: whether a TaggedOutput may name a tag not declared (`with_outputs()`)
    allow_unknown_tags = False
    #: how failures reach the dead-letter output (`with_exception_handling`), and whether a
    #: stateful DoFn may have one (its state a failing element wrote is kept)
    exception_handling: Any = None
    unsafe_userstate = False

    def __init__(self, fn: Any, *args: Any, label: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(label)
        if isinstance(fn, type) and issubclass(fn, DoFn):
            raise ValueError(f"ParDo takes a DoFn instance, got the class {fn.__name__}: "
                             f"construct it, ParDo({fn.__name__}())")
        if self.call == "dofn" and not isinstance(fn, DoFn):
            if not callable(fn):
                raise TypeError(f"ParDo takes a DoFn instance or a function, got {fn!r}")
            self.call = "flat_map"   # as Beam's: a function's outputs are what it returns
        if self.call == "dofn":
            warn_of_process_returns(fn)
        if self.call != "dofn" and not callable(fn):
            raise TypeError(f"{type(self).__name__} takes a callable, got {fn!r}")
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.tags: tuple = ()
        self.main_tag = "main"
        self.dead_letter_tag: Optional[str] = None
        self.batch_types: Optional[BatchTypes] = batch_types(fn) if self.call == "dofn" else None
        #: whether its DoFn keeps state or sets timers (per key and window: sdk/userstate.py)
        self.stateful = self.call == "dofn" and is_stateful_dofn(fn)
        if self.stateful:
            validate_stateful_dofn(fn)
            if self.batch_types is not None:
                raise TypeError(f"{type(fn).__name__}: a stateful DoFn cannot be batched "
                                f"(process_batch): its state is per key")
        self.output_kind = self._infer_kind()

    def _infer_kind(self) -> Optional[str]:
        if self.batch_types is not None:   # rows or numbers, never (key, value) pairs
            return NOT_KV
        if self.call == "map":
            return kind_of_return(self.fn)
        if self.call == "flat_map":
            return element_kind(self.fn)
        if self.call == "dofn":
            return element_kind(self.fn.process)
        return UNKNOWN

    def default_label(self) -> str:
        if self.call == "dofn":
            return f"ParDo({self.fn.default_label()})"
        return f"{type(self).__name__}({label_from_callable(self.fn)})"

    def with_outputs(self, *tags: str, main: Optional[str] = None,
                     allow_unknown_tags: Optional[bool] = None) -> "ParDo":
        """Also produce the side outputs `tags` (DoFns emit to them with `TaggedOutput`).
        With no tags, any tag is allowed (Beam's `allow_unknown_tags`): the result gives an
        output for each tag asked of it, and what goes to a tag never asked for is dropped.
        The result unpacks as Beam's does: the main output first where `main` names it,
        then the tags in order (and the dead letters last, after `with_exception_handling`)."""
        out = copy.copy(self)
        out.tags = tuple(tags)
        out.main_tag = main or "main"
        out.main_named = main is not None
        out.allow_unknown_tags = not tags if allow_unknown_tags is None else allow_unknown_tags
        return out

    def with_exception_handling(self, main_tag: Optional[str] = None,
                                dead_letter_tag: str = "bad", *,
                                exc_class: Any = Exception, partial: bool = False,
                                use_subprocess: bool = False, threshold: float = 1,
                                threshold_windowing: Optional[WindowFn] = None,
                                timeout: Optional[float] = None, error_handler: Any = None,
                                on_failure_callback: Optional[Callable[[BaseException, Any], None]]
                                = None,
                                allow_unsafe_userstate_in_process: bool = False) -> PTransform:
        """Send elements whose processing raises to a dead-letter output instead of failing
        the run, as Beam's: `good, bad = pcoll | Map(f).with_exception_handling()`. The main
        output is tagged `main_tag` ('good', or the main tag `with_outputs` named), the dead
        letters `dead_letter_tag`; each is a `DeadLetter`, Beam's `(element, (exception type,
        repr, traceback))`. Only errors of `exc_class` are caught; unless `partial`, what a
        failing element output is withdrawn; `on_failure_callback(exception, element)` is
        called for each failure; `timeout` bounds each call (a `TimeoutError` fails the
        element); `use_subprocess` runs the DoFn in a subprocess, so a crash fails only the
        element. More than `threshold` of a window's elements failing (per window of
        `threshold_windowing`, the input's by default) fails the run. With an
        `error_handler` (`transforms.error_handling.ErrorHandler`) the dead letters go to it,
        and the result is the main output (the outputs, with side outputs). A stateful DoFn
        needs `allow_unsafe_userstate_in_process=True`: the state a failing element wrote is
        kept."""
        from .exception_handling import ExceptionHandling, GuardedParDo
        out = copy.copy(self)
        if main_tag is not None or not self.main_named:
            out.main_tag = main_tag or "good"
        out.main_named = True
        out.dead_letter_tag = dead_letter_tag
        if not self.tags:
            out.allow_unknown_tags = True
        out.exception_handling = ExceptionHandling(exc_class, partial, use_subprocess, timeout,
                                                   on_failure_callback)
        out.unsafe_userstate = allow_unsafe_userstate_in_process
        if threshold < 1 or error_handler is not None:
            return GuardedParDo(out, threshold, threshold_windowing, error_handler)
        return out

    def with_error_handler(self, error_handler: Any, **exception_handling: Any) -> PTransform:
        """Beam's alias of `with_exception_handling(error_handler=...)`; itself when None."""
        if error_handler is None:
            return self
        return self.with_exception_handling(error_handler=error_handler, **exception_handling)

    def side_inputs(self) -> List[SideInput]:
        return [a for a in list(self.args) + list(self.kwargs.values()) if isinstance(a, SideInput)]

    def default_type_hints(self) -> IOTypeHints:
        """Its function's (or DoFn's) declared or annotated types."""
        return pardo_hints(self.call, self.fn)

    def infer_output_type(self, input_type: Any) -> Any:
        """Its declared output type, else what its function's bytecode shows it returns."""
        if self.get_type_hints().simple_output() is not None:
            return super().infer_output_type(input_type)
        return pardo_output(self.call, self.fn, self.args, input_type)

    def infer_tagged_output_type(self, tag: str, input_type: Any, options: Any = None) -> Any:
        """Its dead letters' type, `DeadLetter[input type]` (Any where `options` keep Beam's
        behaviour before 2.73, `--update_compatibility_version`); else what it, or its DoFn's
        `process` annotation, declares for the tag."""
        if tag == self.dead_letter_tag:
            from .options import compatible_before
            if compatible_before(options, "2.73.0"):
                return Any
            return DeadLetter[input_type]
        return super().infer_tagged_output_type(tag, input_type, options)
    def type_check_inputs(self, pvalue: Any) -> None:
        """Raise TypeCheckError, worded as Beam's, when its input's elements do not fit the
        type it (or its function) declares it takes."""
        hint = self.get_type_hints().first_input()
        if hint is not None and not fits(pvalue.element_type, hint):
            raise element_violation(self.label or self.default_label(), hint, pvalue)

    def validate(self, node: Any) -> None:
        main = _single_input(node, type(self).__name__)
        if self.stateful:
            _validate_stateful(self, node, main)

    def outputs(self, node: Any) -> Dict[Optional[str], PCollection]:
        main = node.inputs[0]
        kind = main.kind if self.call == "filter" else self.output_kind
        # a DoFn whose process may output without end for an element makes its output unbounded
        bounded = main.bounded and not (self.call == "dofn" and getattr(
            self.fn.process, "unbounded_per_element", False))
        outs = {None: main.derive(kind=kind, schema=self.output_schema(main), bounded=bounded)}
        for tag in self.tags:
            outs[tag] = main.derive(kind=UNKNOWN, bounded=bounded)
        if self.dead_letter_tag is not None:
            outs[self.dead_letter_tag] = main.derive(kind=NOT_KV)
        return outs

    def output_schema(self, main: PCollection) -> Any:
        """The schema of the main output's rows, where this step knows it (a filter keeps
        its input's)."""
        return main.schema if self.call == "filter" else None

    def result(self, node: Any) -> Any:
        if self.tags or self.dead_letter_tag is not None or self.allow_unknown_tags:
            return DoOutputsTuple(self.main_tag, node.outputs, self.main_named,
                                  self.tags + ((self.dead_letter_tag,)
                                               if self.dead_letter_tag is not None else ()),
                                  self.allow_unknown_tags)
        return node.outputs[None]


def _validate_stateful(t: ParDo, node: Any, main: PCollection) -> None:
    """A stateful DoFn needs keyed input, has dead letters only where asked for knowing its
    state is kept, runs in the worker (no timeout, no subprocess), and has no side inputs yet."""
    label = node.label
    if main.kind == NOT_KV:
        raise PipelineConstructionError(
            f"Input elements to the transform {label} with stateful DoFn must be key-value "
            f"pairs. {type(t.fn).__name__} keeps state or sets timers, which are per key, but "
            f"{main.label} holds elements that are not 2-tuples (map them to (key, value) "
            f"first, e.g. with pm.WithKeys)")
    if t.dead_letter_tag is not None and not t.unsafe_userstate:
        raise PipelineConstructionError(
            f"{label}: a stateful DoFn with a dead-letter output keeps the state a failing "
            f"element wrote; say that this is meant with with_exception_handling("
            f"allow_unsafe_userstate_in_process=True)")
    if t.exception_handling is not None and t.exception_handling.isolates:
        raise PipelineConstructionError(
            f"{label}: a stateful DoFn runs where its state is, so it takes no timeout and no "
            f"use_subprocess in with_exception_handling")
    if t.side_inputs():
        raise PipelineConstructionError(
            f"{label}: a stateful DoFn cannot read side inputs in pomset; keep what it needs "
            f"in its state, or join the inputs with CoGroupByKey before it")


class Map(ParDo):
    """One output per element: `fn(element, *args, **kwargs)`."""

    call = "map"


def _identity(element: Any) -> Any:
    return element


class FlatMap(ParDo):
    """Zero or more outputs per element: the items of the iterable `fn(element, ...)` returns;
    without `fn`, the items of each element itself (Beam's default)."""

    call = "flat_map"

    def __init__(self, fn: Any = _identity, *args: Any, label: Optional[str] = None,
                 **kwargs: Any) -> None:
        super().__init__(fn, *args, label=label, **kwargs)


class Filter(ParDo):
    """The elements for which `fn(element, ...)` is true; or, given an expression
    (`pm.Filter(pm.col("v") > 10)`), the rows for which it is true (null counts as false),
    which a columnar runner evaluates without calling Python per row."""

    call = "filter"

    def __init__(self, fn: Any, *args: Any, label: Optional[str] = None, **kwargs: Any) -> None:
        from .expressions import Expr
        self.expr = fn if isinstance(fn, Expr) else None
        if self.expr is not None:
            if args or kwargs:
                raise TypeError("Filter with an expression takes no further arguments")
            fn = self.expr.eval
        super().__init__(fn, *args, label=label, **kwargs)

    def validate(self, node: Any) -> None:
        super().validate(node)
        schema = node.inputs[0].schema
        if self.expr is not None and schema is not None:
            self.expr.check(schema, node.label)

    def default_label(self) -> str:
        return f"Filter({self.expr!r})" if self.expr is not None else super().default_label()

    def infer_output_type(self, input_type: Any) -> Any:
        """What it takes: its input's element type, or where that is unknown the type its
        function declares it takes."""
        if input_type is None or input_type is Any:
            declared = self.get_type_hints().first_input()
            return Any if declared is None else declared
        return input_type


def WithTimestamps(fn: Callable[[Any], Any], timestamp_unit: str = "s") -> Map:
    """Sets each element's event time to `fn(element)`: what a `timestamp_field=` may hold
    (a number of `timestamp_unit`s since the epoch, seconds by default; an ISO-8601 string;
    a datetime or date, naive meaning UTC; a Timestamp). A value that is none of them fails
    the element, saying why."""
    unit = time_unit(timestamp_unit)

    def stamp(v: Any) -> TimestampedValue:
        when = fn(v)
        try:
            micros = event_time_micros(when, unit)
        except ValueError as e:
            raise ValueError(f"the timestamp it returned {e}") from None
        return TimestampedValue(v, Timestamp.from_micros(micros))
    out = Map(stamp)
    out.output_kind = UNKNOWN
    out.label = f"WithTimestamps({getattr(fn, '__name__', 'fn')})"
    return out


# --- windowing -----------------------------------------------------------------------------------

def _probe_window_fn(fn: WindowFn, label: str) -> None:
    """Reject a custom WindowFn whose windows do not contain their timestamps or whose window
    ends go backwards as time goes forward (it would break watermarks). Functions that need a
    real element to assign are checked per element at run time instead."""
    if fn.is_builtin():
        return
    prev_end = None
    for seconds in (0, 1, 59.5, 60, 61, 3599, 3600, 86_400.25, 1_000_000, 1_700_000_000):
        t = duration_micros(seconds)
        try:
            windows = list(fn.assign_windows(Timestamp.from_micros(t), None))
        except Exception:
            return
        for w in windows:
            if not isinstance(w, BoundedWindow):
                raise PipelineConstructionError(
                    f"{label}: {fn!r}.assign_windows must return windows, got {w!r}")
            if not (getattr(w, "start_us", MIN_MICROS) <= t <= w.max_ts):
                raise PipelineConstructionError(
                    f"{label}: {fn!r} assigned {w!r} to timestamp {Timestamp.from_micros(t)!r}, "
                    f"which that window does not contain")
        if windows:
            end = max(w.max_ts for w in windows)
            if prev_end is not None and end < prev_end:
                raise PipelineConstructionError(
                    f"{label}: {fn!r} is not monotonic: a later timestamp "
                    f"({Timestamp.from_micros(t)!r}) got a window ending before an earlier one's")
            prev_end = end


class WindowInto(Primitive):
    """Sets where (WindowFn) and when/how (trigger, accumulation mode, allowed lateness,
    timestamp combiner) the next grouping works. `window_fn=None` keeps the current windows."""

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.ASSIGN_WINDOWS

    def infer_output_type(self, input_type: Any) -> Any:
        """Its input's element type: windowing changes no element."""
        return input_type

    @beam_keywords(windowfn="window_fn")
    def __init__(self, window_fn: Optional[WindowFn] = None, trigger: Optional[Trigger] = None,
                 accumulation_mode: Optional[AccumulationMode] = None,
                 allowed_lateness: Union[float, _dt.timedelta, None] = None,
                 timestamp_combiner: Optional[TimestampCombiner] = None,
                 label: Optional[str] = None) -> None:
        super().__init__(label)
        if window_fn is not None and not isinstance(window_fn, WindowFn):
            raise TypeError(f"WindowInto takes a WindowFn, got {window_fn!r}")
        if trigger is not None and not isinstance(trigger, Trigger):
            raise TypeError(f"trigger must be a Trigger, got {trigger!r}")
        if accumulation_mode is not None and not isinstance(accumulation_mode, AccumulationMode):
            raise TypeError(f"accumulation_mode must be a pm.AccumulationMode, got {accumulation_mode!r}")
        if timestamp_combiner is not None and not isinstance(timestamp_combiner, TimestampCombiner):
            raise TypeError(f"timestamp_combiner must be a pm.TimestampCombiner, got {timestamp_combiner!r}")
        self.window_fn = window_fn
        self.changes: Dict[str, Any] = {}
        if window_fn is not None:
            self.changes["window_fn"] = window_fn
        if trigger is not None:
            self.changes["trigger"] = trigger
        if accumulation_mode is not None:
            self.changes["accumulation_mode"] = accumulation_mode
        if allowed_lateness is not None:
            lateness = duration_micros(allowed_lateness)
            if lateness < 0:
                raise ValueError(f"allowed_lateness must be >= 0, got {allowed_lateness!r}")
            self.changes["allowed_lateness_us"] = lateness
        if timestamp_combiner is not None:
            self.changes["timestamp_combiner"] = timestamp_combiner

    @property
    def windowing(self) -> WindowingStrategy:
        """What it sets over the defaults (a PCollection's own windowing keeps what it leaves
        unset): the strategy Beam's `WindowInto(...).windowing` gives, as triggers'
        `may_lose_data` takes it."""
        return default_strategy().with_(**self.changes)

    def default_label(self) -> str:
        return f"WindowInto({self.window_fn!r})" if self.window_fn is not None else "Configure"

    def validate(self, node: Any) -> None:
        main = _single_input(node, "WindowInto")
        if self.window_fn is not None:
            _probe_window_fn(self.window_fn, node.label)
        strategy = main.windowing.with_(**self.changes)
        _check_mergeable(strategy, node.label, None)

    def outputs(self, node: Any) -> Dict[Optional[str], PCollection]:
        main = node.inputs[0]
        return {None: main.derive(windowing=main.windowing.with_(**self.changes),
                                  schema=main.schema)}


def _check_mergeable(strategy: WindowingStrategy, label: str, combine_fn: Optional[CombineFn]) -> None:
    if not strategy.window_fn.is_merging():
        return
    if not strategy.trigger.can_merge():
        raise PipelineConstructionError(
            f"{label}: {strategy.window_fn!r} merges windows, but the trigger {strategy.trigger!r} "
            f"cannot merge its state (a custom Trigger must implement on_merge)")
    if combine_fn is not None and not combine_fn.can_merge():
        raise PipelineConstructionError(
            f"{label}: {strategy.window_fn!r} merges windows, but {combine_fn!r} cannot merge "
            f"accumulators (implement merge_accumulators)")


# --- grouping -----------------------------------------------------------------------------------

class KeyValueInputError(TypeCheckError):
    """A grouping applied to elements that are not (key, value) pairs: a construction error,
    and the type-hint violation Beam reports it as."""


class GroupByKey(Primitive):
    """GroupByKeyAndWindow: per key and window, the values as panes the trigger says when to emit."""

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.GROUP

    combine_fn: Optional[CombineFn] = None
    late_tag: Optional[str] = None

    def with_late_output(self, tag: str = "late") -> "GroupByKey":
        """This grouping with the elements it would drop sent, as they came, to a side output
        tagged `tag`: those later than their window's end plus the allowed lateness, and those
        for a window a finished trigger closed (as Flink's late-data output tag). The result
        is then `main, late = ...` (also `out.main`, `out[tag]`)."""
        if not isinstance(tag, str) or not tag or tag == "main":
            raise ValueError(f"{self.label or type(self).__name__}: the late output's tag must "
                             f"be a non-empty str other than 'main', got {tag!r}")
        out = copy.copy(self)
        out.late_tag = tag
        return out

    def result(self, node: Any) -> Any:
        if self.late_tag is not None:
            return DoOutputsTuple("main", node.outputs)
        return node.outputs[None]

    def reducer(self) -> Any:
        return BufferReducer() if self.combine_fn is None else CombineReducer(self.combine_fn)

    def default_type_hints(self) -> IOTypeHints:
        """(K, V) pairs in, (K, an iterable of V) out."""
        return IOTypeHints(((TypingTuple[K, V],), {}), ((TypingTuple[K, TypingIterable[V]],), {}))

    def type_check_inputs(self, pvalue: Any) -> None:
        """Raise TypeCheckError when its input is not of (key, value) pairs (Beam's message,
        then what it needs and where the input comes from)."""
        actual = pvalue.element_type
        if not fits(actual, TypingTuple[K, V]):
            raise generic_violation(self.label or self.default_label(), TypingTuple[K, V],
                                    actual, pvalue)

    def validate(self, node: Any) -> None:
        main = _single_input(node, type(self).__name__)
        label = node.label
        if main.kind == NOT_KV:
            raise KeyValueInputError(
                f"Input type hint violation at {label}: expected Tuple[TypeVariable[K], "
                f"TypeVariable[V]]: {type(self).__name__} needs (key, value) pairs, but "
                f"{main.label} holds elements that are not 2-tuples (map them to (key, value) "
                f"first)")
        strategy = main.windowing
        if (not main.bounded and isinstance(strategy.window_fn, GlobalWindows)
                and not strategy.trigger.fires_before_end_of_window()):
            trigger = ("a default trigger" if isinstance(strategy.trigger, DefaultTrigger)
                       else f"the trigger {strategy.trigger!r}, which fires only at its end")
            raise PipelineConstructionError(
                f"{label}: {type(self).__name__} cannot be applied to an unbounded PCollection "
                f"with global windowing and {trigger} ({main.label}): it would never emit. "
                f"Window it into finite windows (e.g. pm.FixedWindows(60)) or use a trigger "
                f"that fires before the end of the window (e.g. "
                f"pm.Repeatedly(pm.AfterCount(100)))")
        _check_mergeable(strategy, label, self.combine_fn)
        if main.pipeline is not None and main.pipeline.options.allow_unsafe_triggers is False:
            check_safe(strategy, label)   # Beam's check, asked for
        if self.combine_fn is not None and not self.combine_fn.can_retract():
            if strategy.accumulation_mode is AccumulationMode.RETRACTING:
                raise PipelineConstructionError(
                    f"{label}: retracting mode needs a CombineFn with retract_input, and "
                    f"{self.combine_fn!r} has none")
            if main.may_retract:
                raise PipelineConstructionError(
                    f"{label}: {main.label} carries retractions (it is downstream of a retracting "
                    f"grouping), so {self.combine_fn!r} needs retract_input")

    def outputs(self, node: Any) -> Dict[Optional[str], PCollection]:
        main = node.inputs[0]
        s = main.windowing
        out_fn = AssignedWindows() if s.window_fn.is_merging() else s.window_fn
        strategy = s.with_(window_fn=out_fn, trigger=s.trigger.continuation())
        retracting = main.may_retract or s.accumulation_mode is AccumulationMode.RETRACTING
        outs = {None: main.derive(windowing=strategy, kind=KV, may_retract=retracting)}
        if self.late_tag is not None:
            outs[self.late_tag] = main.derive(kind=KV)
        return outs


class CombinePerKey(GroupByKey):
    """Per key and window, the values combined by a CombineFn (or a function of an iterable).
    Given extra arguments (`CombinePerKey(fn, *args, **kwargs)`, side-input views among
    them), it is the composite that passes them to the CombineFn's methods
    (sdk/combine_args.py)."""

    def __new__(cls, fn: Any = None, *args: Any, label: Optional[str] = None,
                **kwargs: Any) -> Any:
        if args or kwargs:
            from .combine_args import CombinePerKeyWithArgs
            return CombinePerKeyWithArgs(fn, *args, label=label, **kwargs)
        return super().__new__(cls)

    def __init__(self, fn: Any, label: Optional[str] = None) -> None:
        super().__init__(label)
        self.combine_fn = as_combine_fn(fn)
        self.fn_label = label_from_callable(fn)

    def default_label(self) -> str:
        return f"CombinePerKey({self.fn_label})"

    def default_type_hints(self) -> IOTypeHints:
        """(K, what its CombineFn takes) in, (K, what it gives) out."""
        return per_key_hints(self.combine_fn)

    def type_check_inputs(self, pvalue: Any) -> None:
        """Raise TypeCheckError when its input is not of (key, value) pairs (Beam's message
        for a grouping), or its values do not fit its CombineFn (Beam's for a ParDo)."""
        hint = self.get_type_hints().first_input()
        actual = pvalue.element_type
        if hint is None or fits(actual, hint):
            return
        label = self.label or self.default_label()
        if not fits(actual, TypingTuple[K, V]):
            raise generic_violation(label, TypingTuple[K, V], actual, pvalue)
        raise element_violation(label, hint, pvalue)

    def with_hot_key_fanout(self, fanout: Union[int, Callable[[Any], int]]) -> PTransform:
        """This combine done in two steps: each key's values first in `fanout` (or
        `fanout(key)`) random parts, then the parts merged (for a key too hot for one
        place)."""
        from .fanout import HotKeyFanout
        return HotKeyFanout(self.combine_fn, fanout)


class CombineGlobally(PTransform):
    """Per window, all values combined by a CombineFn (or a function of an iterable).

    Like Beam, a bounded input in the global window with the default trigger gives the
    combiner's empty result (e.g. 0 for sum) when it has no elements; `without_defaults()`
    gives nothing instead. Other windowings never invent panes for empty windows.
    `as_singleton_view()` gives the result as a side input (`AsSingleton`), which reads the
    combiner's empty result in a window without one (unless `without_defaults()`)."""

    def __init__(self, fn: Any, *args: Any, label: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(label)
        self.combine_fn = as_combine_fn(fn)
        self.fn_label = label_from_callable(fn)
        self.args, self.kwargs = args, kwargs
        self.has_defaults = True
        self.as_view = False
        self.fanout: Union[int, Callable[[Any], int], None] = None

    def default_label(self) -> str:
        return f"CombineGlobally({self.fn_label})"

    def default_type_hints(self) -> IOTypeHints:
        """What its CombineFn gives (what it takes is its inner CombinePerKey's to check)."""
        out = combine_fn_types(self.combine_fn)[1]
        return IOTypeHints(None, None if out is None else ((out,), {}))

    def without_defaults(self) -> "CombineGlobally":
        out = copy.copy(self)
        out.has_defaults = False
        return out

    def with_fanout(self, fanout: Union[int, Callable[[Any], int]]) -> "CombineGlobally":
        """The same combine done in two steps: the values first in `fanout` random parts,
        then the parts merged (`CombinePerKey.with_hot_key_fanout` of the one key)."""
        out = copy.copy(self)
        out.fanout = fanout
        return out

    def as_singleton_view(self) -> "CombineGlobally":
        """The same combine, applied to give an `AsSingleton` side input of its result."""
        out = copy.copy(self)
        out.as_view = True
        return out

    def expand(self, pcoll: PCollection) -> Any:
        keyed = pcoll | "KeyByNone" >> Map(_key_by_none)
        keyed.kind = KV
        combine = CombinePerKey(self.combine_fn, *self.args, **self.kwargs)
        if self.fanout is not None and not (self.args or self.kwargs):
            combine = combine.with_hot_key_fanout(self.fanout)
        combined = keyed | combine | Values()
        fn = self.combine_fn
        if self.as_view:
            if not self.has_defaults:
                return AsSingleton(combined)
            return AsSingleton(combined, default=fn.extract_output(fn.create_accumulator()))
        if (self.has_defaults and not pcoll.bounded
                and isinstance(pcoll.windowing.window_fn, GlobalWindows)):
            logging.getLogger(__name__).error(
                "%s: a default value of CombineGlobally over unbounded collections in the "
                "global window is ill-defined (the window never ends for it to be output): "
                "none is output; use without_defaults()", pcoll.pipeline.scope_label())
        if not (self.has_defaults and pcoll.bounded and pcoll.windowing.is_default):
            return combined
        end_of_global = Timestamp.from_micros(GLOBAL_WINDOW.max_ts)

        def default_if_empty(_: Any, combined_values: list) -> list:
            if combined_values:
                return []
            return [TimestampedValue(fn.extract_output(fn.create_accumulator()), end_of_global)]
        default = (pcoll.pipeline | "DoOnce" >> Create([None])
                   | "DefaultIfEmpty" >> FlatMap(default_if_empty, AsList(combined)))
        return (combined, default) | "WithDefault" >> Flatten()


def _key_by_none(v: Any) -> Any:
    return (None, v)


class CombineValues(PTransform):
    """For (key, iterable) elements, (key, the iterable combined); extra arguments (side-input
    views among them) go to the CombineFn's methods."""

    def __init__(self, fn: Any, *args: Any, label: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(label)
        self.combine_fn = as_combine_fn(fn)
        self.args, self.kwargs = args, kwargs

    def expand(self, pcoll: PCollection) -> PCollection:
        out = pcoll | ParDo(_CombineValuesFn(self.combine_fn), *self.args, **self.kwargs)
        out.kind = KV
        return out


class _CombineValuesFn(DoFn):
    """(key, iterable) to (key, the iterable combined by `fn`), which the runner sets up and
    tears down with the DoFn."""

    def __init__(self, fn: CombineFn) -> None:
        self.fn = fn

    def process(self, kv: Any, *args: Any, **kwargs: Any) -> Iterable[Any]:
        return [(kv[0], combine_all(self.fn, kv[1], *args, **kwargs))]


class Flatten(Primitive):
    """The union of several PCollections with the same windowing: `(pc1, pc2) | Flatten()`,
    any iterable of them (or, applied eagerly, of lists of values). Of none, the empty
    PCollection of `pipeline`, which must then be given, as in Beam."""

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.FLATTEN

    def __init__(self, label: Optional[str] = None, pipeline: Any = None) -> None:
        super().__init__(label)
        self.pipeline = pipeline

    def _extract_input_pvalues(self, pvalueish: Any) -> Any:
        """Each item of the iterable input is an input (a PCollection, or values)."""
        try:
            parts = tuple(pvalueish)
        except TypeError:
            raise ValueError(f"Input to Flatten must be an iterable. Got a value of type "
                             f"{type(pvalueish).__name__} instead.") from None
        if not parts and self.pipeline is not None:   # nothing: an empty Create to flatten
            label = self.label or self.default_label()
            parts = (self.pipeline | f"{label}(nothing)" >> Create([]),)
        return parts, list(parts)
    def infer_output_type(self, input_type: Any) -> Any:
        """Its inputs' element types (their Union)."""
        return input_type

    def validate(self, node: Any) -> None:
        if not node.inputs:
            raise PipelineConstructionError(f"{node.label}: Flatten needs at least one PCollection")
        fns = {repr(pc.windowing.window_fn) for pc in node.inputs}
        if len(fns) > 1:
            raise PipelineConstructionError(
                f"{node.label}: Flatten of PCollections with different windowing {sorted(fns)}; "
                f"window them the same way first")

    def outputs(self, node: Any) -> Dict[Optional[str], PCollection]:
        first = node.inputs[0]
        kinds = {pc.kind for pc in node.inputs}
        return {None: first.derive(bounded=all(pc.bounded for pc in node.inputs),
                                   kind=kinds.pop() if len(kinds) == 1 else UNKNOWN,
                                   may_retract=any(pc.may_retract for pc in node.inputs),
                                   schema=_common_schema(node.inputs))}


def _common_schema(pcolls: List[PCollection]) -> Any:
    schemas = [pc.schema for pc in pcolls]
    if schemas[0] is not None and all(s is not None and s.equals(schemas[0]) for s in schemas):
        return schemas[0]
    return None


class CoGroupByKey(PTransform):
    """Joins keyed PCollections: a dict {tag: pcoll} gives (key, {tag: [values]}), a tuple or
    list gives (key, ([values], [values], ...)). Of none, the empty PCollection of
    `pipeline`, which must then be given, as in Beam."""

    def __init__(self, label: Optional[str] = None, *, pipeline: Any = None) -> None:
        super().__init__(label)
        self.pipeline = pipeline

    def _extract_input_pvalues(self, pvalueish: Any) -> Any:
        """The inputs are a dict's values, or the items of any other iterable."""
        if isinstance(pvalueish, dict):
            return pvalueish, list(pvalueish.values())
        parts = tuple(pvalueish)
        return parts, list(parts)

    def expand(self, inputs: Any) -> PCollection:
        named = isinstance(inputs, dict)
        items = list(inputs.items()) if named else list(enumerate(inputs))
        tags = [t for t, _ in items]
        tagged = []
        for tag, pc in items:
            out = pc | f"Tag[{tag}]" >> Map(_tagger(tag))
            out.kind = KV
            tagged.append(out)
        grouped = tuple(tagged) | Flatten(pipeline=self.pipeline) | GroupByKey()

        def regroup(kv: Any) -> Any:
            buckets: Dict[Any, list] = {t: [] for t in tags}
            for tag, value in kv[1]:
                buckets[tag].append(value)
            return (kv[0], buckets if named else tuple(buckets[t] for t in tags))
        out = grouped | "Regroup" >> Map(regroup)
        out.kind = KV
        return out


def _tagger(tag: Any) -> Callable[[Any], Any]:
    return lambda kv: (kv[0], (tag, kv[1]))


class PartitionFn:
    """Beam's PartitionFn: `partition_for(element, num_partitions, *args, **kwargs)` gives
    the index of the partition an element goes to."""

    def partition_for(self, element: Any, num_partitions: int, *args: Any,
                      **kwargs: Any) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement partition_for")


class _CallablePartitionFn(PartitionFn):
    """A partition function given as a plain callable, as a PartitionFn."""

    def __init__(self, fn: Callable[..., int]) -> None:
        self.fn = fn

    def partition_for(self, element: Any, num_partitions: int, *args: Any,
                      **kwargs: Any) -> int:
        return self.fn(element, num_partitions, *args, **kwargs)


class Partition(PTransform):
    """Splits a PCollection into `n` by `fn(element, n, *args) -> index` (a callable or a
    PartitionFn); returns a tuple of the `n` PCollections."""

    class ApplyPartitionFnFn(DoFn):
        """Sends each element to the output tagged with its partition's index (as a str)."""

        def process(self, element: Any, partitionfn: PartitionFn, n: int, *args: Any,
                    **kwargs: Any) -> Iterable[Any]:
            from .dofn import TaggedOutput
            index = partitionfn.partition_for(element, n, *args, **kwargs)
            if isinstance(index, bool) or not isinstance(index, numbers.Integral):
                raise ValueError(f"PartitionFn yielded a '{index}' when it should only yield "
                                 f"integers")
            if not 0 <= index < n:
                raise ValueError(f"PartitionFn specified out-of-bounds partition index: "
                                 f"{index} not in [0, {n})")
            yield TaggedOutput(str(int(index)), element)

    def __init__(self, fn: Any, n: int, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.fn = fn if isinstance(fn, PartitionFn) else _CallablePartitionFn(fn)
        self.n, self.args, self.kwargs = n, args, kwargs

    def expand(self, pcoll: PCollection) -> tuple:
        n = self.n
        outs = pcoll | ParDo(self.ApplyPartitionFnFn(), self.fn, n, *self.args,
                             **self.kwargs).with_outputs(*(str(i) for i in range(n)))
        result = tuple(outs[str(i)] for i in range(n))
        for pc in result:
            pc.kind = pcoll.kind
        return result


class Impulse(Create):
    """Beam's root transform: one element, the empty bytes `b""`, in the global window."""

    def __init__(self, label: Optional[str] = None) -> None:
        super().__init__([b""], label)


class FlattenWith(PTransform):
    """Beam's `pcoll | FlattenWith(*others)`: the input flattened with `others`, each a
    PCollection or a root transform (a source, applied to the input's pipeline)."""

    def __init__(self, *others: Any) -> None:
        super().__init__()
        self.others = others

    def expand(self, pcoll: PCollection) -> PCollection:
        inputs = [pcoll]
        for i, other in enumerate(self.others):
            if isinstance(other, PTransform):
                other = pcoll.pipeline | f"Input{i}" >> other
            if not isinstance(other, PCollection):
                raise TypeError(f"FlattenWith takes PCollections and root transforms, got "
                                f"{other!r}")
            inputs.append(other)
        return tuple(inputs) | Flatten()


class Tee(PTransform):
    """Beam's `pcoll | Tee(*consumers)`: each consumer (a transform, or a function of the
    PCollection) applied to the input, what it gives discarded; gives the input, so a chain
    can go on from it."""

    def __init__(self, *consumers: Union[PTransform, Callable[[PCollection], Any]]) -> None:
        super().__init__()
        self.consumers = consumers

    def expand(self, pcoll: PCollection) -> PCollection:
        for consumer in self.consumers:
            if isinstance(consumer, PTransform):
                pcoll | consumer
            else:
                consumer(pcoll)
        return pcoll


class CountPerElement(PTransform):
    """(element, how many times it occurs) per window: Beam's `Count.PerElement()`."""

    def expand(self, pcoll: PCollection) -> PCollection:
        keyed = pcoll | "KeyByElement" >> Map(lambda v: (v, None))
        keyed.kind = KV
        return keyed | CombinePerKey(Count())


class Distinct(PTransform):
    """Each distinct element once per window (and pane)."""

    def expand(self, pcoll: PCollection) -> PCollection:
        counted = pcoll | CountPerElement()
        present = counted | "Present" >> Filter(lambda kv: kv[1] > 0)
        out = present | Keys()
        out.kind = pcoll.kind
        return out


def Keys(label: str = "Keys") -> Map:
    """The keys of (key, value) elements (`label` names the step, as Beam's argument does)."""
    return Map(_key, label=label)


def Values(label: str = "Values") -> Map:
    """The values of (key, value) elements."""
    return Map(_value, label=label)


def KvSwap(label: str = "KvSwap") -> Map:
    """(key, value) -> (value, key)."""
    out = Map(_swap, label=label)
    out.output_kind = KV
    return out


def _key(kv: Any) -> Any:
    return kv[0]


def _value(kv: Any) -> Any:
    return kv[1]


def _swap(kv: Any) -> Any:
    return (kv[1], kv[0])
