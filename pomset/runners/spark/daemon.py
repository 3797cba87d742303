"""Spark's Python worker daemon for local masters (`spark.python.daemon.module`): PySpark's own
(`pyspark.daemon`), on a path without the zips of pyspark and py4j where the same packages are
installed. Spark puts those zips first on its Python workers' path; a zip holds no bytecode,
so every daemon compiled pyspark from source (0.5 s a start here), and every fresh worker
re-read pyspark.zip's directory when PySpark invalidated the import caches. The zips are the
installed pyspark's own copies (its `python/lib`), so the installed packages are the same code.
Started as `python -m pomset.runners.spark.daemon`, it has imported pomset's package once
before the daemon forks its workers (importing it starts no threads, as the daemon requires).
Only for local masters, whose workers run this Python: elsewhere pomset may be shipped, not
installed."""
from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder
from typing import List


def installed_first(path: List[str]) -> List[str]:
    """`path` without pyspark's `python/lib` zips (pyspark.zip, py4j's) where the rest of it
    finds the installed pyspark they came with, and that package's py4j: unchanged else."""
    rest = [p for p in path if not p.endswith(".zip")]
    spec = PathFinder.find_spec("pyspark", rest)
    if spec is None or not spec.submodule_search_locations:
        return path
    lib = os.path.realpath(os.path.join(list(spec.submodule_search_locations)[0], "python", "lib"))
    has_py4j = PathFinder.find_spec("py4j", rest) is not None

    def drop(p: str) -> bool:
        name = os.path.basename(p)
        return (p.endswith(".zip") and os.path.realpath(os.path.dirname(p)) == lib
                and (name == "pyspark.zip" or (name.startswith("py4j-") and has_py4j)))
    return [p for p in path if not drop(p)]


def main() -> None:
    """Start PySpark's daemon (its workers' module is the first argument, as Spark passes it)."""
    sys.path[:] = installed_first(sys.path)
    from pyspark.daemon import manager
    manager()


if __name__ == "__main__":
    main()
