"""The Spark runner's own parts: element rows, the session's Java check, what it refuses.
(What it computes is checked against the local runner in test_conformance.py.)"""
from __future__ import annotations

import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pomset as pm
from pomset.runners.spark import codec
from pomset.runners.spark.session import LOCAL_JIT, SparkSetupError, check_java, driver_java_options
from pomset.windowing import GLOBAL_WINDOW, NO_FIRING, IntervalWindow, PaneInfo, PaneTiming, WindowedValue

values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                                st.text(max_size=5), st.binary(max_size=5)),
                      lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner),
                                              st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                      max_leaves=8)
windows = st.one_of(st.just(GLOBAL_WINDOW),
                    st.tuples(st.integers(-10**6, 10**6), st.integers(1, 10**6)).map(
                        lambda t: IntervalWindow.from_micros(t[0], t[0] + t[1])))
panes = st.one_of(st.just(NO_FIRING),
                  st.builds(PaneInfo, st.booleans(), st.booleans(), st.sampled_from(list(PaneTiming)),
                            st.integers(0, 5), st.integers(-1, 5)))
elements = st.builds(WindowedValue.raw, values, st.integers(-2**62, 2**62), windows, panes,
                     st.sampled_from([1, -1]))


@settings(max_examples=200, deadline=None)
@given(st.lists(elements, max_size=20))
def test_elements_round_trip_through_arrow_rows(wvs):
    back = codec.decode(codec.encode(wvs))
    assert [(w.value, w.ts, w.window, w.pane, w.diff) for w in back] == \
        [(w.value, w.ts, w.window, w.pane, w.diff) for w in wvs]


@settings(max_examples=200, deadline=None)
@given(st.lists(elements, max_size=20))
def test_elements_round_trip_through_a_streaming_pack(wvs):
    from pomset.runners.spark import packs
    back, keys = packs.unpack_elements(packs.pack_elements(wvs))
    assert keys is None
    assert [(w.value, w.ts, w.window, w.pane, w.diff) for w in back] == \
        [(w.value, w.ts, w.window, w.pane, w.diff) for w in wvs]
    assert all(type(w.pane) is PaneInfo and type(w.pane.timing) is PaneTiming for w in back)


def test_values_of_main_module_classes_are_pickled_by_value():
    import __main__
    cls = type("Point", (), {"__module__": "__main__"})
    __main__.Point = cls
    try:
        data = codec.dumps(cls())
    finally:
        del __main__.Point
    assert b"_make_skeleton_class" in data   # the class itself travels with the value
    assert type(codec.loads(data)).__name__ == "Point"   # loads where __main__ has no Point


def test_java_missing_is_one_line_saying_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(SparkSetupError) as e:
        check_java()
    assert "\n" not in str(e.value) and "Java 17" in str(e.value) and "install" in str(e.value)


