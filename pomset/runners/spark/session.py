"""The SparkSession a run uses: the active one if there is one, else one this run creates
(and stops afterwards), after checking that Java is there in a version Spark supports."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Any, Optional, Tuple

from ...sdk.errors import PipelineConstructionError
from . import shipping

MIN_JAVA = 17


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


def spark_session(options: Any) -> Tuple[Any, bool]:
    """(session, whether this call started it). A session it starts on a master that is not
    local gets pomset and the pipeline's local modules shipped to its executors (`shipping`)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkSetupError("the Spark runner needs pyspark: pip install 'pomset[spark]'") from None
    active = SparkSession.getActiveSession()
    refuse_connect(options.spark_master, active)
    if active is not None:
        return active, False
    check_java()
    os.environ["PYSPARK_PYTHON"] = worker_python(options)   # PySpark reads only this
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    cores = os.cpu_count() or 2
    builder = (SparkSession.builder.master(options.spark_master).appName("pomset")
               .config("spark.driver.memory", _driver_memory())
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(2 * cores))
               .config("spark.sql.session.timeZone", "UTC")   # pomset's time is UTC
               .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    for key, value in options.spark_conf:
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not shipping.is_local(options.spark_master):
        shipping.ship(spark, options.spark_ship)
    return spark, True
