"""Runner-neutral execution of the element-wise primitives, ParDo and WindowInto, over bundles
of WindowedValues. Every runner runs these the same way (the local runner in its stages,
Spark inside its Arrow tasks); runners add only where bundles come from and go to."""
from __future__ import annotations

import logging
import traceback
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from ..windowing import (GLOBAL_WINDOW, MIN_MICROS, NO_FIRING, GlobalWindows, TimestampedValue,
                         WindowedValue)
from ..sdk.core import ParDo, WindowInto
from ..sdk.dofn import DeadLetter, TaggedOutput, context_params, make_invoker
from ..sdk.errors import UserCodeError
from ..sdk.pvalue import SideInput
from ..sdk.user_metrics import MetricsContainer, enter
from .batches import BatchCaller, metadata, split
from . import combine_lifecycle
from .combine_lifecycle import combine_fns_of
from .isolation import isolate

raw = WindowedValue.raw
_LOG = logging.getLogger(__name__)
# outputs that say more than a value (`DoFnRunner.emit`)
_WRAPPED = (TaggedOutput, WindowedValue, TimestampedValue)
Outputs = Dict[Optional[str], list]
SideArgs = Callable[[Any], Tuple[tuple, dict]]


def user_code_error(label: str, element: Any, exc: BaseException,
                    subject: str = "element") -> UserCodeError:
    """The error a failing user function becomes: the transform, the element (or what else
    `subject` says it failed on), the traceback."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return UserCodeError(f"transform {label!r} failed on {subject} {element!r}: "
                         f"{type(exc).__name__}: {exc}\n\nOriginal traceback:\n{tb}")


def start_bundle(dofn: Any, label: str) -> None:
    """The DoFn's start_bundle, which must return nothing (its outputs would be lost: a
    bundle's are process's and finish_bundle's), as Beam's."""
    if dofn.start_bundle() is not None:
        raise RuntimeError(f"{label}: {type(dofn).__name__}.start_bundle must not return a "
                           f"value (it may not output; finish_bundle may)")


def returned_error(label: str, returned: Any) -> TypeError:
    """The error for a FlatMap or DoFn whose return is not an iterable of outputs: a str,
    bytes or dict (whose items Beam would take for outputs), or something not iterable."""
    kind = type(returned).__name__
    if isinstance(returned, (str, bytes, dict)):
        return TypeError(f"{label} must return an iterable of outputs, got a {kind} (wrap a "
                         f"single output in a list): Returning a {kind} from a ParDo or "
                         f"FlatMap is discouraged.")
    return TypeError(f"{label}: FlatMap and ParDo must return an iterable. {kind} was "
                     f"returned instead (wrap a single output in a list)")


def raised_here(e: BaseException, code: Any) -> bool:
    """Whether `e` was raised in a frame running `code` itself (not in a function it
    called)."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code is code


# how many of a failing batch's elements its error shows
_SHOWN = 5


def _batch_error(label: str, rows: List[WindowedValue], exc: BaseException) -> UserCodeError:
    """The error a failing process_batch becomes: the transform and the batch."""
    shown = ", the first" if len(rows) > _SHOWN else ":"
    return user_code_error(label, [wv.value for wv in rows[:_SHOWN]], exc,
                           f"a batch of {len(rows)} elements{shown}")


