"""Where the benchmarks write their figures: their own block of BENCHMARKS.md, between its
begin and end markers, the rest of the file kept."""
from __future__ import annotations

import compileall
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_block(begin: str, end: str, block: str) -> None:
    """Replace what BENCHMARKS.md holds between `begin` and `end` with `block`."""
    path = os.path.join(ROOT, "BENCHMARKS.md")
    text = open(path).read()
    start, stop = text.index(begin) + len(begin), text.index(end)
    with open(path, "w") as f:
        f.write(text[:start] + "\n" + block + "\n" + text[stop:])


def compile_bytecode() -> None:
    """Write pomset's bytecode, as installing it from a wheel does: a benchmark that times
    fresh processes (or Spark's Python workers) would otherwise time compiling its modules
    from source wherever `PYTHONDONTWRITEBYTECODE` is set, as on the machines these run on."""
    compileall.compile_dir(os.path.join(ROOT, "pomset"), quiet=1)
