"""Spark's Python worker daemon for local masters (`spark.python.daemon.module`): PySpark's own
(`pyspark.daemon`), on a path without the zips of pyspark and py4j where the same packages are
installed. Spark puts those zips first on its Python workers' path; a zip holds no bytecode,
so a daemon would compile pyspark from source at each start, and a fresh worker re-read
pyspark.zip's directory whenever PySpark invalidates the import caches. The zips are the
installed pyspark's own copies (its `python/lib`), so the installed packages are the same code.
Spark also puts spark-core's jar on the path (it holds no Python), whose importer PySpark's
per-task invalidation of the import caches makes re-read its directory in every Python task;
it is dropped too. Started as `python -m pomset.runners.spark.daemon`, it imports once, before
the daemon forks its workers, what pomset's tasks import (pyspark's worker, pomset's Spark
tasks, pandas, pyarrow), so that no fresh worker imports them itself in a query's first
micro-batch or whenever Spark starts a worker. The daemon forks no worker after a thread has
started (a child of a threaded process may inherit a lock held by a thread it lacks):
pyarrow's jemalloc would start one, so its background thread is off by default (pyarrow
allocates with mimalloc), and if the imports still start a thread the daemon runs again
without them. What it imported is then frozen out of the cyclic garbage collector
(`gc.freeze`): PySpark's reused workers run a full collection after every task, which would
walk every imported object each time; module objects are never garbage. Only for local
masters, whose workers run this Python: elsewhere pomset may be shipped, not installed."""
from __future__ import annotations

import gc
import importlib
import os
import sys
from importlib.machinery import PathFinder
from typing import List, Set

# what pomset's tasks import when a worker unpickles and runs them (pandas: transformWithState
# hands a stateful step its rows as pandas frames; pomset's own modules import it only there)
TASK_MODULES = ("pyspark.worker", "pomset.runners.spark.streaming", "pomset.runners.spark.batch",
                "pomset.runners.spark.stream_sources", "pandas")
NO_PREIMPORT = "POMSET_DAEMON_NO_PREIMPORT"


def installed_first(path: List[str]) -> List[str]:
    """`path` without pyspark's `python/lib` zips (pyspark.zip, py4j's) and the jars of its
    `jars` folder where the rest of it finds the installed pyspark they came with, and that
    package's py4j: unchanged else."""
    rest = [p for p in path if not p.endswith(".zip")]
    spec = PathFinder.find_spec("pyspark", rest)
    if spec is None or not spec.submodule_search_locations:
        return path
    installed = list(spec.submodule_search_locations)[0]
    lib = os.path.realpath(os.path.join(installed, "python", "lib"))
    jars = os.path.realpath(os.path.join(installed, "jars"))
    has_py4j = PathFinder.find_spec("py4j", rest) is not None

    def drop(p: str) -> bool:
        name, where = os.path.basename(p), os.path.realpath(os.path.dirname(p))
        if p.endswith(".jar"):
            return where == jars
        return (p.endswith(".zip") and where == lib
                and (name == "pyspark.zip" or (name.startswith("py4j-") and has_py4j)))
    return [p for p in path if not drop(p)]


def forget_importers(dropped: Set[str]) -> None:
    """Drop the cached importers of paths no longer on `sys.path` (and of the folders within
    them): importing this module made them, and invalidating the import caches would still
    re-read their archives."""
    for key in list(sys.path_importer_cache):
        if isinstance(key, str) and any(key == d or key.startswith(d + os.sep) for d in dropped):
            del sys.path_importer_cache[key]


def preimport() -> bool:
    """Import the task modules here: whether this process still has one thread after that
    (True without trying where /proc does not show threads, or where a run before found that
    the imports start one)."""
    if os.environ.get(NO_PREIMPORT) or not os.path.isdir("/proc/self/task"):
        return True
    os.environ.setdefault("JE_ARROW_MALLOC_CONF", "background_thread:false")
    for name in TASK_MODULES:
        importlib.import_module(name)
    return len(os.listdir("/proc/self/task")) == 1


def main() -> None:
    """Start PySpark's daemon (its workers' module is the first argument, as Spark passes it)."""
    kept = installed_first(sys.path)
    forget_importers(set(sys.path) - set(kept))
    sys.path[:] = kept
    if not preimport():
        os.environ[NO_PREIMPORT] = "1"
        os.execv(sys.executable, [sys.executable, "-m", "pomset.runners.spark.daemon",
                                  *sys.argv[1:]])
    from pyspark.daemon import manager
    gc.collect()
    gc.freeze()   # the workers inherit the heap: their collections after each task leave it unread
    manager()


if __name__ == "__main__":
    main()
