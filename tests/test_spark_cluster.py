"""The Spark runner on a real standalone cluster: `pomset spark up --workers 2` on loopback
(a master and two workers run by pyspark's own `spark-class`), the workers' Python a virtualenv with only pyarrow, pandas and
numpy (`worker_venv.py`): pomset, the pipeline's own module and the binary packages its tasks
need (protobuf for transformWithState, confluent-kafka for the Kafka source) reach the
executors only by what the run ships. A batch run, and a streaming Kafka run killed and
resumed from its checkpoint: few runs, each a driver and an executor JVM, to keep it short. Each pipeline runs as its own process
(`cluster_job.py`), as a user runs one, so the suite's local session is untouched. Also the
shipping module's parts, and the choice of the executors' Python."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import zipfile
from collections import Counter
from typing import List

import pytest

import pomset as pm
from pomset.runners.spark import shipping
from pomset.runners.spark.session import SparkSetupError, spark_session, worker_python

import worker_venv
from kafka_util import new_topic, produce

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
JOB = os.path.join(HERE, "cluster_job.py")
# with nothing of this checkout's environment: the job finds pomset itself, the cluster not
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME")}
EVENTS = [("a", 1, 5), ("a", 2, 25), ("b", 3, 40), ("a", 4, 52)]
LATER = [("b", 5, 33), ("a", 6, 95)]


def _pomset(*args: str, cache: str) -> subprocess.CompletedProcess:
    """`pomset ARGS` as a user types it, with the cluster's state kept under `cache`."""
    return subprocess.run([sys.executable, "-m", "pomset.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT,
                          env=dict(CLEAN_ENV, XDG_CACHE_HOME=cache))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(master URL, the worker's Python, a cache directory for what runs ship and the
    cluster's state): `pomset spark up --workers 2` of 1 core and 1 GiB each, and `pomset
    spark down` at the end, whatever happened."""
    python = worker_venv.build()
    assert subprocess.run([python, "-c", "import pomset"], env=CLEAN_ENV, cwd=str(
        tmp_path_factory.getbasetemp()), capture_output=True).returncode != 0, \
        "the worker's Python must not have pomset"
    cache = str(tmp_path_factory.mktemp("cluster") / "cache")
    try:
        up = _pomset("spark", "up", "--workers", "2", "--cores", "1", "--memory", "1g",
                     "--port", str(_free_port()), "--webui-port", str(_free_port()), cache=cache)
        assert up.returncode == 0, up.stderr[-3000:]
        url = re.search(r"--spark_master=(spark://\S+)", up.stdout).group(1)
        yield url, python, cache
    finally:
        _pomset("spark", "down", cache=cache)


def _job(cluster, source: str, output, *flags: str) -> dict:
    """subprocess arguments that run `cluster_job.py` on the cluster, as a user would, in the
    test's directory (OUTPUT's grandparent)."""
    url, python, cache = cluster
    return dict(args=[sys.executable, JOB, source, str(output), f"--spark_master={url}",
                      f"--spark_conf=spark.pyspark.python={python}",
                      "--spark_conf=spark.executor.memory=1g",
                      "--spark_conf=spark.sql.shuffle.partitions=1", *flags],
                env=dict(CLEAN_ENV, XDG_CACHE_HOME=cache), cwd=str(output.parent.parent),
                text=True)


def _run(cluster, source: str, output, *flags: str) -> None:
    proc = subprocess.run(**_job(cluster, source, output, *flags), capture_output=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _expected(events) -> Counter:
    """The sums `cluster_job.py` computes, as the local runner computes them."""
    with pm.Pipeline(runner="local") as p:
        sums = (p | pm.Create([pm.TimestampedValue({"k": k, "v": v}, t) for k, v, t in events])
                | pm.Map(lambda r: (r["k"], 3 * r["v"]))
                | pm.WindowInto(pm.FixedWindows(30)) | pm.CombinePerKey(sum))
    return Counter((wv.value[0], float(wv.window.start), wv.value[1])
                   for wv in p.result.collect(sums))


def _written(directory) -> Counter:
    """The (key, window start, sum) lines of every file the sink wrote."""
    return Counter((r["key"], r["window_start"], r["value"])
                   for f in sorted(directory.glob("o*.jsonl"))
                   for r in map(json.loads, f.read_text().splitlines()))


def test_a_batch_pipeline_runs_with_its_local_module_shipped(cluster, tmp_path):
    """`--spark_ship=python`: the zip of pomset and the job's module alone is enough for a
    batch run (its tasks import no binary distribution beyond pyarrow, pandas and numpy)."""
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "1.jsonl").write_text("".join(json.dumps({"k": k, "v": v, "t": t}) + "\n"
                                           for k, v, t in EVENTS + LATER))
    _run(cluster, str(inbox), tmp_path / "out" / "o", "--spark_ship=python")
    assert _written(tmp_path / "out") == _expected(EVENTS + LATER)


def test_a_stopped_kafka_run_resumes_from_its_checkpoint(cluster, kafka_broker, tmp_path):
    """The first run reads a topic in the executors until stopped (killed); the second, from
    the same checkpoint, reads what was produced since, to the end: each window's sum is
    written once, and the whole equals the local runner's."""
    topic, out = new_topic(kafka_broker, "cluster", 1), tmp_path / "out"
    source = f"kafka://{kafka_broker}/{topic}"

    def send(events):
        produce(kafka_broker, topic, [{"value": {"k": k, "v": v, "t": t}} for k, v, t in events])
    send(EVENTS)
    # one executor, on one of the two workers: the stream needs no more, and a second would
    # only add its JVM's start to the test
    flags = [f"--checkpoint_dir={tmp_path / 'ck'}", "--trigger_interval=0.5",
             "--spark_conf=spark.cores.max=1"]
    first = subprocess.Popen(**_job(cluster, source, out / "o", *flags),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not _written(out):   # the watermark of 52 - 10 completes [0, 30)
            assert first.poll() is None, first.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "no output"
            time.sleep(0.3)
    finally:
        os.killpg(first.pid, signal.SIGKILL)   # the driver and its JVM: the cluster goes on
        first.wait()
    assert _written(out) == Counter({("a", 0.0, 9): 1})
    send(LATER)
    _run(cluster, source, out / "o", *flags, "--until=latest")
    assert _written(out) == _expected(EVENTS + LATER)


def _processes_under(directory: str) -> List[str]:
    """The command lines of the processes whose working directory is under `directory`: the
    workers' executors and their Python workers run in the workers' work directories."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(directory):
                found.append(open(f"/proc/{pid}/cmdline").read().replace("\0", " ")[:200])
        except OSError:
            continue
    return found


def test_spark_status_and_down_stop_every_process_the_cluster_started(cluster):
    """`pomset spark status` sees both workers; `pomset spark down` stops the master, the
    workers and all they started, and says so; after it, no cluster runs."""
    url, _, cache = cluster
    status = _pomset("spark", "status", cache=cache)
    assert status.returncode == 0 and f"running at {url}, 2 worker(s) alive with 2 cores" in \
        status.stdout, status.stdout + status.stderr
    with open(os.path.join(cache, "pomset", "spark", "standalone", "cluster.json")) as f:
        state = json.load(f)
    assert len(state["pids"]) == 3
    down = _pomset("spark", "down", cache=cache)
    assert down.returncode == 0 and down.stdout.strip() == "Spark cluster stopped"
    for pid in state["pids"]:
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)
    assert _processes_under(state["logs"]) == []
    gone = _pomset("spark", "status", cache=cache)
    assert gone.returncode == 1 and gone.stdout.strip() == "no Spark cluster running"


def test_spark_up_names_a_port_in_use_and_a_missing_java(tmp_path, monkeypatch):
    """Refused before any JVM starts, each saying what was wrong and where."""
    from pomset.runners.spark import standalone
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(standalone.ClusterError, match=f"--port {port} is in use on 127.0.0.1"):
            standalone.up(port=port, webui_port=_free_port(), where=str(tmp_path))
    with pytest.raises(standalone.ClusterError, match="not a standalone master's URL"):
        standalone.up(master="yarn", where=str(tmp_path))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    with pytest.raises(standalone.ClusterError, match="needs Java 17 or newer and found none"):
        standalone.up(port=_free_port(), webui_port=_free_port(), where=str(tmp_path))
    assert standalone.status(str(tmp_path)) is None


def test_a_module_the_executors_lack_is_named_with_how_to_ship_it():
    """What a task failing as with `--spark_ship=none` on a worker without pomset reports (as
    Spark words it: the Python worker's traceback inside the JVM's)."""
    from pyspark.errors import PySparkException
    from pomset.runners.spark.failures import SparkJobError, user_errors
    failure = ("Job aborted due to stage failure: Task 0 in stage 1.0 failed 4 times\n"
               "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
               '  File "worker.py", line 1, in main\n'
               "ModuleNotFoundError: No module named 'pomset'\n"
               "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException")
    with pytest.raises(SparkJobError) as got:
        with user_errors():
            raise PySparkException(message=failure)
    assert str(got.value) == (
        "a Spark job failed: ModuleNotFoundError: No module named 'pomset' (in the executors' "
        "Python: ship what the tasks import with --spark_ship=all, the default, or install it "
        "on the workers)")


def test_only_masters_that_are_not_local_get_things_shipped():
    assert all(map(shipping.is_local, ["local", "local[2]", "local[*]", "local-cluster[2,1,1024]"]))
    assert not any(map(shipping.is_local, ["spark://h:7077", "yarn", "k8s://https://h:443"]))


def test_local_modules_are_those_under_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "mine.py").write_text("X = 1\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("")
    (tmp_path / "pkg" / "b.py").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import mine  # noqa: F401
    import pkg.a  # noqa: F401
    try:
        modules = shipping.local_modules()
        zipped = shipping.python_zip(str(tmp_path / "cache"))
    finally:
        for name in ("mine", "pkg", "pkg.a"):
            sys.modules.pop(name, None)
    assert {"mine.py", "pkg/__init__.py", "pkg/a.py", "pkg/b.py"} <= set(modules)
    assert not any(name.startswith(("pytest", "_pytest", "pomset")) for name in modules)
    names = zipfile.ZipFile(zipped).namelist()
    assert {"pomset/__init__.py", "pomset/runners/spark/shipping.py", "mine.py"} <= set(names)
    assert shipping.python_zip(str(tmp_path / "cache")) != zipped   # its modules are gone


_LOADED_FROM = ("import pomset.sdk.core, mine; "
                "print(pomset.sdk.core.__spec__.loader.get_filename('pomset.sdk.core')); "
                "print(mine.__spec__.loader.get_filename('mine')); print(mine.X)")


def _import_from(zipped: str, cwd: str) -> List[str]:
    """What a fresh Python with only `zipped` on its path loads pomset and `mine` from."""
    done = subprocess.run([sys.executable, "-c", _LOADED_FROM], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": zipped}, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_shipped_zip_holds_bytecode_that_executors_import(tmp_path, monkeypatch):
    (tmp_path / "mine.py").write_text("X = 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import mine  # noqa: F401
    try:
        zipped = shipping.python_zip(str(tmp_path / "cache"))
    finally:
        sys.modules.pop("mine", None)
    names = set(zipfile.ZipFile(zipped).namelist())
    sources = {n for n in names if n.endswith(".py")}
    assert {n + "c" for n in sources} == names - sources
    away = tmp_path / "elsewhere"
    away.mkdir()
    core, own, x = _import_from(zipped, str(away))
    assert core == os.path.join(zipped, "pomset", "sdk", "core.pyc")
    assert own == os.path.join(zipped, "mine.pyc") and x == "1"
    # an executor whose Python has another bytecode version reads the sources
    other = str(tmp_path / "other.zip")
    with zipfile.ZipFile(zipped) as z, zipfile.ZipFile(other, "w") as out:
        for n in z.namelist():
            data = z.read(n)
            out.writestr(n, b"\0\0" + data[2:] if n.endswith(".pyc") else data)
    core, own, x = _import_from(other, str(away))
    assert core == os.path.join(other, "pomset", "sdk", "core.py")
    assert own == os.path.join(other, "mine.py") and x == "1"


def test_the_executors_python_is_the_users_choice_else_this_one(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert worker_python(pm.PipelineOptions([])) == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/env/python")
    assert worker_python(pm.PipelineOptions([])) == "/env/python"
    flags = ["--spark_conf=spark.pyspark.python=/conf/python"]
    assert worker_python(pm.PipelineOptions(flags)) == "/conf/python"


@pytest.mark.parametrize("master, env", [("sc://127.0.0.1:15002", {}),
                                         ("local[2]", {"SPARK_REMOTE": "sc://h"})])
def test_spark_connect_is_refused_naming_what_it_lacks(master, env, monkeypatch):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(SparkSetupError, match="Spark Connect.*SparkContext.*foreachBatch"):
        spark_session(pm.PipelineOptions([f"--spark_master={master}"]))
