"""The SPARK_HOME pomset starts Spark's JVM from for a local master whose Python workers run
this interpreter: the installed pyspark's own, without the Python zips in its `python/lib`.

Spark puts `$SPARK_HOME/python/lib`'s `pyspark.zip` and py4j's zip first on the path of
every Python process it starts: the workers, and on the driver the processes that plan
Python data sources, set up `transformWithState` and run a Python streaming source. A zip
holds no bytecode and Python cannot cache what it compiles from one, so each of those
processes compiled pyspark from source, and each Python task re-read the zips' directories
(PySpark invalidates the import caches per task), slowing every streaming query's start.
The zips are the installed pyspark's own copies, so without them these processes import the
same code from the installed package and its bytecode. pomset's copy of the home is links to
every file of the installed one but those zips, made once in pomset's cache directory. The
JVM also gets `PYSPARK_ARCHIVES_PATH` naming the installed zips, so that a YARN session the
same process starts later still ships them. Not used where the user has set SPARK_HOME."""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from typing import Dict, Optional

from .shipping import cache_dir


def launch_env() -> Dict[str, str]:
    """The environment variables to start the JVM with (none where the user set SPARK_HOME,
    the installed pyspark has no zips, or the copy could not be made)."""
    if os.name != "posix" or "SPARK_HOME" in os.environ:
        return {}
    from pyspark.find_spark_home import _find_spark_home
    home = _find_spark_home()
    try:
        copy = home_without_zips(home, cache_dir())
    except OSError:
        return {}
    if copy is None:
        return {}
    lib = os.path.join(home, "python", "lib")
    zips = ",".join(os.path.join(lib, n) for n in sorted(os.listdir(lib)) if n.endswith(".zip"))
    return {"SPARK_HOME": copy, "PYSPARK_ARCHIVES_PATH": os.environ.get("PYSPARK_ARCHIVES_PATH", zips)}


def home_without_zips(home: str, cache: str) -> Optional[str]:
    """The copy of `home` without its Python zips (None if it has none), made once under
    `cache`, named by where `home` is and what it lists (another pyspark installed there
    gets a copy of its own)."""
    lib = os.path.join(home, "python", "lib")
    zips = {n for n in os.listdir(lib) if n.endswith(".zip")} if os.path.isdir(lib) else set()
    if "pyspark.zip" not in zips:
        return None
    listed = [os.path.realpath(home)] + [name for d in (home, os.path.join(home, "python"), lib)
                                         for name in sorted(os.listdir(d))]
    key = hashlib.sha256("\0".join(listed).encode()).hexdigest()[:16]
    target = os.path.join(cache, f"spark-home-{key}")
    if os.path.isdir(target):
        return target
    os.makedirs(cache, exist_ok=True)
    building = tempfile.mkdtemp(prefix=".spark-home-", dir=cache)
    try:
        _link_all(home, building, skip={"python"})
        _link_all(os.path.join(home, "python"), os.path.join(building, "python"), skip={"lib"})
        _link_all(lib, os.path.join(building, "python", "lib"), skip=zips)
        os.rename(building, target)
    except OSError:
        shutil.rmtree(building, ignore_errors=True)
        if not os.path.isdir(target):   # else another process made it first
            raise
    return target


def _link_all(source: str, dest: str, skip: set) -> None:
    """`dest`, a new directory of links to the entries of `source` but those in `skip`."""
    os.makedirs(dest, exist_ok=True)
    for name in os.listdir(source):
        if name not in skip:
            os.symlink(os.path.join(source, name), os.path.join(dest, name))
