"""DoFn, its parameters and outputs, and how the runner calls user functions.

`make_invoker` inspects a function once and returns a fast closure
`(value, wv, side_args, side_kwargs) -> result`, so per-element calls pay only for what the
function asked for (its timestamp, window or pane).
"""
from __future__ import annotations

import collections.abc
import copy
import inspect
import sys
import types
import typing
from operator import attrgetter
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Optional

from .userstate import StateParam, TimerParam


class _Param:
    """A DoFn context-parameter marker; unpickles as the same marker (runners find the
    parameters by identity, also in a function shipped to a Spark worker)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self):
        return (getattr, (DoFn, self.name))

    def __repr__(self) -> str:
        return f"DoFn.{self.name}"


class DoFn:
    """Per-element processing with a lifecycle: setup, start_bundle, process, finish_bundle,
    teardown. `process(self, element, ...)` returns or yields outputs: plain values (keeping
    the input's timestamp, window, pane and diff), `TimestampedValue`s, or `TaggedOutput`s.
    It may ask for `timestamp=DoFn.TimestampParam`, `window=DoFn.WindowParam`,
    `pane=DoFn.PaneInfoParam`, `diff=DoFn.DiffParam` (-1 for a retraction), the element as a
    WindowedValue (`DoFn.WindowedValueParam`), a (key, value) element's key
    (`DoFn.KeyParam`), and receives
    side inputs as the extra arguments of `ParDo`. A stateful DoFn also asks for its key,
    state cells and timers (`sdk/userstate.py`).

    A batched DoFn defines `process_batch(self, batch, ...)` (instead of, or as well as,
    `process`, which it is then preferred to): called with many elements at once, as the
    batch type its first parameter's type hint declares (see `BATCH_TYPES`), it returns or
    yields batches of the type its return hint declares (the input's by default), which the
    runner turns back into elements. See `pomset/runtime/batches.py` for how batches are
    formed and which timestamp, window, pane and diff their outputs get."""

    # Beam's default for the element parameter itself (`element=DoFn.ElementParam`)
    ElementParam = _Param("ElementParam")
    # Beam's default for a parameter that takes the next of ParDo's side inputs
    SideInputParam = _Param("SideInputParam")
    TimestampParam = _Param("TimestampParam")
    WindowParam = _Param("WindowParam")
    PaneInfoParam = _Param("PaneInfoParam")
    # the element's diff: +1, or -1 for a retraction (downstream of a retracting grouping)
    DiffParam = _Param("DiffParam")
    # a stateful DoFn's (see `sdk/userstate.py`): its key, state cells, timers, and in a timer
    # callback the dynamic timer's tag
    KeyParam = _Param("KeyParam")
    # the element as a WindowedValue (its value, timestamp, windows, pane)
    WindowedValueParam = _Param("WindowedValueParam")
    DynamicTimerTagParam = _Param("DynamicTimerTagParam")
    StateParam = StateParam
    TimerParam = TimerParam

    @staticmethod
    def unbounded_per_element() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Beam's decorator of a `process` that may output without end for one element (a
        watch, a periodic impulse): its ParDo's output is unbounded, with what that asks of
        groupings downstream (windows, or triggers that fire early)."""
        def mark(process: Callable[..., Any]) -> Callable[..., Any]:
            process.unbounded_per_element = True
            return process
        return mark

    def setup(self) -> None:
        pass

    def start_bundle(self) -> None:
        pass

    def process(self, element: Any, *args: Any, **kwargs: Any) -> Optional[Iterable[Any]]:
        raise NotImplementedError(f"{type(self).__name__} must implement process(element, ...)")

    def finish_bundle(self) -> Optional[Iterable[Any]]:
        return None

    def teardown(self) -> None:
        pass

    def default_label(self) -> str:
        return type(self).__name__


def copy_dofn(fn: DoFn) -> DoFn:
    """A shallow copy of `fn` whose methods bound to `fn` itself as attributes (a checked
    `process`, say) are bound to the copy, so that the copy calls them on its own state."""
    out = copy.copy(fn)
    for name, value in vars(fn).items():
        if isinstance(value, types.MethodType) and value.__self__ is fn:
            setattr(out, name, types.MethodType(value.__func__, out))
    return out


class TaggedOutput:
    """An output of a DoFn to the side output named `tag` (see `ParDo.with_outputs`).
    `TaggedOutput[Literal['tag'], T]` is the type hint of such an output, in the union a
    `process` annotates it yields: the side output `tag` then holds `T`s."""

    __slots__ = ("tag", "value")

    def __init__(self, tag: str, value: Any) -> None:
        if not isinstance(tag, str):
            raise TypeError(f"Attempting to create a TaggedOutput with non-string tag {tag!r}")
        self.tag, self.value = tag, value

    def __class_getitem__(cls, tag_and_type: Any) -> Any:
        return types.GenericAlias(cls, tag_and_type)

    def __repr__(self) -> str:
        return f"TaggedOutput({self.tag!r}, {self.value!r})"


class DeadLetter:
    """What a transform with `.with_exception_handling()` emits for an element that failed:
    the element, the transform's label, the error (`"ValueError: ..."`) and its traceback.
    It is also Beam's dead letter, the pair `(element, (exception type, repr of the
    exception, traceback lines))`: it unpacks, and indexes, as that pair (`bad | Keys()`,
    `MapTuple(lambda element, exc_info: ...)`). A source's dead letter (a malformed record)
    has no exception: its type is None and its repr the error. `DeadLetter[T]` is the type
    hint of a dead-letter output whose elements were `T`s."""

    __slots__ = ("element", "transform", "error", "traceback", "exc_type", "exc_repr")

    def __init__(self, element: Any, transform: str, error: str, traceback: str,
                 exc_type: Optional[type] = None, exc_repr: Optional[str] = None) -> None:
        self.element, self.transform, self.error, self.traceback = element, transform, error, traceback
        self.exc_type, self.exc_repr = exc_type, exc_repr

    def __class_getitem__(cls, element_type: Any) -> Any:
        return types.GenericAlias(cls, element_type)

    @property
    def exc_info(self) -> tuple:
        """Beam's error triple: (exception type, repr of the exception, traceback lines)."""
        return (self.exc_type, self.error if self.exc_repr is None else self.exc_repr,
                self.traceback.splitlines(keepends=True))

    def _pair(self) -> tuple:
        return (self.element, self.exc_info)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._pair())

    def __getitem__(self, index: Any) -> Any:
        return self._pair()[index]

    def __len__(self) -> int:
        return 2

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeadLetter) and (self.element, self.transform, self.error) == (
            other.element, other.transform, other.error)

    def __hash__(self) -> int:
        return hash((self.transform, self.error))

    def __repr__(self) -> str:
        return f"DeadLetter({self.element!r}, transform={self.transform!r}, error={self.error!r})"