class DoFnRunner:
    """Runs one ParDo (or Map, FlatMap, Filter) over bundles: the function called with its
    context parameters and side-input views, outputs by tag (a TimestampedValue sets the
    time, a TaggedOutput picks the output), the DoFn lifecycle, and failing elements sent to
    the dead-letter output when there is one (`dead_count` counts them), and the user metrics
    the function updates in `metrics` (the thread's current container while it runs). A
    batched DoFn's
    `process_batch` is called on batches instead (`runtime/batches.py`); `input_schema`, the
    input PCollection's schema, types the Arrow batches it gets."""

    def __init__(self, transform: ParDo, tags: Iterable[Optional[str]], label: str,
                 input_schema: Optional[Any] = None) -> None:
        self.t = transform
        self.tags = list(tags)
        self.label = label
        self.call = transform.call
        self.dead_tag = transform.dead_letter_tag
        self.dead_count = 0
        self.metrics = MetricsContainer()
        fn = transform.fn.process if self.call == "dofn" else transform.fn
        self.invoke = make_invoker(fn, bool(transform.args or transform.kwargs))
        self.dofn = transform.fn if self.call == "dofn" else None
        # the CombineFns its DoFn calls (a stateful DoFn's host adds its combining states')
        self.combine_fns = combine_fns_of(transform)
        # A Map without side inputs or dead letters runs a lean loop (_map_bundle); the function
        # is called directly when it takes nothing but the element.
        self.lean_map = (self.call == "map" and self.dead_tag is None
                         and not transform.side_inputs())
        self.direct = fn if not (transform.args or transform.kwargs or context_params(fn)) else None
        self.batch = (BatchCaller(transform.fn, transform.batch_types, input_schema,
                                  bool(transform.args or transform.kwargs))
                      if transform.batch_types is not None else None)
        # with_exception_handling: which errors become dead letters, whether a failing
        # element's outputs are withdrawn, and its calls bounded in time or in a subprocess
        handling = transform.exception_handling if self.dead_tag is not None else None
        self.catches = handling.exc_class if handling is not None else Exception
        self.withdraws = self.dead_tag is not None and not (handling is not None
                                                            and handling.partial)
        self.on_failure = handling.on_failure_callback if handling is not None else None
        if handling is not None and handling.isolates:
            self.invoke, self.dofn = isolate(handling, self.invoke, self.dofn, label,
                                             self.call in ("flat_map", "dofn"),
                                             lambda: self.metrics)
            self.direct = None

    def setup(self) -> None:
        combine_lifecycle.acquire(self.combine_fns)
        if self.dofn is not None:
            self._counting(self.dofn.setup)

    def teardown(self) -> None:
        try:
            if self.dofn is not None:
                self._counting(self.dofn.teardown)
        finally:
            combine_lifecycle.release(self.combine_fns)

    def _counting(self, method: Callable[[], Any]) -> Any:
        """`method()`, the user metrics it updates counted as this transform's."""
        prev = enter(self.metrics)
        try:
            return method()
        finally:
            enter(prev)

    def process(self, bundle: List[WindowedValue], owned: bool = False,
                side_args: Optional[SideArgs] = None) -> Outputs:
        """The outputs, by tag, of one bundle. `owned`: the elements are this transform's
        alone, so a Map may update them in place. `side_args(window)` gives the (args, kwargs)
        with side-input views for elements in that window."""
        prev = enter(self.metrics)
        try:
            return self._process(bundle, owned, side_args)
        finally:
            enter(prev)

    def _process(self, bundle: List[WindowedValue], owned: bool,
                 side_args: Optional[SideArgs]) -> Outputs:
        if self.lean_map:
            return self._map_bundle(bundle, owned)
        if self.batch is not None:
            return self._batch_bundle(bundle, side_args)
        outs: Outputs = {tag: [] for tag in self.tags}
        main = outs[None]
        invoke, call = self.invoke, self.call
        args, kwargs = self.t.args, self.t.kwargs
        per_window: Dict[Any, tuple] = {}   # side data cannot change within a bundle
        if self.dofn is not None:
            start_bundle(self.dofn, self.label)
        dead_tag, withdraws, marks = self.dead_tag, self.withdraws, ()
        for wv in bundle:
            if withdraws:   # a failing element's partial outputs are withdrawn
                marks = [(items, len(items)) for items in outs.values()]
            try:
                if side_args is not None:
                    cached = per_window.get(wv.window)
                    if cached is None:
                        cached = per_window[wv.window] = side_args(wv.window)
                    args, kwargs = cached
                r = invoke(wv.value, wv, args, kwargs)
                if call == "map":
                    self._map_out(r, wv, outs)
                elif call == "filter":
                    if r:
                        main.append(wv)
                elif r is not None:
                    if isinstance(r, (str, bytes, dict)):
                        raise returned_error(self.label, r)
                    ts, window, pane, diff = wv.ts, wv.window, wv.pane, wv.diff
                    for item in r:   # `emit`, a plain value's case inlined
                        if type(item) in _WRAPPED:
                            self.emit(item, wv, outs)
                        else:
                            main.append(raw(item, ts, window, pane, diff))
            except Exception as e:
                if (call not in ("map", "filter") and isinstance(e, TypeError)
                        and raised_here(e, DoFnRunner._process.__code__)):
                    e = returned_error(self.label, r)   # what it returned is not iterable
                if dead_tag is None or not isinstance(e, self.catches):
                    raise user_code_error(self.label, wv.value, e) from e
                for items, n in marks:
                    del items[n:]
                self.dead_letter(wv.value, wv, e, outs)
        if self.dofn is not None:
            self.finish_bundle_to(outs)
        return outs

    def dead_letter(self, value: Any, wv: WindowedValue, exc: BaseException,
                    outs: Outputs) -> None:
        """`value` (of input `wv`) failed with `exc`: its dead letter added to `outs`, after
        the on_failure_callback, whose own failure is logged, not raised (as Beam's)."""
        self.dead_count += 1
        if self.on_failure is not None:
            try:
                self.on_failure(exc, value)
            except Exception as e:
                _LOG.warning("%s: on_failure_callback failed with error: %s", self.label, e)
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        letter = DeadLetter(value, self.label, f"{type(exc).__name__}: {exc}", tb, type(exc),
                            repr(exc))
        outs[self.dead_tag].append(raw(letter, wv.ts, wv.window, wv.pane, 1))

    def finish_bundle_to(self, outs: Outputs) -> None:
        """The DoFn's finish_bundle, its outputs added to `outs` (this runner's bundles and the
        stateful-DoFn host's)."""
        try:
            finished = self.dofn.finish_bundle()
            for item in finished or ():
                self.emit(item, None, outs)
        except Exception as e:
            raise user_code_error(self.label, "<finish_bundle>", e) from e

    def _batch_bundle(self, bundle: List[WindowedValue], side_args: Optional[SideArgs]
                      ) -> Outputs:
        """process for a batched DoFn: the bundle as one batch, split by window when side
        inputs are read and into homogeneous batches when process_batch reads the timestamp,
        window or pane."""
        outs: Outputs = {tag: [] for tag in self.tags}
        start_bundle(self.dofn, self.label)
        if self.batch.homogeneous:
            batches = split(bundle, metadata)
        elif side_args is not None:
            batches = split(bundle, lambda wv: wv.window)
        else:
            batches = [bundle] if bundle else []
        args, kwargs = self.t.args, self.t.kwargs
        for rows in batches:
            if side_args is not None:
                args, kwargs = side_args(rows[0].window)
            self._run_batch(rows, args, kwargs, outs)
        self.finish_bundle_to(outs)
        return outs

    def _run_batch(self, rows: List[WindowedValue], args: tuple, kwargs: dict,
                   outs: Outputs) -> None:
        """process_batch on `rows`, its outputs given the rows' metadata: row i's to output i
        when there are as many; else the batch's when it is homogeneous; else process_batch
        is called again per homogeneous group. A failure sends every row to the dead-letter
        output when there is one."""
        try:
            values = self.batch(rows, args, kwargs)
        except Exception as e:
            if self.dead_tag is None or not isinstance(e, self.catches):
                raise _batch_error(self.label, rows, e) from e
            for wv in rows:
                self.dead_letter(wv.value, wv, e, outs)
            return
        main = outs[None]
        if len(values) == len(rows):
            main.extend(raw(v, wv.ts, wv.window, wv.pane, wv.diff)
                        for v, wv in zip(values, rows))
            return
        groups = split(rows, metadata)
        if len(groups) == 1:
            wv = rows[0]
            main.extend(raw(v, wv.ts, wv.window, wv.pane, wv.diff) for v in values)
            return
        for group in groups:
            self._run_batch(group, args, kwargs, outs)

    def _map_bundle(self, bundle: List[WindowedValue], owned: bool) -> Outputs:
        """process for a Map without side inputs or dead letters: the same outputs."""
        outs: Outputs = {tag: [] for tag in self.tags}
        direct, invoke = self.direct, self.invoke
        args, kwargs = self.t.args, self.t.kwargs
        map_out = self._map_out
        main = outs[None]
        for wv in bundle:
            try:
                r = direct(wv.value) if direct is not None else invoke(wv.value, wv, args, kwargs)
            except Exception as e:
                raise user_code_error(self.label, wv.value, e) from e
            if owned:   # the input updated in place
                tr = type(r)
                if tr is TimestampedValue:
                    wv.value, wv.ts = r.value, r.ts
                    main.append(wv)
                    continue
                if tr is not TaggedOutput and tr is not WindowedValue:
                    wv.value = r
                    main.append(wv)
                    continue
            map_out(r, wv, outs)
        return outs

    def _map_out(self, r: Any, wv: WindowedValue, outs: Outputs) -> None:
        """A Map's result `r` for input `wv`, as a new element: a TimestampedValue sets the
        time, a WindowedValue the time and window, a TaggedOutput the output."""
        tr = type(r)
        if tr is TaggedOutput or tr is WindowedValue:
            self.emit(r, wv, outs)
        elif tr is TimestampedValue:
            outs[None].append(raw(r.value, r.ts, wv.window, wv.pane, wv.diff))
        else:
            outs[None].append(raw(r, wv.ts, wv.window, wv.pane, wv.diff))

    def emit(self, item: Any, wv: Optional[WindowedValue], outs: Outputs) -> None:
        """One output of the DoFn for input `wv` (None from finish_bundle) added to its tag's
        list in `outs`: a plain value takes `wv`'s metadata, a TimestampedValue its own time,
        a WindowedValue is copied whole."""
        tag = None
        if type(item) is TaggedOutput:
            tag, item = item.tag, item.value
            if tag not in outs:
                if self.t.allow_unknown_tags:   # with_outputs(): a tag never asked for
                    return
                raise ValueError(f"output tag {tag!r} was not declared; declare it with "
                                 f".with_outputs({tag!r})")
        target = outs[tag]
        if type(item) is WindowedValue:   # copied: a DoFn may yield one object twice
            target.append(raw(item.value, item.ts, item.window, item.pane, item.diff))
        elif wv is None:
            if type(item) is TimestampedValue:
                target.append(raw(item.value, item.ts, GLOBAL_WINDOW, NO_FIRING, 1))
            else:
                raise TypeError("finish_bundle must yield WindowedValue or TimestampedValue")
        elif type(item) is TimestampedValue:
            target.append(raw(item.value, item.ts, wv.window, wv.pane, wv.diff))
        else:
            target.append(raw(item, wv.ts, wv.window, wv.pane, wv.diff))


