"""How often Python's cyclic garbage collector runs while pomset processes data.

A step holds many long-lived objects (window states, a micro-batch's elements) while it
allocates many more; its window states and elements hold no reference cycles, so reference
counting frees them. With the default thresholds (700, 10, 10) the collector still walks the young objects
every 700 allocations and, as they survive, rescans the whole heap, which a step holding
thousands of keys' states pays over and over. Rarer collections (a young one every
`YOUNG_EVERY` allocations, older ones seldom) still reclaim what cycles a user's code
makes."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator, Tuple

YOUNG_EVERY = 1_000_000
RARE: Tuple[int, int, int] = (YOUNG_EVERY, 20, 20)


def collect_rarely() -> None:
    """Set the rarer thresholds (never lowering one): for the rest of a worker process's life
    (Spark's Python workers run only pomset's tasks), or while a run lasts in the user's own
    process (`rarely_collecting` restores them)."""
    gc.set_threshold(*(max(now, rare) for now, rare in zip(gc.get_threshold(), RARE)))


@contextmanager
def rarely_collecting() -> Iterator[None]:
    """The rarer thresholds while a run lasts in the user's own process (the driver, which
    also holds what a run collects), the user's restored after it."""
    saved = gc.get_threshold()
    collect_rarely()
    try:
        yield
    finally:
        gc.set_threshold(*saved)
