"""What Spark prints on the user's terminal: nothing at the default level, Spark's log at
the level `--spark_log_level` names.

Log4j is configured by the `log4j2.properties` shipped here (the JVM gets it, and the level,
in `spark.driver.extraJavaOptions`), so no "default log4j profile" or WARN lines. What the JVM
writes outside log4j (its incubator-module warning, the shell's "Setting default log level"
lines, the banner lines the transformWithState Python worker prints, which Spark copies to
its stderr) goes through a filter: the JVM is
started with its output piped to a thread that passes on everything else, user prints in
Spark tasks included, to this process's stderr."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from typing import Any, BinaryIO, Dict, List, Optional, Tuple

LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
DEFAULT_LEVEL = "OFF"

#: JVM output that is not the user's and not a log line: dropped unless a log level is asked
_NOISE = re.compile(r"WARNING: Using incubator modules|(Starting )?Streaming "
                    r"TransformWithStateInPandas Python worker|Setting default log level to "
                    r"|To adjust logging level use sc.setLogLevel")

_verbose = [False]   # whether the filter passes everything (the current session's choice)


def java_options(level: Optional[str], conf: List[Tuple[str, str]]) -> str:
    """The driver's Java options: the user's (from `conf`), then pomset's log4j settings."""
    user = dict(conf).get("spark.driver.extraJavaOptions", "")
    ours = f"-Dlog4j2.configurationFile=file:{LOG4J} -Dpomset.spark.log.level={level or DEFAULT_LEVEL}"
    return f"{user} {ours}".strip()


def start_jvm(conf: Any, level: Optional[str], env: Dict[str, str]) -> None:
    """Start Spark's JVM (unless this process has one, or PySpark is told to join one) with
    its output through the filter; `conf` is the SparkConf spark-submit gets, `env` variables
    the JVM gets besides this process's (this process's own stay as they are)."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway
    _verbose[0] = level is not None
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    before = {name: os.environ.get(name) for name in env}
    os.environ.update(env)   # pyspark's launcher reads SPARK_HOME from here
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": subprocess.PIPE,
                                                     "stderr": subprocess.STDOUT})
    finally:
        for name, value in before.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value
    threading.Thread(target=_forward, args=(gateway.proc.stdout,), daemon=True,
                     name="pomset-jvm-output").start()
    SparkContext._ensure_initialized(gateway=gateway)


def set_level(spark: Any, level: Optional[str]) -> None:
    """Spark's log level for this session's runs (it can differ from the JVM's start)."""
    _verbose[0] = level is not None
    if level is not None and level != DEFAULT_LEVEL:
        # Spark skips a level the root logger has already, which would keep the WARN
        # threshold its shell mode sets at start-up: setting another first clears it
        spark.sparkContext.setLogLevel(DEFAULT_LEVEL)
    spark.sparkContext.setLogLevel(level or DEFAULT_LEVEL)


def _forward(pipe: BinaryIO) -> None:
    """Copy the JVM's output to stderr, line by line, without the noise (and the blank line
    the worker's banners end with) unless the session is verbose."""
    dropped = False
    for raw in iter(pipe.readline, b""):
        line = raw.decode("utf-8", "replace")
        if not _verbose[0] and (_NOISE.match(line) or (dropped and not line.strip())):
            dropped = bool(line.strip())
            continue
        dropped = False
        sys.stderr.write(line)
        sys.stderr.flush()
