"""A Spark standalone cluster started in the background (`pomset spark up|down|status`): a
master and N workers run by the installed pyspark's own `spark-class` (pip's pyspark has no
`sbin/start-master.sh`), each in a process group of its own that `down` stops with everything
it started (executors and their Python workers). `up` returns once every worker has
registered with its master. With `master`, only workers start, joined to a master on another
machine: how a cluster of several machines is made. What runs is recorded in a state file
under pomset's cache directory, with the processes' logs beside it."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from typing import Any, Dict, List, Optional

from ...broker import stop_process
from .session import SparkSetupError, check_java
from .shipping import cache_dir

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
REGISTERED = "Successfully registered with master"


class ClusterError(RuntimeError):
    """The standalone cluster could not be started or found: what was wrong and where."""


def state_dir() -> str:
    """Where the cluster's state file and logs are kept."""
    return os.path.join(cache_dir(), "standalone")


def _state_file(where: str) -> str:
    return os.path.join(where, "cluster.json")


def spark_class() -> str:
    """The `spark-class` launcher of SPARK_HOME if set, else of the installed pyspark."""
    home = os.environ.get("SPARK_HOME")
    if not home:
        try:
            from pyspark.find_spark_home import _find_spark_home
        except ImportError:
            raise ClusterError("pomset spark up needs pyspark: pip install 'pomset[spark]'") from None
        home = _find_spark_home()
    launcher = os.path.join(home, "bin", "spark-class")
    if not os.access(launcher, os.X_OK):
        raise ClusterError(f"no executable bin/spark-class in Spark's home {home} "
                           f"(SPARK_HOME, else the installed pyspark)")
    return launcher


