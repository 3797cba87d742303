"""Beam's `ParDo.with_exception_handling`: which errors an element's failure may send to the
dead-letter output, and how its calls run (bounded in time, in a subprocess). The runner's
DoFnRunner applies it (`runtime/elementwise.py`, `runtime/isolation.py`); the ratio of failures
a run tolerates (`threshold`) and an `ErrorHandler` are composites of ordinary transforms
around the ParDo, so every runner runs them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple, Type, Union

from .dofn import DoFn
from .ptransform import PTransform
from .pvalue import DoOutputsTuple, PCollection

ExcClass = Union[Type[BaseException], Tuple[Type[BaseException], ...]]


@dataclass(frozen=True)
class ExceptionHandling:
    """How a ParDo with a dead-letter output treats a failing element: only errors of
    `exc_class` go to it (others fail the run); unless `partial`, what the element output
    before it failed is withdrawn; `on_failure_callback(exception, element)` is called for
    each; `timeout` (seconds) bounds each call; `use_subprocess` runs the DoFn in a
    subprocess of the worker, so that a crash (a segfault, `os._exit`) fails the element, not
    the run."""

    exc_class: ExcClass = Exception
    partial: bool = False
    use_subprocess: bool = False
    timeout: Optional[float] = None
    on_failure_callback: Optional[Callable[[BaseException, Any], None]] = None

    def __post_init__(self) -> None:
        if self.partial and self.use_subprocess:
            raise ValueError("partial and use_subprocess are mutually incompatible: a "
                             "subprocess hands back an element's outputs all at once")
        classes = self.exc_class if isinstance(self.exc_class, tuple) else (self.exc_class,)
        if not all(isinstance(c, type) and issubclass(c, BaseException) for c in classes):
            raise TypeError(f"exc_class must be an exception class or a tuple of them, got "
                            f"{self.exc_class!r}")
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {self.timeout!r}")

    @property
    def isolates(self) -> bool:
        """Whether calls run apart from the worker's thread (a timeout, or a subprocess)."""
        return self.use_subprocess or self.timeout is not None


def _one(_: Any) -> int:
    return 1


class _CheckThreshold:
    """Fails the run when a window's failures exceed `threshold` of its elements."""

    def __init__(self, threshold: float, label: str) -> None:
        self.threshold, self.label = threshold, label

    def __call__(self, bad: int, total: int, window: Any = DoFn.WindowParam) -> None:
        if bad > total * self.threshold:
            raise ValueError(f"{self.label}: the number of failing elements within the window "
                             f"{window!r} exceeded the threshold: {bad} / {total} = "
                             f"{bad / total} > {self.threshold}")


class _MaybeWindow(PTransform):
    """The threshold's windowing: `window_fn`'s, or the input's when None."""

    def __init__(self, window_fn: Any) -> None:
        super().__init__()
        self.window_fn = window_fn

    def expand(self, pcoll: PCollection) -> PCollection:
        from .core import WindowInto
        return pcoll if self.window_fn is None else pcoll | WindowInto(self.window_fn)


class GuardedParDo(PTransform):
    """A ParDo with exception handling and what surrounds it: a check, per window of
    `threshold_windowing` (the input's by default), that at most `threshold` of the elements
    failed; and, with an `error_handler`, the dead letters handed to it, the result then
    being the main output alone (or, with side outputs, the outputs but the dead letters)."""

    def __init__(self, pardo: Any, threshold: float, threshold_windowing: Any,
                 error_handler: Any) -> None:
        super().__init__(pardo.label)
        self.pardo = pardo
        self.threshold, self.threshold_windowing = threshold, threshold_windowing
        self.error_handler = error_handler

    def default_label(self) -> str:
        return self.pardo.default_label()

    def _with(self, pardo: Any) -> "GuardedParDo":
        return GuardedParDo(pardo, self.threshold, self.threshold_windowing, self.error_handler)

    def with_outputs(self, *tags: str, main: Optional[str] = None,
                     allow_unknown_tags: Optional[bool] = None) -> "GuardedParDo":
        """The ParDo's `with_outputs`, keeping the threshold and error handler."""
        return self._with(self.pardo.with_outputs(*tags, main=main,
                                                  allow_unknown_tags=allow_unknown_tags))

    def with_resource_hints(self, **hints: Any) -> "GuardedParDo":
        """The ParDo's resource hints (`PTransform.with_resource_hints`)."""
        self.pardo.with_resource_hints(**hints)
        return self

    def get_resource_hints(self) -> dict:
        return self.pardo.get_resource_hints()

    def expand(self, pcoll: PCollection) -> Any:
        from .core import CombineGlobally, Map
        result: DoOutputsTuple = pcoll | self.pardo
        dead_tag = self.pardo.dead_letter_tag
        bad = result[dead_tag]
        if self.threshold < 1:
            window_fn = self.threshold_windowing
            total = (pcoll | "WindowAll" >> _MaybeWindow(window_fn) | "OneEach" >> Map(_one)
                     | "CountAll" >> CombineGlobally(sum).as_singleton_view())
            failed = (bad | "WindowBad" >> _MaybeWindow(window_fn) | "OneBad" >> Map(_one)
                      | "CountBad" >> CombineGlobally(sum).without_defaults())
            check = _CheckThreshold(self.threshold, self.label or self.default_label())
            _ = failed | "CheckThreshold" >> Map(check, total)
        if self.error_handler is None:
            return result
        self.error_handler.add_error_pcollection(bad)
        if not self.pardo.tags:
            return result[self.pardo.main_tag]
        return result.without(dead_tag)