def test_old_java_is_one_line_naming_the_version(monkeypatch, tmp_path):
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text('#!/bin/sh\necho \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    with pytest.raises(SparkSetupError, match="found Java 11") as e:
        check_java()
    assert "\n" not in str(e.value)


def test_current_java_passes():
    if os.environ.get("JAVA_HOME") is None and not any(
            os.path.exists(os.path.join(d, "java")) for d in os.environ.get("PATH", "").split(os.pathsep)):
        pytest.skip("no java here")
    check_java()


def test_spark_conf_flag_takes_key_value():
    o = pm.PipelineOptions(["--runner=spark", "--spark_conf", "spark.a=1", "--spark_conf=b=x=y"])
    assert o.spark_conf == [("spark.a", "1"), ("b", "x=y")]
    with pytest.raises(pm.OptionsError, match="KEY=VALUE"):
        pm.PipelineOptions(["--spark_conf", "nokey"])


def test_a_local_streaming_sessions_jvm_runs_c1_alone_unless_the_user_says_otherwise():
    local = pm.PipelineOptions(["--spark_master=local[2]"])
    assert driver_java_options(local, streaming=True).split()[0] == LOCAL_JIT == "-XX:TieredStopAtLevel=1"
    # the user's flags come after pomset's JIT setting, so theirs wins (the JVM takes the last)
    user = driver_java_options(pm.PipelineOptions([
        "--spark_master=local[2]", "--spark_conf=spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=4"]),
        streaming=True)
    assert user.index(LOCAL_JIT) < user.index("-XX:TieredStopAtLevel=4")
    assert "-Dlog4j2.configurationFile=" in user
    # a batch session keeps Java's JIT (Spark's own plans run in the JVM); so does a cluster's
    # driver, which only plans
    assert LOCAL_JIT not in driver_java_options(local, streaming=False)
    cluster = driver_java_options(pm.PipelineOptions(["--spark_master=spark://host:7077"]), True)
    assert LOCAL_JIT not in cluster and "-Dlog4j2.configurationFile=" in cluster


def test_the_sessions_jvm_runs_with_the_driver_options_pomset_chose(spark_session):
    jvm = spark_session.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    chosen = driver_java_options(pm.PipelineOptions(["--spark_master=local[2]"]), streaming=False)
    assert [a for a in chosen.split() if a in arguments] == chosen.split(), arguments
    assert LOCAL_JIT not in arguments   # the suite's session is started as a batch run's


def test_the_runner_tells_the_session_whether_its_run_streams(monkeypatch):
    from pomset.runners.spark.runner import SparkRunner
    asked = []

    def no_spark(options, streaming=False):
        asked.append(streaming)
        raise RuntimeError("stop here")
    monkeypatch.setattr("pomset.runners.spark.runner.spark_session", no_spark)
    for options, source in ((["--runner=spark"], pm.Create([1])),
                            (["--runner=spark", "--streaming"], pm.Create([1]))):
        p = pm.Pipeline(options=pm.PipelineOptions(options))
        p | source | pm.Map(str)
        with pytest.raises(RuntimeError, match="stop here"):
            SparkRunner().run(p)
    assert asked == [False, True]


def test_combines_that_fire_once_in_batch_are_lifted_and_others_are_not(spark_session):
    from pomset.runners.spark.batch import BatchPlan
    p = pm.Pipeline(options=pm.PipelineOptions(["--runner=spark", "--quiet"]))
    kv = p | pm.Create([pm.TimestampedValue(("a", i), i) for i in range(10)])
    fixed = kv | "W" >> pm.WindowInto(pm.FixedWindows(5))
    fixed | "Lifted" >> pm.CombinePerKey(sum)
    (kv | "WL" >> pm.WindowInto(pm.FixedWindows(5), trigger=pm.AfterWatermark(late=pm.AfterCount(1)),
                                accumulation_mode=pm.AccumulationMode.ACCUMULATING)
     | "LateOnly" >> pm.CombinePerKey(sum))
    (kv | "WE" >> pm.WindowInto(pm.FixedWindows(5), trigger=pm.AfterWatermark(early=pm.AfterCount(2)))
     | "Early" >> pm.CombinePerKey(sum))
    (kv | "WS" >> pm.WindowInto(pm.Sessions(3)) | "Sessions" >> pm.CombinePerKey(sum))
    fixed | "Grouped" >> pm.GroupByKey()
    plan = BatchPlan(spark_session, p)
    plan.build(lambda pc: False)
    assert plan.lifted == ["Lifted", "LateOnly"]
    sums = sorted(wv.value for wv in plan.elements(next(
        n for n in p.nodes if n.label == "Lifted").outputs[None]))
    assert sums == [("a", 10), ("a", 35)]


@settings(max_examples=10, deadline=None)
@given(size=st.integers(1, 50), period=st.integers(1, 50), offset=st.integers(-100, 100),
       sliding=st.booleans(), times=st.lists(st.integers(-10**4, 10**4), min_size=1, max_size=40))
def test_fixed_and_sliding_windows_by_spark_columns_are_the_windowfns_own(
        spark_session, size, period, offset, sliding, times):
    from pomset.runners.spark.batch import _assign_by_columns
    fn = pm.SlidingWindows(size, period, offset) if sliding else pm.FixedWindows(size, offset)
    elements = [WindowedValue.raw(i, t * 1_000_000, GLOBAL_WINDOW, NO_FIRING, 1)
                for i, t in enumerate(times)]
    df = spark_session.createDataFrame(codec.encode(elements).to_pandas(), codec.ELEMENT)
    got = sorted((wv.value, wv.window.start_us, wv.window.max_ts)
                 for wv in codec.decode(_assign_by_columns(df, fn).toArrow()))
    expected = sorted((wv.value, w.start_us, w.max_ts) for wv in elements
                      for w in fn.assign_micros(wv.ts, wv.value))
    assert got == expected


def test_consecutive_python_steps_run_in_one_arrow_task(spark_session):
    from pomset.runners.spark.batch import BatchPlan
    p = pm.Pipeline(options=pm.PipelineOptions(["--runner=spark", "--quiet"]))
    out = (p | pm.Create([pm.TimestampedValue(("a", i), i) for i in range(10)])
           | "Inc" >> pm.Map(lambda kv: (kv[0], kv[1] + 1))
           | "Evens" >> pm.Filter(lambda kv: kv[1] % 2 == 0)
           | pm.WindowInto(pm.Sessions(3))
           | pm.CombinePerKey(sum)
           | "Fmt" >> pm.Map(lambda kv: f"{kv[0]}={kv[1]}"))
    plan = BatchPlan(spark_session, p)
    plan.build(lambda pc: False)
    text = plan.df(out)._jdf.queryExecution().optimizedPlan().toString()
    # Map, Filter, the Sessions assignment and keying: one task; the kernel and the final Map
    assert text.count("MapInArrow") == 1 and text.count("FlatMapGroupsInArrow") == 1, text
    assert [wv.value for wv in plan.elements(out)] == ["a=30"]   # one session [1, 12)


def test_local_python_workers_run_the_installed_pyspark_not_its_zip_with_its_imports_frozen(spark_session):
    def worker_imports(_: object) -> tuple:   # nested: pickled by value, for the workers
        import os
        import sys
        import zipimport
        archives = [p for p in sys.path if p.endswith((".zip", ".jar")) and os.path.exists(p)]
        importers = [k for k, v in sys.path_importer_cache.items()
                     if isinstance(v, zipimport.zipimporter)]
        import gc
        return (os.getpid(), sys.modules["pyspark"].__file__, tuple(archives), tuple(importers),
                gc.get_freeze_count())
    p = pm.Pipeline(options=pm.PipelineOptions(["--runner=spark", "--quiet"]))
    out = p | pm.Create([1, 2, 3]) | pm.Map(worker_imports)
    seen = {wv.value for wv in p.run().collect(out)}
    assert spark_session.conf.get("spark.python.daemon.module") == "pomset.runners.spark.daemon"
    assert all(pid != os.getpid() for pid, *_ in seen)   # ran in Spark's Python workers
    # no archive on the path, so PySpark's per-task invalidation of the import caches reads none
    assert not any(".zip" in f or archives or importers for _, f, archives, importers, _ in seen), seen
    # what the daemon imported is out of the workers' garbage collections (PySpark runs a full
    # one after every task): pyspark's worker, pandas, pyarrow and pomset's tasks are frozen
    assert all(frozen > 50_000 for *_, frozen in seen), seen


def _tree(root, py4j: bool) -> tuple:
    site = root / "site"
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    if py4j:
        (site / "py4j").mkdir()
        (site / "py4j" / "__init__.py").write_text("")
    (site / "pyspark" / "jars").mkdir()
    zips = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"),
            str(site / "pyspark" / "jars" / "spark-core_2.13-4.3.0.jar")]
    for z in zips:
        open(z, "wb").close()
    return str(site), zips