def port_free(host: str, port: int) -> bool:
    """Whether nothing listens on (or holds) `port` on `host`'s address."""
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str) -> int:
    """A TCP port on `host`'s address that nothing listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def worker_share(workers: int) -> Dict[str, str]:
    """Each of `workers` workers' default cores and memory on this machine: an equal share of
    its cores (at least one) and of its memory less 1 GiB for the system (at least 1 GiB)."""
    cores = max(1, (os.cpu_count() or 1) // workers)
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 2 * 2**30
    memory = max(1024, (total // 2**20 - 1024) // workers)
    return {"cores": str(cores), "memory": f"{memory}m"}


def _start(launcher: str, log: str, args: List[str], env: Dict[str, str]) -> int:
    with open(log, "w") as out:
        proc = subprocess.Popen([launcher, *args], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    return proc.pid


def _alive(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _read_log(log: str) -> str:
    try:
        with open(log, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _wait_for(pid: int, log: str, text: str, what: str, deadline: float) -> None:
    """Return once `log` holds `text`; a ClusterError with the log's end if `pid` exits first
    or `deadline` passes."""
    while True:
        if text in _read_log(log):
            return
        if not _alive(pid):
            raise ClusterError(f"the {what} exited before it was ready; its log {log} ends:\n"
                               f"{_read_log(log)[-2000:]}")
        if time.monotonic() > deadline:
            raise ClusterError(f"the {what} was not ready in time; its log {log} ends:\n"
                               f"{_read_log(log)[-2000:]}")
        time.sleep(0.2)


def up(workers: int = 1, cores: Optional[int] = None, memory: Optional[str] = None,
       host: str = "127.0.0.1", port: int = 7077, webui_port: int = 8080,
       master: Optional[str] = None, timeout: float = 180.0,
       where: Optional[str] = None) -> Dict[str, Any]:
    """Start a master on `host`:`port` (its web UI, with `/json`, on `webui_port`) and
    `workers` workers of `cores` cores and `memory` each (default: an equal share of this
    machine, `worker_share`); with `master` (spark://host:port), only the workers, joined to
    it. Returns the state `status` gives, once every worker has registered."""
    where = where or state_dir()
    running = status(where)
    if running:
        raise ClusterError(f"a cluster started by `pomset spark up` already runs "
                           f"({running['master']}); `pomset spark down` stops it")
    if workers < (0 if master is None else 1):
        raise ClusterError(f"--workers {workers}: give at least {0 if master is None else 1}")
    if master is not None and not master.startswith("spark://"):
        raise ClusterError(f"--master {master!r} is not a standalone master's URL "
                           f"(spark://host:port)")
    for name, value in (("--port", port), ("--webui-port", webui_port)):
        if not 0 < value < 65536:
            raise ClusterError(f"{name} {value} is not a TCP port (1 to 65535)")
    try:
        check_java()
    except SparkSetupError as e:
        raise ClusterError(str(e)) from None
    launcher = spark_class()
    if master is None:
        for name, value in (("--port", port), ("--webui-port", webui_port)):
            if not port_free(host, value):
                raise ClusterError(f"{name} {value} is in use on {host}: stop what holds it "
                                   f"or choose another {name}")
    share = worker_share(max(1, workers))
    env = dict(os.environ, SPARK_HOME=os.path.dirname(os.path.dirname(launcher)))
    if host != "0.0.0.0":
        env["SPARK_LOCAL_IP"] = host
    logs = os.path.join(where, "run")   # the logs, and the workers' work directories
    shutil.rmtree(logs, ignore_errors=True)
    os.makedirs(logs)
    state: Dict[str, Any] = {"master": master or f"spark://{host}:{port}", "pids": [],
                             "web_ui": None, "logs": logs}
    deadline = time.monotonic() + timeout
    try:
        if master is None:
            log = os.path.join(logs, "master.log")
            pid = _start(launcher, log, [MASTER_CLASS, "--host", host, "--port", str(port),
                                         "--webui-port", str(webui_port)], env)
            state["pids"].append(pid)
            state["web_ui"] = f"http://{host}:{webui_port}"
            _write(where, state)
            _wait_for(pid, log, "I have been elected leader", "master", deadline)
        started = []
        for i in range(workers):
            log = os.path.join(logs, f"worker-{i}.log")
            pid = _start(launcher, log, [
                WORKER_CLASS, state["master"], "--host", host,
                "--webui-port", str(free_port(host)),
                "--cores", str(cores or share["cores"]), "--memory", memory or share["memory"],
                "--work-dir", os.path.join(logs, f"work-{i}")], env)
            state["pids"].append(pid)
            started.append((pid, log, f"worker {i}"))
            _write(where, state)
        for pid, log, what in started:
            _wait_for(pid, log, REGISTERED, what + f" (registering with {state['master']})",
                      deadline)
    except BaseException:
        down(where)
        raise
    return status(where) or state


def _write(where: str, state: Dict[str, Any]) -> None:
    with open(_state_file(where), "w") as f:
        json.dump(state, f)


def _read(where: str) -> Optional[Dict[str, Any]]:
    try:
        with open(_state_file(where)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def master_json(web_ui: str, timeout: float = 5.0) -> Optional[Dict[str, Any]]:
    """What the master's web UI says of the cluster (`/json`: its workers, cores, memory,
    applications), or None when it does not answer."""
    try:
        with urllib.request.urlopen(web_ui + "/json/", timeout=timeout) as answer:
            return json.load(answer)
    except (OSError, ValueError):
        return None


def status(where: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The cluster `up` started, if any of its processes still runs: its master URL, web UI,
    pids and logs, and (when the master is ours and answers) `alive_workers` and `cores`."""
    state = _read(where or state_dir())
    if state is None or not any(map(_alive, state["pids"])):
        return None
    if state["web_ui"]:
        info = master_json(state["web_ui"])
        if info is not None:
            state["alive_workers"] = info.get("aliveworkers")
            state["cores"] = info.get("cores")
    return state


def down(where: Optional[str] = None) -> bool:
    """Stop every process `up` started (workers first) with all they started; whether there
    was a cluster to stop."""
    where = where or state_dir()
    state = _read(where)
    if state is None:
        return False
    for pid in reversed(state["pids"]):
        stop_process(pid)
    os.remove(_state_file(where))
    return True