_TIME_PARAMS = {
    id(DoFn.TimestampParam): attrgetter("timestamp"),
    id(DoFn.WindowParam): attrgetter("window"),
    id(DoFn.PaneInfoParam): attrgetter("pane"),
    id(DoFn.DiffParam): attrgetter("diff"),
    id(DoFn.ElementParam): attrgetter("value"),
    id(DoFn.WindowedValueParam): lambda wv: wv,
    id(DoFn.KeyParam): lambda wv: wv.value[0],   # of a (key, value) element
}


def context_params(fn: Callable) -> dict:
    """Parameters of `fn` after the element (its first, which gets the element whatever its
    default, `DoFn.ElementParam` too) whose default is a DoFn.*Param marker: name -> getter."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return {}
    return {name: _TIME_PARAMS[id(p.default)] for name, p in list(sig.parameters.items())[1:]
            if id(p.default) in _TIME_PARAMS}


def _positional(fn: Callable, names: list) -> bool:
    """Whether the context params are exactly the positional parameters after the element."""
    params = list(inspect.signature(fn).parameters.values())
    return [p.name for p in params[1:]] == names and all(
        p.kind is p.POSITIONAL_OR_KEYWORD for p in params)


def make_invoker(fn: Callable, has_side: bool) -> Callable[[Any, Any, tuple, dict], Any]:
    """A closure calling `fn(value, *side_args, <context params>, **side_kwargs)`."""
    params = context_params(fn)
    if not params and not has_side:
        return lambda value, wv, args, kwargs: fn(value)
    if not params:
        return lambda value, wv, args, kwargs: fn(value, *args, **kwargs)
    items = tuple(params.items())
    sides = tuple(name for name, p in inspect.signature(fn).parameters.items()
                  if p.default is DoFn.SideInputParam)
    if not has_side and _positional(fn, [name for name, _ in items]):
        if len(items) == 1:
            get = items[0][1]
            return lambda value, wv, args, kwargs: fn(value, get(wv))
        getters = tuple(get for _, get in items)
        return lambda value, wv, args, kwargs: fn(value, *[g(wv) for g in getters])

    def invoke(value, wv, args, kwargs):
        extra = {name: get(wv) for name, get in items}
        if sides:   # side inputs go to the parameters marked DoFn.SideInputParam, in order
            extra.update(zip(sides, args))
            args = args[len(sides):]
        if kwargs:
            extra.update(kwargs)
        return fn(value, *args, **extra)
    return invoke


#: The batch types a `process_batch` may declare (the type hint of its batch parameter, and
#: of what it returns or yields): by name, (module, class). Rows (dicts) go in and out of
#: Arrow record batches, tables and pandas DataFrames; numbers in and out of numpy arrays.
BATCH_TYPES = {
    "pyarrow.RecordBatch": ("pyarrow", "RecordBatch"),
    "pyarrow.Table": ("pyarrow", "Table"),
    "pandas.DataFrame": ("pandas", "DataFrame"),
    "numpy.ndarray": ("numpy", "ndarray"),
}

# what a return hint may wrap its batch type in: the batches yielded, or returned as a list
_BATCH_CONTAINERS = (collections.abc.Iterator, collections.abc.Iterable,
                     collections.abc.Generator, list)


class BatchTypes(NamedTuple):
    """A batched DoFn's declared batch types, as names in `BATCH_TYPES`."""

    input: str
    output: str