@pytest.mark.parametrize("py4j", [True, False])
def test_the_daemon_drops_the_archives_of_the_installed_pyspark_only(tmp_path, py4j):
    from pomset.runners.spark.daemon import installed_first
    site, (pyspark_zip, py4j_zip, core_jar) = _tree(tmp_path, py4j)
    other = str(tmp_path / "elsewhere" / "pyspark.zip")   # another Spark's (SPARK_HOME)
    other_jar = str(tmp_path / "elsewhere" / "spark-core_2.13-4.3.0.jar")
    path = [pyspark_zip, py4j_zip, core_jar, other, other_jar, "", site]
    assert installed_first(path) == [p for p in path if p not in (pyspark_zip, core_jar)
                                     and (p != py4j_zip or not py4j)]
    assert installed_first([pyspark_zip, py4j_zip, core_jar, str(tmp_path)]) == [
        pyspark_zip, py4j_zip, core_jar, str(tmp_path)]   # no pyspark installed: as it was


def test_the_daemon_forgets_the_importers_of_what_it_dropped(monkeypatch):
    import sys
    from pomset.runners.spark.daemon import forget_importers
    cache = {"/a/spark-core.jar": object(), "/a/spark-core.jar/org": object(),
             "/a/spark-core.jar2": object(), "/b": object()}
    monkeypatch.setattr(sys, "path_importer_cache", dict(cache))
    forget_importers({"/a/spark-core.jar"})
    assert set(sys.path_importer_cache) == {"/a/spark-core.jar2", "/b"}


