"""O+ deployed by VSN parallelism (STRETCH §4-§7): the paper's operators give what their
definitions say; random reconfigurations give the static run's output with watermarks that
never go back; a running pipeline's set_parallelism and the elastic controller change the
instance count without changing the output or moving state."""
import pickle
import random
import threading
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

import pomset as pm
from pomset.runtime.ordered.vsn import VSNDeployment, elastic_target
from pomset.sdk.errors import PipelineConstructionError, UserCodeError

S = 1_000_000   # µs per second


def count_one(w, value, emit):
    w.state += 1


def emit_count(w, emit):
    emit((w.key, w.start // S, w.state))


def wordcount(**kw):
    return pm.OPlus(advance=60, size=120, keys=lambda tweet: set(tweet.split()),
                    initial=lambda: 0, update=count_one, output=emit_count, **kw)


def words_pairs(text):
    ws = text.split()
    return {(a, b) for i, a in enumerate(ws) for b in ws[i + 1:i + 3]}


def expected_counts(tweets, keys, advance=60, size=120):
    """Counts per key and window start, straight from the definition."""
    out = Counter()
    for text, t in tweets:
        for k in keys(text):
            first = (t - size) // advance * advance + advance
            for start in range(first, t // advance * advance + 1, advance):
                out[(k, start)] += 1
    return dict(out)


def tweets_of(n, seed=1):
    rng = random.Random(seed)
    words = "apple pear fig kiwi lime plum date yuzu".split()
    return [(" ".join(rng.choice(words) for _ in range(rng.randint(0, 6))), rng.randint(0, 900))
            for _ in range(n)]


def run_oplus(tweets, op, flags=()):
    p = pm.Pipeline(argv=["--quiet", *flags])
    out = (p | pm.Create([pm.TimestampedValue(text, t) for text, t in tweets])) | op
    result = p.run()
    return [(wv.ts, wv.value) for wv in result.collect(out)], result.metrics()


# --- the paper's operators ----------------------------------------------------------------------
@pytest.mark.parametrize("parallelism", [1, 3])
def test_wordcount_counts_each_words_windows(parallelism):
    tweets = tweets_of(400)
    got, metrics = run_oplus(tweets, wordcount(parallelism=parallelism, label="wc"))
    assert {(k, s): c for _, (k, s, c) in got} == expected_counts(
        tweets, lambda text: set(text.split()))
    # each output at its window's last instant, in timestamp order
    assert all(ts == (s + 120) * S - 1 for ts, (_, s, _) in got)
    assert [ts for ts, _ in got] == sorted(ts for ts, _ in got)
    assert metrics["wc"]["instances"] == parallelism


def test_paircount_a_tuple_updates_every_pair_it_holds():
    tweets = tweets_of(300, seed=2)
    op = pm.OPlus(advance=60, size=120, keys=words_pairs, initial=lambda: 0, update=count_one,
                  output=emit_count, parallelism=2)
    got, _ = run_oplus(tweets, op)
    assert {(k, s): c for _, (k, s, c) in got} == expected_counts(tweets, words_pairs)


def test_output_does_not_depend_on_parallelism():
    tweets = tweets_of(500, seed=3)
    outs = [run_oplus(tweets, wordcount(parallelism=n))[0] for n in (1, 2, 5)]
    assert outs[0] == outs[1] == outs[2]


def test_single_window_slides_and_purges_with_the_defaults():
    """window="single": one window per key sliding by `advance`; the default update keeps the
    tuples, the default slide drops those that fell out; output sees what is inside."""
    values = [("k", t) for t in (0, 5, 11, 14, 25, 27, 41)]

    def sizes(w, emit):
        emit((w.start // S, sorted(v for _, (_, v) in w.state)))

    op = pm.OPlus(advance=10, size=20, keys=lambda kv: [kv[0]], output=sizes, window="single")
    p = pm.Pipeline(argv=["--quiet"])
    out = p | pm.Create([pm.TimestampedValue(v, v[1]) for v in values]) | op
    got = [wv.value for wv in p.run().collect(out)]
    # the window starts at the first tuple's earliest window (-10), holds what falls in it
    assert got == [(-10, [0, 5]), (0, [0, 5, 11, 14]), (10, [11, 14, 25, 27]), (20, [25, 27]),
                   (30, [41]), (40, [41])]


def band_join_update(w, value, emit):
    """A ScaleJoin-style band join: compare with the other input's kept tuples (numpy), keep
    this one in its input's state."""
    import numpy as np
    other = w.states[1 - w.input]
    if other:
        xs = np.fromiter((x for _, x in other), float, len(other))
        for i in np.nonzero(np.abs(xs - value[1]) <= 1.0)[0]:
            left, right = (value, other[i]) if w.input == 0 else (other[i], value)
            emit((left[0], right[0]))
    w.state.append((value[0], value[1]))


def test_band_join_of_two_inputs_matches_every_close_pair_once():
    rng = random.Random(4)
    left = [(f"l{i}", rng.uniform(0, 20), rng.randint(0, 100)) for i in range(150)]
    right = [(f"r{i}", rng.uniform(0, 20), rng.randint(0, 100)) for i in range(150)]
    p = pm.Pipeline(argv=["--quiet"])
    ls = p | "L" >> pm.Create([pm.TimestampedValue((n, x), t) for n, x, t in left])
    rs = p | "R" >> pm.Create([pm.TimestampedValue((n, x), t) for n, x, t in right])
    # tumbling windows of 50 s; every tuple under one key, shared by the instances' buckets
    op = pm.OPlus(advance=50, size=50, keys=lambda v: [0], update=band_join_update,
                  parallelism=2)
    out = (ls, rs) | op
    got = sorted(wv.value for wv in p.run().collect(out))
    expected = sorted((ln, rn) for ln, lx, lt in left for rn, rx, rt in right
                      if lt // 50 == rt // 50 and abs(lx - rx) <= 1.0)
    assert got == expected


# --- reconfiguration ------------------------------------------------------------------------
STEPS = st.lists(st.one_of(
    st.tuples(st.just("data"), st.lists(st.tuples(st.integers(0, 9), st.integers(0, 30)),
                                        max_size=12)),
    st.tuples(st.just("wm"), st.integers(1, 40)),
    st.tuples(st.just("par"), st.integers(1, 6))), max_size=30)


def summing() -> pm.OPlus:
    return pm.OPlus(advance=5, size=15, keys=lambda kv: [kv[0]], initial=lambda: 0,
                    update=lambda w, kv, emit: setattr(w, "state", w.state + kv[1]),
                    output=lambda w, emit: emit((w.key, w.start, w.state)), max_parallelism=6)


def feed(d, steps, reconfigure=True):
    """Feed the steps to a deployment: the outputs, the holds it reported after each step,
    and the input watermark reached."""
    now, last, out, holds = 0, 0, [], []
    for kind, arg in steps:
        if kind == "data":
            rows = sorted(((now + dt, (k, dt)) for k, dt in arg), key=lambda r: r[0])
            rows = [(max(ts, last), v) for ts, v in rows]   # a gate's sources are sorted
            last = rows[-1][0] if rows else last
            d.add(0, rows)
        elif kind == "wm":
            now = max(now + arg, last)
            d.advance(0, now)
        elif reconfigure:
            d.request(arg)
        out += d.run()
        holds.append(d.hold())
    return out, holds, now


def drive(steps, reconfigure):
    """A sum per key over sliding windows, fed the steps, then the end of its input."""
    d = VSNDeployment(summing(), "sum", 1)
    out, holds, _ = feed(d, steps, reconfigure)
    d.advance(0, float("inf"))
    out += d.run()
    d.close()
    return out, holds, d


@settings(max_examples=150, deadline=None)
@given(STEPS)
def test_random_reconfigurations_give_the_static_runs_output(steps):
    static, static_holds, _ = drive(steps, reconfigure=False)
    elastic, holds, d = drive(steps, reconfigure=True)
    assert elastic == static
    assert holds == static_holds
    assert holds == sorted(holds)          # watermarks never go back
    assert all(r["cpu_seconds"] < 0.04 for r in d.reconfigurations)


def test_reconfiguration_moves_no_state_and_its_time_is_flat_in_state_size():
    times = {}
    for keys in (1_000, 100_000):
        spec = pm.OPlus(advance=10, size=10, keys=lambda v: [v], initial=lambda: 0,
                        update=count_one, max_parallelism=2)
        d = VSNDeployment(spec, "wc", 1)
        d.add(0, [(1, k) for k in range(keys)])
        d.advance(0, 2)
        d.run()
        state = [id(b.windows) for b in d.buckets]
        for n in (2, 1, 2, 1):
            d.request(n)
            d.advance(0, d.gate_in.frontier() + 1)
            d.run()
        assert [id(b.windows) for b in d.buckets] == state   # the same objects: nothing moved
        assert sum(len(b.windows) for b in d.buckets) == keys
        times[keys] = max(r["cpu_seconds"] for r in d.reconfigurations)
        d.close()
    assert times[100_000] < 0.04 and times[1_000] < 0.04


def test_a_snapshot_restores_into_a_fresh_deployment_mid_stream():
    steps = [("data", [(k % 4, k) for k in range(20)]), ("wm", 7), ("par", 3),
             ("data", [(1, 2), (2, 3)]), ("wm", 4)]
    whole, _, _ = drive(steps + [("wm", 30)], reconfigure=True)
    d = VSNDeployment(summing(), "sum", 1)
    out, _, now = feed(d, steps)
    saved = pickle.loads(pickle.dumps(d.snapshot()))
    d.close()
    again = VSNDeployment(summing(), "sum", 1)
    again.restore(saved)
    assert again.parallelism == 3
    again.advance(0, now + 30)
    out += again.run()
    again.advance(0, float("inf"))
    out += again.run()
    again.close()
    assert out == whole


def test_the_elastic_controller_keeps_the_load_per_instance_between_its_thresholds():
    assert elastic_target(0.5, 1, 8) == 1          # 50% of one instance: stays
    assert elastic_target(0.95, 1, 8) == 2         # above 90%: to 70% or below
    assert elastic_target(3.0, 2, 8) == 5
    assert elastic_target(3.0, 2, 4) == 4          # capped at max_parallelism
    assert elastic_target(0.2, 4, 8) == 1          # below 45%: remove what is idle
    assert elastic_target(0.0, 3, 8) == 1


def streamed(tweets, chunk):
    """A TestStream of the tweets (in timestamp order), `chunk` at a time, the watermark
    moving to each chunk's last time."""
    stream = pm.TestStream()
    for i in range(0, len(tweets), chunk):
        part = tweets[i:i + chunk]
        stream = (stream.add_elements([pm.TimestampedValue(text, t) for text, t in part])
                  .advance_watermark_to(part[-1][1]))
    return stream.advance_watermark_to_infinity()


# --- on a running pipeline ----------------------------------------------------------------
class Gate:
    """Holds the run at one element until the test lets it go on."""
    reached = threading.Event()
    go = threading.Event()


def hold_at(value):
    if value == "STOP":
        Gate.reached.set()
        assert Gate.go.wait(60)
    return value


def test_set_parallelism_on_a_running_pipeline():
    tweets = tweets_of(300, seed=5)
    static, _ = run_oplus(tweets, wordcount(label="wc"))
    Gate.reached.clear()
    Gate.go.clear()
    p = pm.Pipeline(argv=["--quiet", "--bundle_size=50"])
    texts = [pm.TimestampedValue(text, t) for text, t in tweets]
    texts.insert(150, pm.TimestampedValue("STOP", 0))
    words = (p | pm.Create(texts) | pm.Map(hold_at)
             | pm.Filter(lambda t: t != "STOP"))
    out = words | wordcount(label="wc", max_parallelism=4)
    run = p.start()
    assert Gate.reached.wait(60)
    run.set_parallelism("wc", 3)
    with pytest.raises(ValueError, match="1 to 4"):
        run.set_parallelism("wc", 5)
    with pytest.raises(PipelineConstructionError, match="not an OPlus step"):
        run.set_parallelism("Map", 2)
    Gate.go.set()
    result = run.wait_until_finish(120)
    assert run.done
    assert [(wv.ts, wv.value) for wv in result.collect(out)] == static
    assert result.metrics()["wc"]["instances"] == 3
    assert result.metrics()["wc"]["reconfigurations"] == 1


@pytest.fixture
def by_value(spark_session):
    """Spark's workers cannot import this test module: ship its functions by value."""
    import sys
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_spark_runs_it_shared_nothing_and_refuses_set_parallelism(by_value):
    tweets = tweets_of(300, seed=7)
    local, _ = run_oplus(tweets, wordcount(label="wc"))
    p = pm.Pipeline(argv=["--runner=spark", "--quiet"])
    out = (p | pm.Create([pm.TimestampedValue(text, t) for text, t in tweets])
           | wordcount(label="wc", parallelism=2))
    run = p.start()
    with pytest.raises(PipelineConstructionError, match="shared-nothing"):
        run.set_parallelism("wc", 2)
    result = run.wait_until_finish(600)
    assert sorted((wv.ts, wv.value) for wv in result.collect(out)) == sorted(local)

    streaming = pm.Pipeline(argv=["--runner=spark", "--streaming", "--quiet"])
    streaming | pm.Create([pm.TimestampedValue("a", 1)]) | wordcount(label="wc")
    with pytest.raises(PipelineConstructionError, match="Spark streaming does not run it"):
        streaming.run()


def slow_count(w, value, emit):
    import time
    time.sleep(0.0005)
    w.state += 1


def test_elastic_run_scales_up_under_load_and_gives_the_static_output():
    """A stream of tweets whose update is slow (sleeps: the instances' threads overlap it):
    the controller sees one instance busy nearly all the time, adds one, and the output is
    the static run's."""
    tweets = sorted(tweets_of(800, seed=6), key=lambda r: r[1])
    stream = streamed(tweets, 40)
    op = dict(advance=60, size=120, keys=lambda tweet: set(tweet.split()), initial=lambda: 0,
              update=slow_count, output=emit_count, label="wc", max_parallelism=4)

    def run(flags):
        p = pm.Pipeline(argv=["--quiet", *flags])
        out = p | stream | pm.OPlus(**op)
        result = p.run()
        return [(wv.ts, wv.value) for wv in result.collect(out)], result.metrics()["wc"]
    static, _ = run([])
    elastic, metrics = run(["--elastic"])
    assert elastic == static
    assert metrics["reconfigurations"] >= 1 and metrics["instances"] >= 2


# --- errors ---------------------------------------------------------------------------------
def test_a_failing_update_names_the_step_and_the_value():
    def boom(w, value, emit):
        raise ZeroDivisionError("no")
    with pytest.raises(UserCodeError, match=r"'wc \(update\)'.*'a b'"):
        run_oplus([("a b", 1)], pm.OPlus(advance=1, size=1, keys=str.split, update=boom,
                                         label="wc"))


def test_key_functions_must_match_the_inputs():
    p = pm.Pipeline(argv=["--quiet"])
    a = p | "A" >> pm.Create([1])
    b = p | "B" >> pm.Create([2])
    with pytest.raises(PipelineConstructionError, match="2 inputs and 3 key functions"):
        (a, b) | pm.OPlus(advance=1, size=1, keys=[str, str, str])
    with pytest.raises(ValueError, match="positive"):
        pm.OPlus(advance=0, size=1, keys=str)
    with pytest.raises(ValueError, match="'multi' or 'single'"):
        pm.OPlus(advance=1, size=1, keys=str, window="sliding")


def test_late_tuples_are_dropped_and_counted():
    events = [("a", 10), ("a", 20)]
    stream = (pm.TestStream().add_elements([pm.TimestampedValue(v, t) for v, t in events])
              .advance_watermark_to(100)
              .add_elements([pm.TimestampedValue("a", 50)])
              .advance_watermark_to_infinity())
    p = pm.Pipeline(argv=["--quiet"])
    out = p | stream | pm.OPlus(advance=10, size=10, keys=lambda v: [v], initial=lambda: 0,
                                update=count_one, output=emit_count, label="wc")
    with pytest.warns(pm.LateDataWarning, match=r"'wc' dropped 1 late elements \(33\.3% of the 3 "
                      r"it received\): they came behind the step's input watermark"):
        result = p.run()
    assert [wv.value for wv in result.collect(out)] == [("a", 10, 1), ("a", 20, 1)]
    assert result.metrics()["wc"]["dropped"] == 1


# --- streaming from Kafka, stopped and resumed from its checkpoint --------------------------
def test_kafka_run_resumes_its_windows_from_the_checkpoint(kafka_broker, tmp_path):
    """Half the tweets, a run stopped by SIGTERM (it commits and checkpoints); the rest, a
    second run from that checkpoint with another instance count: the windows that span both
    halves count both, each output once."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time
    from kafka_util import new_topic, produce, read_topic
    tweets = sorted(tweets_of(400, seed=8), key=lambda r: r[1])
    source, sink = new_topic(kafka_broker, "tweets"), new_topic(kafka_broker, "counts")
    records = [{"value": {"text": text, "t": t}} for text, t in tweets]
    job = [sys.executable, os.path.join(os.path.dirname(__file__), "oplus_kafka_job.py"),
           f"--bootstrap={kafka_broker}", f"--source={source}", f"--sink={sink}", "--quiet",
           f"--checkpoint_dir={tmp_path / 'cp'}", "--checkpoint_interval=0.2"]
    produce(kafka_broker, source, records[:200])
    first = subprocess.Popen(job + ["--parallelism=1"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not read_topic(kafka_broker, sink, timeout=1):
        assert first.poll() is None and time.monotonic() < deadline, first.stderr.read()
    first.send_signal(signal.SIGTERM)
    assert first.wait(60) == 143, first.stderr.read()
    produce(kafka_broker, source, records[200:])
    second = subprocess.run(job + ["--parallelism=3", "--until=latest"], capture_output=True,
                            text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-3000:]
    got = Counter(tuple(json.loads(m.value())) for m in read_topic(kafka_broker, sink))
    assert set(got.values()) == {1}
    assert {(k, s): c for k, s, c in got} == expected_counts(tweets,
                                                             lambda text: set(text.split()))


def test_a_grouping_after_it_sees_its_outputs_on_time():
    """OPlus outputs at a window's last instant, and holds its output watermark at what it
    may still emit: a windowed grouping after it drops nothing and sums every count."""
    tweets = sorted(tweets_of(600, seed=9), key=lambda r: r[1])
    stream = streamed(tweets, 50)
    p = pm.Pipeline(argv=["--quiet"])
    sums = (p | stream | wordcount(label="wc", parallelism=2)
            | pm.Map(lambda r: (r[0], r[2])) | pm.WindowInto(pm.FixedWindows(600))
            | "Sum" >> pm.CombinePerKey(sum))
    result = p.run()
    got = Counter()
    for wv in result.collect(sums):
        got[(wv.value[0], wv.window.start.micros // S)] += wv.value[1]
    expected = Counter()
    for (k, start), c in expected_counts(tweets, lambda text: set(text.split())).items():
        expected[(k, ((start + 120) * S - 1) // (600 * S) * 600)] += c
    assert got == expected
    assert result.metrics()["Sum"]["late"] == 0 and result.metrics()["Sum"]["dropped"] == 0