def _batch_type_name(hint: Any) -> Optional[str]:
    """The name in BATCH_TYPES of a type hint (`numpy.typing.NDArray[...]` is an ndarray);
    None when it is none of them. A hint naming a class has its module imported already."""
    hint = typing.get_origin(hint) or hint
    for name, (module, cls) in BATCH_TYPES.items():
        mod = sys.modules.get(module)
        if mod is not None and hint is getattr(mod, cls, None):
            return name
    return None


def batch_types(fn: DoFn) -> Optional[BatchTypes]:
    """The batch types of `fn.process_batch` from its type hints; None when `fn` has no
    process_batch. Raises TypeError naming the DoFn and the accepted types when the batch
    parameter's hint, or the return hint, is not one of them: the runner needs the batch
    type to build batches, and cannot guess it from elements."""
    method = getattr(fn, "process_batch", None)
    if method is None:
        return None
    name = f"{type(fn).__name__}.process_batch"
    accepted = ", ".join(BATCH_TYPES)
    params = list(inspect.signature(method).parameters.values())
    if not params or params[0].kind not in (inspect.Parameter.POSITIONAL_ONLY,
                                            inspect.Parameter.POSITIONAL_OR_KEYWORD):
        raise TypeError(f"{name} must take the batch as its first parameter")
    try:
        hints = typing.get_type_hints(method)
    except Exception as e:
        raise TypeError(f"{name}: its type hints cannot be resolved ({type(e).__name__}: "
                        f"{e}); the batch type must be one of {accepted}") from None
    batch_param = params[0].name
    input_type = _batch_type_name(hints.get(batch_param))
    if input_type is None:
        got = hints.get(batch_param, "no type hint")
        raise TypeError(f"{name} must declare the type of its batch parameter "
                        f"{batch_param!r} with a type hint, one of {accepted} (got {got})")
    if "return" not in hints:
        return BatchTypes(input_type, input_type)
    ret = hints["return"]
    inner = typing.get_args(ret)
    if typing.get_origin(ret) in _BATCH_CONTAINERS and inner:
        ret = inner[0]
    output_type = _batch_type_name(ret)
    if output_type is None:
        raise TypeError(f"{name} must return or yield batches of one of {accepted} (as its "
                        f"return hint, e.g. Iterator[pandas.DataFrame]; none: the input's "
                        f"type), got {hints['return']}")
    return BatchTypes(input_type, output_type)
