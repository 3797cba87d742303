"""The SparkSession a run uses: the active one if there is one, else the one pomset started
for this process (kept for the next run with the same options, stopped at exit), started after
checking that Java is there in a version Spark supports."""
from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
from typing import Any, Dict, Optional

from ...sdk.errors import PipelineConstructionError
from . import shipping, spark_home
from .console import java_options, set_level, start_jvm

MIN_JAVA = 17

#: The JIT of a local master's JVM started for a streaming run: C1 alone. With the full tiered
#: JIT, C2 compiles the code Spark plans each micro-batch with for minutes after start-up, on
#: the cores the pipeline runs on. A user's own flag in
#: spark.driver.extraJavaOptions comes after it and wins.
LOCAL_JIT = "-XX:TieredStopAtLevel=1"


class SparkSetupError(PipelineConstructionError):
    """Spark cannot start here: what to install or set."""


def java_version() -> Optional[int]:
    """The major version of the `java` Spark would start (JAVA_HOME's, else the PATH's), or
    None when there is none."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 and m.group(2) else major   # "1.8" is Java 8


def check_java() -> None:
    version = java_version()
    if version is None:
        raise SparkSetupError(f"the Spark runner needs Java {MIN_JAVA} or newer and found none: "
                              f"install a JDK {MIN_JAVA} (e.g. apt install openjdk-17-jre-headless) "
                              f"or set JAVA_HOME")
    if version < MIN_JAVA:
        raise SparkSetupError(f"the Spark runner needs Java {MIN_JAVA} or newer, found Java "
                              f"{version}: install a JDK {MIN_JAVA} and point JAVA_HOME at it")


def _driver_memory() -> str:
    """A quarter of this machine's memory, between 1 and 8 GiB: Spark's default of 1 GiB is
    also all a local-mode executor gets, and results brought to the driver need room."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "1g"
    return f"{max(1, min(8, total // 4 // 2**30))}g"


def worker_python(options: Any) -> str:
    """The Python executors run: the user's `spark.pyspark.python` (`--spark_conf`), else the
    `PYSPARK_PYTHON` environment variable, else this interpreter (right for a local master,
    and for a cluster whose workers have the same path)."""
    confs = [value for key, value in options.spark_conf if key == "spark.pyspark.python"]
    return (confs[-1] if confs else None) or os.environ.get("PYSPARK_PYTHON") or sys.executable


def refuse_connect(master: str, active: Any) -> None:
    """Spark Connect runs DataFrames on a remote server: pomset's runner needs the
    SparkContext (parallelism, accumulators, shipping files) and collects each micro-batch in
    `foreachBatch`, which Connect runs in a Python process of the server, not the client."""
    remote = (master.startswith("sc://") or bool(os.environ.get("SPARK_REMOTE"))
              or type(active).__module__.startswith("pyspark.sql.connect"))
    if remote:
        raise SparkSetupError(
            "the Spark runner cannot run over Spark Connect (sc://, SPARK_REMOTE): it needs the "
            "SparkContext, which Connect clients do not have, and streaming runs bring each "
            "micro-batch to the driver in foreachBatch, which Connect runs on the server; pass "
            "the cluster's master instead (--spark_master=spark://host:7077, yarn or k8s://...)")


#: the session pomset started in this process, and the (master, settings) it started with
_started: Dict[str, Any] = {}


def _process_session(session_class: Any) -> Any:
    """The session this process made its default, if it is still running: the active session
    is per thread, and a run on another thread (`Pipeline.start()`) must find it too."""
    session = getattr(session_class, "_instantiatedSession", None)
    if session is None or getattr(session.sparkContext, "_jsc", None) is None:
        return None
    return session


def spark_session(options: Any, streaming: bool = False) -> Any:
    """The session a run uses: an active one someone else started, as it is; else the one
    pomset started in this process, when it started with the same master and settings (a
    notebook's runs pay the start-up once), else a new one (pomset's previous one stopped;
    `streaming`: whether the run that starts it is a streaming query, see `driver_java_options`).
    Pomset's session lives until the interpreter exits."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkSetupError("the Spark runner needs pyspark: pip install 'pomset[spark]'") from None
    key = (options.spark_master, tuple(options.spark_conf))
    active = SparkSession.getActiveSession() or _process_session(SparkSession)
    refuse_connect(options.spark_master, active)
    if active is not None and (active is not _started.get("session") or _started["key"] == key):
        set_level(active, options.spark_log_level)
        return active
    if active is not None:
        active.stop()
    elif not _started:
        atexit.register(_stop_ours)
    _started.update(session=new_session(options, streaming), key=key)
    return _started["session"]


def new_session(options: Any, streaming: bool = False) -> Any:
    """A new session with pomset's settings and the options' master and settings, its Python
    workers running `worker_python`; on a master that is not local, pomset and the
    pipeline's local modules are shipped to its executors (`shipping`); on a local one whose
    workers run this Python, they fork from pomset's daemon (`daemon`)."""
    from pyspark import SparkConf
    from pyspark.sql import SparkSession
    check_java()
    python = worker_python(options)
    os.environ["PYSPARK_PYTHON"] = python   # PySpark reads only this
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    cores = os.cpu_count() or 2
    settings = [("spark.master", options.spark_master), ("spark.app.name", "pomset"),
                ("spark.driver.memory", _driver_memory()),
                ("spark.ui.showConsoleProgress", "false"),
                ("spark.sql.shuffle.partitions", str(2 * cores)),
                ("spark.sql.session.timeZone", "UTC"),   # pomset's time is UTC
                ("spark.sql.execution.arrow.pyspark.enabled", "true")]
    ours = shipping.is_local(options.spark_master) and python == sys.executable
    if ours:
        settings.append(("spark.python.daemon.module", "pomset.runners.spark.daemon"))
    settings += list(options.spark_conf)
    settings.append(("spark.driver.extraJavaOptions", driver_java_options(options, streaming)))
    start_jvm(SparkConf().setAll(settings), options.spark_log_level,
              spark_home.launch_env() if ours else {})
    builder = SparkSession.builder
    for key, value in settings:
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    set_level(spark, options.spark_log_level)
    if not shipping.is_local(options.spark_master):
        shipping.ship(spark, options.spark_ship)
    return spark


def driver_java_options(options: Any, streaming: bool) -> str:
    """The driver JVM's options: for a streaming run on a local master, where the driver's JVM
    is the executor too, `LOCAL_JIT` first; then the user's and pomset's log settings
    (`java_options`). A batch session keeps Java's JIT: Spark's own plans (native
    aggregations) run in the JVM there, and C2's code is what runs them fastest."""
    user_and_logs = java_options(options.spark_log_level, options.spark_conf)
    if not (streaming and shipping.is_local(options.spark_master)):
        return user_and_logs
    return f"{LOCAL_JIT} {user_and_logs}"


def _stop_ours() -> None:
    session = _started.get("session")
    if session is not None:
        session.stop()