def test_a_home_without_the_zips_links_everything_else_and_is_made_once(tmp_path):
    from pomset.runners.spark.spark_home import home_without_zips
    home = tmp_path / "pyspark"
    (home / "jars").mkdir(parents=True)
    (home / "bin").mkdir()
    (home / "bin" / "spark-submit").write_text("#!/bin/sh\n")
    (home / "python" / "lib").mkdir(parents=True)
    (home / "python" / "pyspark").mkdir()
    for name in ("pyspark.zip", "py4j-0.10.9.9-src.zip", "PY4J_LICENSE.txt"):
        (home / "python" / "lib" / name).write_text(name)
    copy = home_without_zips(str(home), str(tmp_path / "cache"))
    assert sorted(os.listdir(copy)) == ["bin", "jars", "python"]
    assert os.path.realpath(os.path.join(copy, "bin", "spark-submit")) == str(home / "bin" / "spark-submit")
    assert sorted(os.listdir(os.path.join(copy, "python"))) == ["lib", "pyspark"]
    assert os.listdir(os.path.join(copy, "python", "lib")) == ["PY4J_LICENSE.txt"]
    (home / "jars" / "new.jar").write_text("")   # linked, not copied: the copy sees it
    assert home_without_zips(str(home), str(tmp_path / "cache")) == copy
    assert os.path.exists(os.path.join(copy, "jars", "new.jar"))
    (home / "conf").mkdir()   # another pyspark there: a copy of its own
    other = home_without_zips(str(home), str(tmp_path / "cache"))
    assert other != copy and "conf" in os.listdir(other)
    (home / "python" / "lib" / "pyspark.zip").unlink()
    assert home_without_zips(str(home), str(tmp_path / "other")) is None   # nothing to leave out


def test_a_user_set_spark_home_is_left_as_it_is(monkeypatch):
    from pomset.runners.spark.spark_home import launch_env
    monkeypatch.setenv("SPARK_HOME", "/opt/spark")
    assert launch_env() == {}


def test_a_local_sessions_jvm_runs_from_the_home_without_zips_and_leaves_the_environment_alone(tmp_path):
    """In a process of its own: the JVM is started once per process, by its first session."""
    import subprocess
    import sys
    script = tmp_path / "session.py"
    script.write_text(
        "import json, os, sys\n"
        "import pomset as pm\n"
        "from pomset.runners.spark.session import spark_session\n"
        "s = spark_session(pm.PipelineOptions(['--spark_master=local[1]']))\n"
        "jvm = s.sparkContext._jvm.System\n"
        "print(json.dumps([jvm.getenv('SPARK_HOME'), jvm.getenv('PYSPARK_ARCHIVES_PATH'),\n"
        "                  os.environ.get('SPARK_HOME')]))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_ARCHIVES_PATH")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    import json
    home, archives, ours = json.loads(out.stdout.strip().splitlines()[-1])
    assert home.startswith(str(tmp_path / "cache")) and ours is None
    assert os.path.isdir(os.path.join(home, "jars"))
    assert not os.path.exists(os.path.join(home, "python", "lib", "pyspark.zip"))
    zips = archives.split(",")
    assert any(z.endswith("pyspark.zip") for z in zips) and all(os.path.isfile(z) for z in zips)


def _daemon(**env):
    """A started pomset daemon (as Spark starts it for a local master) -> (pid, its
    environment, its threads, whether it has loaded pyarrow), then stopped."""
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, "-m", "pomset.runners.spark.daemon", "pyspark.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, "OMP_NUM_THREADS": "1", **env})
    try:
        assert len(proc.stdout.read(4)) == 4   # its port: it is serving
        with open(f"/proc/{proc.pid}/environ", "rb") as f:
            environ = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        with open(f"/proc/{proc.pid}/maps") as f:
            arrow = "libarrow" in f.read()
        return environ, len(os.listdir(f"/proc/{proc.pid}/task")), arrow
    finally:
        proc.stdin.close()
        proc.wait(30)


def test_the_daemon_imports_the_tasks_modules_before_it_forks_and_stays_single_threaded():
    environ, threads, arrow = _daemon()
    assert (threads, arrow) == (1, True)
    assert b"POMSET_DAEMON_NO_PREIMPORT" not in environ


def test_a_daemon_whose_imports_start_a_thread_runs_again_without_them():
    environ, threads, arrow = _daemon(JE_ARROW_MALLOC_CONF="background_thread:true")
    assert (threads, arrow) == (1, False)
    assert environ[b"POMSET_DAEMON_NO_PREIMPORT"] == b"1"


def test_a_primitive_without_translation_is_refused_naming_it():
    from pomset.sdk.ptransform import Primitive

    class Reverse(Primitive):
        def outputs(self, node):
            return {None: node.inputs[0].derive()}

    p = pm.Pipeline(options=pm.PipelineOptions(["--runner=spark", "--quiet"]))
    _ = p | pm.Create([1, 2]) | "Rev" >> Reverse()
    with pytest.raises(pm.PipelineConstructionError, match="cannot run 'Rev': Reverse"):
        p.run()
