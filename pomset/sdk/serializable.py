"""Beam's check that a transform's function can be shipped: what a Map's, FlatMap's or
Filter's function captures (its closure, the globals it names, defaults and bound object)
is pickled once, as the transform is made, so an unpicklable capture (a file handle, a
lock, a connection) fails there, in Beam's words, not on a remote worker. Functions and classes themselves pass: the
runners ship them by value (cloudpickle), so only what they hold is checked."""
from __future__ import annotations

import pickle
import sys
import types
from typing import Any, Callable


class _Discard:
    """A file that keeps nothing: the check needs only whether pickling succeeds."""

    def write(self, data: bytes) -> int:
        return len(data)


def _rebuild(*parts: Any) -> None:
    """The reduction a function or class pickles to in the check (never called)."""


class _CapturePickler(pickle.Pickler):
    """Pickles what functions capture rather than the functions: a function shipped by value
    as its closure's values, the globals it names, its defaults and keyword defaults; a
    class, a module or code as nothing."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.FunctionType):
            if _importable(obj):
                return NotImplemented   # shipped by reference, as pickle does
            cells = tuple(c.cell_contents for c in obj.__closure__ or () if _filled(c))
            names = obj.__code__.co_names
            used = tuple(v for k, v in obj.__globals__.items() if k in names)
            return _rebuild, (cells, used, obj.__defaults__, obj.__kwdefaults__)
        if isinstance(obj, (type, types.ModuleType, types.CodeType)):
            return _rebuild, ()
        return NotImplemented


def _importable(fn: types.FunctionType) -> bool:
    """Whether `fn` is found by its module and name (not a lambda, nor local, nor __main__'s,
    which are shipped by value)."""
    module = sys.modules.get(fn.__module__) if fn.__module__ != "__main__" else None
    return getattr(module, fn.__qualname__, None) is fn


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:   # a cell not yet assigned
        return False
    return True


def check_picklable(fn: Callable[..., Any]) -> None:
    """Raise Beam's RuntimeError when what `fn` captures cannot be pickled."""
    try:
        _CapturePickler(_Discard(), protocol=pickle.HIGHEST_PROTOCOL).dump(fn)
    except Exception as e:
        raise RuntimeError(
            f"Unable to pickle fn {fn!r}: {type(e).__name__}: {e}. User code must be "
            f"serializable (picklable) for distributed execution. This one captures "
            f"non-serializable objects like file handles, locks or connections. Try: (1) "
            f"using module-level functions instead of lambdas, (2) making such resources in "
            f"a DoFn's setup(), (3) checking what the function's closure holds.") from e
