"""Beam's keyword names for the same parameters (`windowfn=` for `window_fn=`,
`file_pattern=` for `pattern=`...), accepted by the functions that take them, so a Beam call
with keywords runs unchanged."""
from __future__ import annotations

import functools
from typing import Any, Callable


def beam_keywords(**aliases: str) -> Callable[[Callable], Callable]:
    """Decorate a function (an `__init__`) so that each Beam keyword in `aliases` (Beam's name
    -> pomset's) is taken as pomset's; giving both is a TypeError naming them."""
    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for beam, ours in aliases.items():
                if beam in kwargs:
                    if ours in kwargs:
                        raise TypeError(f"{fn.__qualname__} got both {beam}= (Beam's name) and "
                                        f"{ours}=; give one")
                    kwargs[ours] = kwargs.pop(beam)
            return fn(*args, **kwargs)
        return wrapper
    return decorate