def side_inputs_ready(sides: List[Any], side_wms: Sequence[int], window: Any) -> bool:
    """Whether a main-input element in `window` may run: each side input's watermark (in
    `side_wms`) has passed the end of the side window the element reads."""
    return all(wm > side.pcoll.windowing.window_fn.side_input_window(window).max_ts
               for side, wm in zip(sides, side_wms))


def side_input_args(transform: ParDo, sides: List[Any],
                    values_of: Callable[[int, Any], list]) -> SideArgs:
    """`side_args(window)` for DoFnRunner.process: the transform's arguments with each side
    input replaced by its view of the values `values_of(j, side_window)` gives for side input
    `j` in the side window that `window` reads."""
    def side_args(window: Any) -> Tuple[tuple, dict]:
        views = {}
        for j, side in enumerate(sides):
            side_window = side.pcoll.windowing.window_fn.side_input_window(window)
            views[id(side)] = side.view(values_of(j, side_window))
        args = tuple(views[id(a)] if isinstance(a, SideInput) else a for a in transform.args)
        kwargs = {k: views[id(v)] if isinstance(v, SideInput) else v
                  for k, v in transform.kwargs.items()}
        return args, kwargs
    return side_args


def assign_windows(transform: WindowInto, bundle: List[WindowedValue], owned: bool,
                   label: str) -> List[WindowedValue]:
    """WindowInto over a bundle: each element in each window its WindowFn assigns (updated in
    place when `owned` and there is one), or passed through for a re-trigger or a WindowFn
    that keeps windows. A custom
    WindowFn's windows are checked to contain the element's time."""
    fn = transform.window_fn
    if fn is None or fn.keeps_windows:
        return bundle
    if type(fn) is GlobalWindows:   # one window for all: no call per element
        if owned:
            for wv in bundle:
                wv.window = GLOBAL_WINDOW
            return list(bundle)
        return [raw(wv.value, wv.ts, GLOBAL_WINDOW, wv.pane, wv.diff) for wv in bundle]
    assign, check = fn.assign_micros, not fn.is_builtin()
    out: List[WindowedValue] = []
    append = out.append
    for wv in bundle:
        try:
            windows = assign(wv.ts, wv.value)
        except Exception as e:
            raise user_code_error(label, wv.value, e) from e
        if check:
            for w in windows:
                if not (getattr(w, "start_us", MIN_MICROS) <= wv.ts <= w.max_ts):
                    raise UserCodeError(
                        f"transform {label!r}: {fn!r} assigned {w!r} to an element at "
                        f"{wv.timestamp!r}, which that window does not contain "
                        f"(element {wv.value!r})")
        if owned and len(windows) == 1:
            wv.window = windows[0]
            append(wv)
        else:
            for w in windows:
                append(raw(wv.value, wv.ts, w, wv.pane, wv.diff))
    return out
