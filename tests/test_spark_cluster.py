"""The Spark runner on a real standalone cluster: a master and a worker started with pyspark's
own `spark-class` on loopback, the worker's Python a virtualenv with only pyarrow, pandas and
numpy (`worker_venv.py`): pomset, the pipeline's own module and the binary packages its tasks
need (protobuf for transformWithState, confluent-kafka for the Kafka source) reach the
executors only by what the run ships. A batch run, and a streaming Kafka run killed and
resumed from its checkpoint: few runs, each a driver and an executor JVM, to keep it short. Each pipeline runs as its own process
(`cluster_job.py`), as a user runs one, so the suite's local session is untouched. Also the
shipping module's parts, and the choice of the executors' Python."""
from __future__ import annotations

import json
import os
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
JOB = os.path.join(HERE, "cluster_job.py")
# with nothing of this checkout's environment: the job finds pomset itself, the cluster not
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME")}
EVENTS = [("a", 1, 5), ("a", 2, 25), ("b", 3, 40), ("a", 4, 52)]
LATER = [("b", 5, 33), ("a", 6, 95)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(spark_home: str, log: str, *args: str, env: dict) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen([os.path.join(spark_home, "bin", "spark-class"), *args],
                                stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(master URL, the worker's Python, a cache directory for what runs ship): a master and a
    worker with 1 core and 1 GiB, stopped at the end, whatever happened."""
    import pyspark
    python = worker_venv.build()
    assert subprocess.run([python, "-c", "import pomset"], env=CLEAN_ENV, cwd=str(
        tmp_path_factory.getbasetemp()), capture_output=True).returncode != 0, \
        "the worker's Python must not have pomset"
    home = os.path.dirname(os.path.abspath(pyspark.__file__))
    logs = tmp_path_factory.mktemp("cluster")
    env = dict(CLEAN_ENV, SPARK_HOME=home, SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1",
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs = [_start(home, str(logs / "master.log"), "org.apache.spark.deploy.master.Master",
                    "--host", "127.0.0.1", "--port", str(port),
                    "--webui-port", str(_free_port()), env=env)]
    try:
        procs.append(_start(home, str(logs / "worker.log"), "org.apache.spark.deploy.worker.Worker",
                            url, "--host", "127.0.0.1", "--webui-port", str(_free_port()),
                            "--cores", "1", "--memory", "1g", "--work-dir", str(logs / "work"),
                            env=env))
        deadline = time.monotonic() + 120
        while "Registering worker" not in (logs / "master.log").read_text():
            assert all(p.poll() is None for p in procs), (logs / "master.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the cluster did not start"
            time.sleep(0.3)
        yield url, python, str(logs / "cache")
    finally:
        for proc in reversed(procs):
            _stop(proc)


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
    flags = [f"--checkpoint_dir={tmp_path / 'ck'}", "--trigger_interval=0.5"]
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
