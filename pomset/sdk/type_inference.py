"""What a function returns, inferred from its bytecode when it declares nothing (Beam's
trivial inference): straight-line code is run on types instead of values, so
`lambda x: (x, 1)` of a str returns `Tuple[str, int]`. Anything it does not follow (a
branch, a call, an attribute) gives Any, so an inferred type is never wrong, only vague."""
from __future__ import annotations

import dis
import inspect
import typing
from typing import Any, Callable, Dict, List

from .type_hints import union_of

#: opcodes that change nothing the inference follows
_NOPS = {"RESUME", "NOP", "CACHE", "PRECALL", "EXTENDED_ARG", "COPY_FREE_VARS", "MAKE_CELL",
         "KW_NAMES"}
#: opcodes that replace the top n entries of the stack by one of a type not followed
_TO_ANY = {"LOAD_ATTR": 1, "COMPARE_OP": 2,
           "UNARY_NOT": 1, "UNARY_NEGATIVE": 1, "UNARY_INVERT": 1, "CONTAINS_OP": 2,
           "IS_OP": 2, "FORMAT_VALUE": 1, "GET_ITER": 1}
#: the most instructions followed before giving up
_MAX_STEPS = 200


class _GiveUp(Exception):
    """The function does something the inference does not follow."""


class _Const:
    """A constant on the stack: its value, for indexing a tuple by it."""

    def __init__(self, value: Any) -> None:
        self.value = value


#: the NULL the interpreter pushes before a called global or method
_NULL = object()


def _t(entry: Any) -> Any:
    """The type of a stack entry."""
    if entry is _NULL:
        raise _GiveUp("the stack is not as followed")
    return _type_of_const(entry.value) if isinstance(entry, _Const) else entry


def infer_return_type(fn: Callable[..., Any], arg_types: List[Any]) -> Any:
    """The type `fn` returns given arguments of `arg_types` (a generator: an Iterable of what
    it yields); Any when that cannot be told from its bytecode."""
    fn = inspect.unwrap(fn) if hasattr(fn, "__wrapped__") else fn
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None or getattr(code, "co_exceptiontable", b""):
        return typing.Any
    if inspect.ismethod(fn):
        arg_types = [type(fn.__self__)] + list(arg_types)
    try:
        return _run(fn, code, arg_types)
    except (_GiveUp, IndexError, KeyError, TypeError, ValueError):
        return typing.Any


def _run(fn: Any, code: Any, arg_types: List[Any]) -> Any:
    names = code.co_varnames
    local: Dict[str, Any] = {name: typing.Any for name in names}
    for name, hint in zip(names[:code.co_argcount], arg_types):
        local[name] = typing.Any if hint is None else hint
    generator = bool(code.co_flags & inspect.CO_GENERATOR)
    yielded: List[Any] = []
    stack: List[Any] = []
    for steps, ins in enumerate(dis.get_instructions(code)):
        if steps > _MAX_STEPS:
            raise _GiveUp
        op, arg = ins.opname, ins.arg
        if op in _NOPS:
            continue
        if op == "RETURN_GENERATOR":
            stack.append(typing.Any)
        elif op in ("LOAD_FAST", "LOAD_FAST_CHECK"):
            stack.append(local[ins.argval])
        elif op == "STORE_FAST":
            local[ins.argval] = stack.pop()
        elif op == "LOAD_CONST":
            stack.append(_Const(ins.argval))
        elif op in ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME", "LOAD_CLOSURE"):
            if op == "LOAD_GLOBAL" and arg is not None and arg & 1:
                stack.append(_NULL)   # before a called global (3.11)
            stack.append(typing.Any)
        elif op == "PUSH_NULL":
            stack.append(_NULL)
        elif op == "LOAD_METHOD":
            stack[-1:] = [_NULL, typing.Any]
        elif op == "CALL":
            del stack[len(stack) - arg - 2:]
            stack.append(typing.Any)
        elif op in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET"):
            items = stack[len(stack) - arg:]
            del stack[len(stack) - arg:]
            stack.append(_built(op, [_t(i) for i in items]))
        elif op == "UNPACK_SEQUENCE":
            stack.extend(reversed(_unpacked(_t(stack.pop()), arg)))
        elif op == "BINARY_SUBSCR":
            index, of = stack.pop(), _t(stack.pop())
            stack.append(_item(of, index.value if isinstance(index, _Const) else None))
        elif op == "BINARY_OP":
            right, left = _t(stack.pop()), _t(stack.pop())
            stack.append(_arithmetic(ins.argrepr.rstrip("="), left, right))
        elif op in _TO_ANY:
            del stack[len(stack) - _TO_ANY[op]:]
            stack.append(typing.Any)
        elif op == "POP_TOP":
            stack.pop()
        elif op == "YIELD_VALUE":
            yielded.append(_t(stack.pop()))
            stack.append(typing.Any)
        elif op in ("RETURN_VALUE", "RETURN_CONST"):
            value = _t(stack.pop()) if op == "RETURN_VALUE" else _type_of_const(ins.argval)
            if generator:
                return typing.Iterable[union_of(yielded)]
            return value
        else:
            raise _GiveUp(op)
    raise _GiveUp("no return")


#: the numeric types whose arithmetic is followed, narrowest first
_NUMBERS = (bool, int, float, complex)


def _arithmetic(operator: str, left: Any, right: Any) -> Any:
    """The type of `left <operator> right` for numbers (the wider of the two; a true
    division's at least a float) and for str or bytes concatenated; else Any."""
    if left in _NUMBERS and right in _NUMBERS and operator in ("+", "-", "*", "/", "//", "%"):
        wide = _NUMBERS[max(_NUMBERS.index(left), _NUMBERS.index(right), 1)]
        return float if operator == "/" and wide is int else wide
    if operator == "+" and left is right and left in (str, bytes):
        return left
    return typing.Any


def _type_of_const(value: Any) -> Any:
    if isinstance(value, tuple):
        return typing.Tuple[tuple(_type_of_const(v) for v in value)] if value else tuple
    return type(value)


def _item(of: Any, index: Any) -> Any:
    """The type of `of[index]`: a tuple's item at a constant index, else Any."""
    args = typing.get_args(of)
    if typing.get_origin(of) is tuple and isinstance(index, int) and args \
            and Ellipsis not in args and -len(args) <= index < len(args):
        return args[index]
    return typing.Any


def _built(op: str, items: List[Any]) -> Any:
    if op == "BUILD_TUPLE":
        return typing.Tuple[tuple(items)] if items else typing.Tuple[()]
    generic = typing.List if op == "BUILD_LIST" else typing.Set
    return generic[union_of(items)]


def _unpacked(hint: Any, n: int) -> List[Any]:
    """The types of the n items a value of type `hint` unpacks into."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin is tuple and args and Ellipsis not in args:
        if len(args) != n:
            raise _GiveUp("unpacks to another length")
        return list(args)
    if origin is not None and args and origin is not dict:
        return [args[0]] * n
    return [typing.Any] * n
