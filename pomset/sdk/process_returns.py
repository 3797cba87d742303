"""Beam's construction-time warnings about what a DoFn's `process` returns: a generator that
also returns a value (the value is lost: Python drops a generator's return value), and a
`process` whose every return is `None` (it emits nothing for any element). Read from the
method's source once per method; a method without source (built at run time) is not read."""
from __future__ import annotations

import ast
import functools
import inspect
import logging
import textwrap
from typing import Any, Tuple

_LOG = logging.getLogger(__name__)


def warn_of_process_returns(dofn: Any) -> None:
    """Log Beam's warning when `dofn.process` mixes `yield` and `return value`, or returns
    only None."""
    process = getattr(type(dofn), "process", None)
    code = getattr(process, "__code__", None)
    if code is None:
        return
    mixes, only_none = _returns(code)
    if mixes:
        _LOG.warning("Using yield and return in the process method of %s is not allowed: "
                     "a generator's return value is dropped; yield every output",
                     type(dofn))
    elif only_none:
        _LOG.warning("Process method returned None: %s emits nothing for any element; "
                     "return an iterable of outputs (or yield them)", type(dofn))


@functools.lru_cache(maxsize=1024)
def _returns(code: Any) -> Tuple[bool, bool]:
    """(a generator that returns a value, a plain function whose every return is None)."""
    try:
        source = textwrap.dedent(inspect.getsource(code))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return False, False
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False, False
    returns = [node for node in _own_nodes(fn) if isinstance(node, ast.Return)]
    with_value = [r for r in returns
                  if r.value is not None and not (isinstance(r.value, ast.Constant)
                                                  and r.value.value is None)]
    if code.co_flags & inspect.CO_GENERATOR:
        return bool(with_value), False
    explicit_none = [r for r in returns if isinstance(r.value, ast.Constant)]
    return False, bool(explicit_none) and not with_value


def _own_nodes(fn: ast.AST) -> Any:
    """The nodes of a function's body, not those of functions or classes defined in it."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                 ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
