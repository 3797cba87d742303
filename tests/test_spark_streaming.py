"""The Spark runner's streaming queries beyond the conformance suite: restarting from a
checkpoint after a real kill, directory streams, and the shape of the query (each step once)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter


import pytest

import pomset as pm

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark_stream_job.py")


def _start(*flags: str) -> subprocess.Popen:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    return subprocess.Popen([sys.executable, JOB, *flags], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)


def _finish(proc: subprocess.Popen, timeout: float = 300) -> None:
    _, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]


def _kill(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)   # the driver and its JVM, no chance to clean up
    proc.wait()


def _wait_for(predicate, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def _outputs(directory) -> dict:
    """{file name: multiset of its lines} for the sink's per-micro-batch files."""
    return {f.name: Counter(f.read_text().splitlines()) for f in sorted(directory.glob("o-*.jsonl"))}


@pytest.mark.parametrize("job", ["transcript", "timed"])
def test_a_killed_query_restarted_from_its_checkpoint_loses_and_repeats_no_output(
        spark_session, tmp_path, job):
    import spark_stream_job
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    # the uninterrupted run in this process, the killed and the restarted one in their own
    spark_stream_job.run([f"--job={job}", f"--output={whole}/o",
                          f"--checkpoint_dir={tmp_path}/ck1"])
    expected = _outputs(whole)
    assert len(expected) > 8

    first = _start(f"--job={job}", f"--output={parts}/o", f"--checkpoint_dir={tmp_path}/ck2")
    _wait_for(lambda: len(list(parts.glob("o-*.jsonl"))) >= 4, first)
    _kill(first)
    written_before = set(_outputs(parts))
    assert 4 <= len(written_before) < len(expected)
    _finish(_start(f"--job={job}", f"--output={parts}/o", f"--checkpoint_dir={tmp_path}/ck2"))
    assert _outputs(parts) == expected
    assert not list(parts.glob(".*inprogress"))


def _write_events(path, events) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps({"k": k, "v": v, "t": t}) + "\n" for k, v, t in events))
    os.replace(tmp, path)   # a file appears whole


def test_a_directory_is_read_as_a_stream_its_watermark_trailing_the_event_times(tmp_path):
    inbox, out = tmp_path / "in", tmp_path / "out"
    inbox.mkdir()
    _write_events(inbox / "1.jsonl", [("a", 1, 5), ("a", 2, 25), ("b", 3, 40), ("a", 4, 52)])
    job = _start("--job=files", f"--input={inbox}", f"--output={out}/o", "--streaming",
                 "--max_out_of_orderness=10", "--trigger_interval=0.5",
                 f"--checkpoint_dir={tmp_path}/ck")

    def sums():
        return {(r["key"], r["window_start"]): r["value"] for lines in _outputs(out).values()
                for line in lines for r in [json.loads(line)]}
    try:
        # the watermark is 52 - 10: only [0, 30) is complete
        _wait_for(lambda: sums(), job)
        time.sleep(2)
        assert sums() == {("a", 0.0): 3}
        # then 95 - 10: [30, 60) too (b's 33 arrives late for the watermark of 42, on time
        # for its window), while a's 95 waits in [90, 120)
        _write_events(inbox / "2.jsonl", [("b", 5, 33), ("a", 6, 95)])
        _wait_for(lambda: len(sums()) == 3, job)
        time.sleep(2)
        assert sums() == {("a", 0.0): 3, ("a", 30.0): 4, ("b", 30.0): 8}
    finally:
        _kill(job)


def test_each_step_runs_once_whatever_reads_its_output(spark_session):
    """A grouping read by two later steps and recorded itself appears once in the query."""
    from pomset.runners.spark.streaming import StreamingPlan
    p = pm.Pipeline(options=pm.PipelineOptions(["--runner=spark", "--quiet"]))
    sums = (p | pm.TestStream().add_elements([("a", 1), ("b", 2)]).advance_watermark_to_infinity()
            | pm.CombinePerKey(sum))
    doubled = sums | "Double" >> pm.Map(lambda kv: (kv[0], 2 * kv[1]))
    total = sums | pm.Values() | "Total" >> pm.CombineGlobally(sum)
    targets = [sums, doubled, total]
    from pomset.runners.spark import stream_sources
    stream_sources.register(spark_session)
    bus = StreamingPlan(spark_session, p, targets, 2, p.options, "test-run").build()
    plan = bus._jdf.queryExecution().analyzed().toString()
    stateful = [n.label for n in p.nodes
                if isinstance(n.transform, pm.GroupByKey) or n.side_inputs]
    # the two combines, and CombineGlobally's empty-input default (a side input)
    assert len(stateful) == 3 == plan.count("TransformWithState")


# --- the pieces, without Spark --------------------------------------------------------------

def test_a_file_stream_releases_files_as_they_come_and_ends_when_told(tmp_path):
    from pomset.runners.spark.stream_sources import FilesReader
    from pomset.windowing import MAX_MICROS, MIN_MICROS
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.jsonl").write_text('{"t": 1}\n')
    source = pm.ReadFromJson(str(tmp_path / "*.jsonl"), timestamp_field="t")
    ending = FilesReader("s0", source, "R", until_latest=True, out_of_orderness_us=None,
                         interval_s=1.0, real_clock=True, max_files=2)
    (tmp_path / "d.jsonl").write_text('{"t": 2}\n')   # after the start: not read
    first = ending.latestOffset(ending.initialOffset(), None)
    assert first == {"n": 2, "tick": 0, "end": False}
    second = ending.latestOffset(first, None)
    assert second == {"n": 3, "tick": 0, "end": True} and ending.latestOffset(second, None) == second
    clocks = [p.value for p in ending.partitions(first, second) if p.value[0] == "clock"]
    assert clocks == [("clock", MAX_MICROS)]   # the end of time with the last file
    # resumed from an endless run's checkpoint (heartbeats counted, every file read): it
    # still ends with a micro-batch that says so
    resumed = ending.latestOffset({"n": 3, "tick": 7}, None)
    assert resumed == {"n": 3, "tick": 7, "end": True}
    assert [p.value for p in ending.partitions({"n": 3, "tick": 7}, resumed)] == [("clock", MAX_MICROS)]

    endless = FilesReader("s0", source, "R", until_latest=False, out_of_orderness_us=None,
                          interval_s=3600.0, real_clock=True, max_files=None)
    offset = endless.latestOffset(endless.initialOffset(), None)
    assert offset == {"n": 4, "tick": 0}
    assert endless.latestOffset(offset, None) == offset   # nothing new, no tick due yet
    assert [p.value for p in endless.partitions({"n": 0, "tick": 0}, offset)][-1] == ("clock", MIN_MICROS)


def test_a_test_streams_steps_become_micro_batches_with_its_clocks():
    from pomset.runtime.test_stream import stream_steps
    stream = (pm.TestStream().add_elements([pm.TimestampedValue("x", 5)])
              .advance_processing_time(10).advance_watermark_to(20).advance_watermark_to_infinity())
    steps = stream_steps(stream)
    assert [(len(e), wm, pt) for e, wm, pt in steps] == [
        (1, pm.MIN_TIMESTAMP.micros, 0), (0, pm.MIN_TIMESTAMP.micros, 10_000_000),
        (0, 20_000_000, 10_000_000), (0, pm.MAX_TIMESTAMP.micros, 10_000_000)]


def test_bus_packs_keep_elements_and_markers_apart():
    from pomset.runners.spark import packs
    from pomset.runtime.markers import ChannelMarker, MarkerRange
    wvs = [pm.WindowedValue(("k", 1), 3.0, pm.IntervalWindow(0, 10)),
           pm.WindowedValue("g", 4.0, pm.GlobalWindow(), diff=-1),
           pm.WindowedValue(("j", 2), 5.0, pm.IntervalWindow(0, 10))]
    marks = [ChannelMarker("s0", 7), MarkerRange(1, 5)]
    keys = [b"k", b"g", b"j"]
    batch = packs.element_rows(wvs, marks, "5", keys=keys, buckets=3)
    assert set(batch.column("t").to_pylist()) == {"5"}
    buckets = batch.column("n").to_pylist()
    bus = packs.read_bus(batch)
    assert sorted(bus.elements, key=repr) == sorted(wvs, key=repr) and bus.markers == marks
    assert sorted(zip(map(repr, bus.elements), bus.keys)) == sorted(zip(map(repr, wvs), keys))
    for payload, bucket in zip(batch.column("b").to_pylist(), buckets):
        if payload is not None:   # a pack holds the keys of its bucket only
            assert {packs.bucket_of(k, 3) for k in packs.unpack_elements(payload)[1]} == {bucket}


def test_each_bucket_of_a_stateful_step_lands_in_a_partition_of_its_own(spark_session):
    # grouped by the plain numbers, buckets 0 and 1 both hashed to partition 1 of 2: every
    # bucket ran in one task on one core
    from pyspark.sql import functions as F
    from pomset.runners.spark import packs
    for count, partitions in [(2, 2), (4, 4), (16, 16), (5, 2), (3, 8)]:
        labels = packs.bucket_labels(count, partitions)
        assert len(set(labels)) == count
        df = (spark_session.createDataFrame([(x,) for x in labels], "bucket long")
              .repartition(partitions, "bucket").select("bucket", F.spark_partition_id()))
        placed = dict(df.collect())
        assert [placed[x] for x in labels] == [b % partitions for b in range(count)]
    values = [0, 1, -1, 2**31, -2**31 - 1, 2**62 + 12345, -(2**63), 2**63 - 1]
    hashed = (spark_session.createDataFrame([(v,) for v in values], "v long")
              .select("v", F.expr("pmod(hash(v), 7)")).collect())
    assert [packs.spark_partition(v, 7) for v, _ in hashed] == [p for _, p in hashed]


def test_bus_packs_carry_columns_and_partials():
    import pyarrow as pa
    from pomset.runners.spark import packs
    from pomset.runtime.columnar import Columns
    c = Columns(pa.table({"city": pa.array(["a", "b"]).dictionary_encode(), "__ts": [1, 2]}))
    partial = [pm.WindowedValue(("a", 3), 1.0, pm.IntervalWindow(0, 10))]
    batch = packs.rows([packs.pack_columns(c), packs.pack_elements(partial, [b"a"],
                                                                   packs.PARTIALS)], [], "2")
    bus = packs.read_bus(batch)
    assert bus.columns[0].table.equals(c.table) and bus.elements == []
    assert bus.partials == partial and bus.partial_keys == [b"a"]
    assert [wv.value for wv in bus.all_elements()] == [pm.Row(city="a"), pm.Row(city="b")]


def test_rows_passed_through_a_stateful_step_get_their_nulls_back():
    import pandas as pd
    from pomset.runners.spark.stateful import _with_nulls
    frame = pd.DataFrame({"k": [None, None], "v": [b"x", None], "ts": [5, 0], "ws": [0, 0],
                          "we": [10, 0], "wx": [None, None], "p": [None, None], "d": [1, 0],
                          "t": ["1", "1"], "m": [None, b"marker"], "b": [None, None],
                          "n": [0, 0]})
    out = _with_nulls(frame)
    assert out["ws"].tolist() == [0, pd.NA] and out["we"].tolist() == [10, pd.NA]
    assert out["ts"].tolist() == [5, pd.NA] and out["d"].tolist() == [1, pd.NA]


def test_a_stateful_steps_batches_leave_it_a_few_to_a_frame_in_order():
    from pomset.runners.spark import codec, packs
    from pomset.runners.spark.stateful import frames
    from pomset.runtime.markers import ChannelMarker
    made = [packs.element_rows([pm.WindowedValue(i, float(i), pm.GlobalWindow())],
                               [ChannelMarker("c", i)], str(i)) for i in range(6)]
    empty = packs.rows([], [], "x")
    batches = [made[0], empty, made[1], made[2], empty, made[3], made[4], made[5]]
    (one,) = frames(batches)   # all in one frame, the empty batches left out
    assert one["t"].tolist() == [t for b in made for t in b.column("t").to_pylist()]
    assert [codec.loads(m) for m in one["m"].dropna()] == [ChannelMarker("c", i) for i in range(6)]
    limit = made[0].nbytes + made[1].nbytes   # a frame closes once it holds `limit` bytes
    split = list(frames(batches, limit))
    assert [len(f) for f in split] == [4, 4, 4]   # two batches of two rows (a pack, a marker)
    assert [t for f in split for t in f["t"]] == one["t"].tolist()
    assert list(frames([empty])) == []


def test_buckets_are_the_cores_or_the_users_and_a_checkpoint_placed_otherwise_is_refused(spark_session, tmp_path):
    from pomset.runners.spark.query import _run_state
    from pomset.sdk.run_state import run_state
    p = pm.Pipeline()
    p | pm.Create([("a", 1)]) | pm.GroupByKey()
    fresh, chosen = str(tmp_path / "fresh"), str(tmp_path / "chosen")
    os.makedirs(fresh)
    os.makedirs(chosen)
    options = pm.PipelineOptions([])
    assert _run_state(spark_session, fresh, p.nodes, options)[0] == 2   # the cores (local[2])
    three = pm.PipelineOptions(["--spark_conf=spark.sql.shuffle.partitions=3"])
    assert _run_state(spark_session, chosen, p.nodes, three)[0] == 3   # as the user says
    assert _run_state(spark_session, fresh, p.nodes, three)[0] == 2   # resumed as placed
    old = str(tmp_path / "old")
    os.makedirs(old)
    run_state(old, buckets=2)   # as pomset wrote it before keys were routed by `bucket_of`
    with pytest.raises(pm.CheckpointError, match="new --checkpoint_dir"):
        _run_state(spark_session, old, p.nodes, options)
    # 2: buckets grouped by their plain numbers; 3: every grouping's state kept a key at a
    # time; 4: a shard's states pickled together; 5: the wake-up slots kept in the meta; 6:
    # state values kept as binary; 7: a map state entry per wake-up slot; 8: a stateful
    # ParDo's whole state in one entry
    for routing in (2, 3, 4, 5, 6, 7, 8, 9):
        earlier = str(tmp_path / f"routing-{routing}")
        os.makedirs(earlier)
        run_state(earlier, buckets=2, routing=routing)
        with pytest.raises(pm.CheckpointError, match=f"routing {routing}, now 10"):
            _run_state(spark_session, earlier, p.nodes, options)


def test_a_keying_task_folds_columns_into_partials_per_key_and_window():
    import pyarrow as pa
    from pomset.runners.spark import codec, packs
    from pomset.runners.spark.streaming import _Keying
    from pomset.runtime import columnar
    from pomset.sdk.relational import Aggregation, FieldsCombineFn
    fn = FieldsCombineFn([Aggregation("v", pm.Sum(), "total")])
    keying = _Keying("3", "Sum", lambda value: value[0], 2,
                     lambda: columnar.aggregator(fn, pm.TimestampCombiner.OUTPUT_AT_EOW),
                     None, spans=False)
    keying.start()
    c = columnar.Columns(pa.table({"key": ["a", "b", "a", "a"], "v": [1, 2, 3, 4],
                                   "__ts": [1, 2, 3, 70_000_000],
                                   "__ws": [0, 0, 0, 60_000_000],
                                   "__we": [60_000_000] * 3 + [120_000_000]}),
                         keys=["key"], values=["v"])
    bus = packs.Bus()
    bus.columns, bus.markers = [c, c], ["marker"]
    rows = keying.rows(bus)   # the columns are folded, only the marker goes on
    assert rows.column("b").null_count == rows.num_rows
    partials = packs.read_bus(pa.concat_batches(list(keying.finish())))
    got = {(wv.value[0], wv.window.start.micros): wv.value[1] for wv in partials.partials}
    assert got == {("a", 0): [8], ("b", 0): [4], ("a", 60_000_000): [8]}   # Sum's accumulators
    assert partials.partial_keys == [codec.dumps(wv.value[0]) for wv in partials.partials]


def test_a_keying_task_folds_a_lifted_combines_elements_into_tallied_partials():
    import pyarrow as pa
    from pomset.runners.spark import codec, packs
    from pomset.runners.spark.streaming import _Keying
    from pomset.runtime.lifting import PartialFold, Tallied
    from pomset.windowing import IntervalWindow, NO_FIRING, WindowedValue
    w0, w1 = IntervalWindow.from_micros(0, 60), IntervalWindow.from_micros(60, 120)
    keying = _Keying("3", "S", lambda value: value[0], 2, None,
                     lambda: PartialFold(pm.Sum(), pm.TimestampCombiner.OUTPUT_AT_LATEST, "S",
                                         tally=True), spans=False)
    keying.start()
    for part in ([("a", 5, 10, w0, 1), ("b", 2, 11, w0, 1), ("a", 3, 30, w0, -1)],
                 [("a", 7, 20, w0, 1), ("a", 1, 70, w1, 1)]):
        bus = packs.Bus()
        bus.elements = [WindowedValue.raw((k, v), ts, w, NO_FIRING, d) for k, v, ts, w, d in part]
        bus.markers = ["marker"]
        rows = keying.rows(bus)   # folded: only the marker goes on
        assert rows.num_rows == 1 and rows.column("b").null_count == 1
    partials = packs.read_bus(pa.concat_batches(list(keying.finish())))
    assert not partials.elements
    got = {(wv.value[0], wv.window): (wv.value[1].acc, sorted(wv.value[1].times), wv.ts)
           for wv in partials.partials}
    assert all(type(wv.value[1]) is Tallied for wv in partials.partials)
    assert got == {("a", w0): (9, [10, 20, 30], 30), ("b", w0): (2, [11], 11),
                   ("a", w1): (1, [70], 70)}
    assert partials.partial_keys == [codec.dumps(wv.value[0]) for wv in partials.partials]


def test_combines_a_streaming_query_lifts_and_those_it_does_not(spark_session):
    """A combine is folded before its shuffle where partials give the same panes: one that
    merges, over non-merging windows, whose trigger counts no elements, with no late output,
    no allowed lateness (or the global window), and, on input with retractions, only a
    built-in one whose retraction inverts any addition."""
    from pomset.runners.spark import stream_sources
    from pomset.runners.spark.streaming import StreamingPlan

    class Latest(pm.CombineFn):   # no merge_accumulators
        def create_accumulator(self):
            return None

        def add_input(self, acc, value):
            return value

    p = pm.Pipeline(options=pm.PipelineOptions(["--runner=spark", "--quiet"]))
    kv = p | pm.TestStream().add_elements([("a", 1), ("b", 2)]).advance_watermark_to_infinity()
    early = pm.AfterWatermark(early=pm.AfterProcessingTime(1))

    def fixed(name, trigger=early):   # a grouping's input read by nothing else
        return kv | name >> pm.WindowInto(pm.FixedWindows(5), trigger=trigger)
    outs = [fixed("W1") | "Lifted" >> pm.CombinePerKey(sum),
            fixed("W2", pm.AfterWatermark(early=pm.AfterCount(2)))
            | "Counting" >> pm.CombinePerKey(sum),
            kv | "WS" >> pm.WindowInto(pm.Sessions(3)) | "Sessions" >> pm.CombinePerKey(sum),
            fixed("W3") | "NoMerge" >> pm.CombinePerKey(Latest()),
            fixed("W4") | "Grouped" >> pm.GroupByKey()]
    outs.append(kv | "WL" >> pm.WindowInto(pm.FixedWindows(5), trigger=early, allowed_lateness=10)
                | "Lateness" >> pm.CombinePerKey(sum))
    shared = fixed("W5")   # also read by a later step
    outs += [shared | "Shared" >> pm.CombinePerKey(sum), shared | pm.Map(str)]
    retracting = (kv | "R" >> pm.WindowInto(pm.Sessions(3), trigger=early,
                                             accumulation_mode=pm.AccumulationMode.RETRACTING)
                  | "Sessions again" >> pm.CombinePerKey(sum))
    outs += [retracting | "G1" >> pm.WindowInto(pm.GlobalWindows())
             | "RetractedSum" >> pm.CombinePerKey(pm.Sum()),
             retracting | "G2" >> pm.WindowInto(pm.GlobalWindows())
             | "RetractedList" >> pm.CombinePerKey(pm.ToList())]
    stream_sources.register(spark_session)
    plan = StreamingPlan(spark_session, p, outs, 2, p.options, "test-run")
    plan.build()
    assert sorted(plan.lifted) == ["Lifted", "RetractedSum"]


class _ToList(pm.CombineFn):
    """A CombineFn with no native form, vectorized (`add_inputs`)."""

    def create_accumulator(self):
        return []

    def add_input(self, acc, value):
        return acc + [value]

    def add_inputs(self, acc, values):
        return acc + list(values)

    def merge_accumulators(self, accs):
        return [v for acc in accs for v in acc]

    def extract_output(self, acc):
        return sorted(acc)


@pytest.mark.parametrize("combine, windowed", [("fields", True), ("sum", True), ("max", False),
                                                ("vectorized", True)])
def test_partials_sent_as_columns_are_the_partials_sent_as_elements(combine, windowed):
    import pyarrow as pa
    from pomset.runners.spark import codec, packs
    from pomset.runtime import columnar
    from pomset.sdk.relational import Aggregation, FieldsCombineFn
    fn = {"fields": lambda: FieldsCombineFn([Aggregation("v", f, name) for f, name in (
              (pm.Sum(), "s"), (pm.Mean(), "m"), (pm.Min(), "lo"), (pm.Count(), "n"))]),
          "sum": pm.Sum, "max": pm.Max, "vectorized": _ToList}[combine]()
    fields = hasattr(fn, "fns")
    table = {"key": ["a", "b", "a", "c", "a"], "v": [1, 2, 3, 4, 5], "__ts": [1, 2, 3, 7, 70_000_000]}
    if windowed:
        table.update({"__ws": [0, 0, 0, 0, 60_000_000],
                      "__we": [60_000_000] * 4 + [120_000_000]})
    if fields:   # a column per aggregation
        names = [f"v{i}" for i in range(len(fn.fns))]
        table.update((n, table["v"]) for n in names)
        del table["v"]
        c = columnar.Columns(pa.table(table), keys=["key"], values=names)
    else:   # (key, value) pairs
        table[columnar.KEY], table[columnar.VALUE] = table.pop("key"), table.pop("v")
        c = columnar.Columns(pa.table(table), keys=[columnar.KEY], values=[columnar.VALUE],
                             pairs=True)
    both = []
    for _ in range(2):
        agg = columnar.aggregator(fn, pm.TimestampCombiner.OUTPUT_AT_EOW)
        assert agg.add(c) is not False
        both.append(agg)
    elements = both[0].partials()
    keys = [codec.dumps(wv.value[0]) for wv in elements]
    want = packs.read_bus(packs.element_rows(elements, [], "3", keys, 4, kind=packs.PARTIALS))
    got = packs.read_bus(packs.partial_rows(both[1].partial_columns(), "3", 4))
    assert want.partials and not got.elements
    as_set = lambda bus: sorted(repr((wv.value, wv.ts, wv.window, wv.pane, wv.diff, kb))
                                for wv, kb in zip(bus.partials, bus.partial_keys))
    assert as_set(got) == as_set(want)


T0 = 1_772_323_200   # 2026-03-01 UTC, in seconds


def _one_file_per_micro_batch(folder, files) -> None:
    """Parquet files of (key, v, seconds after `T0`) rows, read in this order, one a
    micro-batch (`_windowed_sums`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    for i, rows in enumerate(files):
        pq.write_table(pa.table({
            "key": [k for k, _, _ in rows], "v": pa.array([v for _, v, _ in rows], pa.int64()),
            "ts": pa.array([(T0 + s) * 1_000_000 for _, _, s in rows],
                           pa.timestamp("us", tz="UTC"))}), folder / f"{i}.parquet")
        os.utime(folder / f"{i}.parquet", (i, i))


def _windowed_sums(folder, lateness_s: int):
    """A pipeline of the schema'd per-key sums over `folder`'s files, in minute windows with
    early and late panes, a file a micro-batch, its watermark the latest time read."""
    p = pm.Pipeline(options=pm.PipelineOptions([
        "--runner=spark", "--quiet", "--streaming", "--streaming_until=latest",
        "--max_files_per_batch=1", "--max_out_of_orderness=0"]))
    sums = (p | pm.ReadFromParquet(str(folder), timestamp_field="ts")
            | pm.WindowInto(pm.FixedWindows(60), allowed_lateness=lateness_s,
                            trigger=pm.AfterWatermark(early=pm.AfterProcessingTime(0.001),
                                                      late=pm.AfterProcessingTime(0.001)),
                            accumulation_mode=pm.AccumulationMode.ACCUMULATING)
            | "sums" >> pm.GroupBy("key").aggregate_field("v", pm.Sum(), "total")).keep()
    return p, sums


def test_a_schema_d_aggregation_gives_early_on_time_and_late_panes_from_partials(tmp_path):
    _one_file_per_micro_batch(tmp_path, [
        [("a", 1, 5), ("b", 2, 10), ("a", 3, 50)],   # one micro-batch each
        [("a", 4, 70), ("b", 5, 130), ("a", 6, 200)],
        [("a", 7, 20), ("b", 8, 30)]])                # late for [0, 60)
    p, sums = _windowed_sums(tmp_path, 3600)
    sums | pm.WriteToJson(str(tmp_path / "out" / "sums"))
    panes = p.run().collect(sums)
    last, timings = {}, Counter()
    for wv in sorted(panes, key=lambda wv: wv.pane.index):
        key = (wv.value.key, int(wv.window.start) - T0)
        last[key] = wv.value.total
        timings[key, wv.pane.timing.name] += 1
    assert last == {("a", 0): 11, ("b", 0): 10, ("a", 60): 4, ("b", 120): 5, ("a", 180): 6}
    for key in (("a", 0), ("b", 0)):   # early in the first micro-batch, on time, then late
        assert [timings[key, t] for t in ("EARLY", "ON_TIME", "LATE")] == [1, 1, 1]
    # a processing-time pane due before its micro-batch's stateful step ends fires in that
    # micro-batch (the wall clock at the step's end), not one micro-batch later
    first_batch = tmp_path / "out" / "sums-batch-000000.jsonl"
    assert first_batch.exists(), sorted(f.name for f in first_batch.parent.iterdir())
    first = [json.loads(line) for line in first_batch.read_text().splitlines()]
    assert sorted((r["key"], r["total"]) for r in first) == [("a", 4), ("b", 2)]


def test_a_schema_d_aggregation_counts_each_late_and_dropped_row(tmp_path):
    """Rows folded into partials before the stateful step are counted late and dropped one by
    one (`columnar.aggregator(tally=True)`): two late rows of one window in one micro-batch
    count 2, three rows of expired windows (two of them one window's) 3, as the kernel counts
    them element by element."""
    _one_file_per_micro_batch(tmp_path, [
        [("a", 1, 5), ("a", 2, 10)],
        [("a", 3, 130)],                        # the watermark to 130 s
        [("a", 4, 70), ("a", 5, 80)],           # late for [60, 120), within its lateness
        [("a", 6, 400)],                        # the watermark to 400 s
        [("a", 7, 20), ("a", 8, 30), ("a", 9, 90)]])   # [0, 60) and [60, 120) expired
    p, sums = _windowed_sums(tmp_path, 60)
    with pytest.warns(pm.LateDataWarning, match="dropped 3 late elements"):
        result = p.run()
    counts = result.metrics()["sums/CombinePerKey(FieldsCombineFn)"]
    assert (counts["late"], counts["dropped"]) == (2, 3)
    last = {}
    for wv in sorted(result.collect(sums), key=lambda wv: wv.pane.index):
        last[int(wv.window.start) - T0] = wv.value.total
    assert last == {0: 3, 60: 9, 120: 3, 360: 6}


def _sums_once(directory, checkpoint) -> dict:
    """A streaming run over `directory`'s Parquet files: per key, the last sum."""
    p = pm.Pipeline(options=pm.PipelineOptions([
        "--runner=spark", "--quiet", "--streaming", "--streaming_until=latest",
        f"--checkpoint_dir={checkpoint}"]))
    sums = (p | pm.ReadFromParquet(str(directory), timestamp_field="ts")
            | pm.Map(lambda r: (r["key"], r["v"]))
            | pm.WindowInto(pm.GlobalWindows()) | pm.CombinePerKey(pm.Sum())).keep()
    return dict(wv.value for wv in p.run().collect(sums))


def test_a_query_checkpoints_by_file_system_renames_unless_the_user_chose(spark_session, tmp_path):
    """Hadoop's FileContext renames run a `readlink` process per file on a local disk (about 30
    a micro-batch): pomset's queries checkpoint through the file system's own renames, their
    state stores' changelogs included, and a run resumes from them; a user's choice stands."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pomset.runners.spark.query import FILE_MANAGER, FILE_SYSTEM_MANAGER
    data = tmp_path / "in"
    data.mkdir()
    pq.write_table(pa.table({"key": ["a", "b", "a"], "v": [1, 2, 3],
                             "ts": pa.array([0, 1, 2], pa.timestamp("s", tz="UTC"))}),
                   data / "0.parquet")
    spark_session.conf.unset(FILE_MANAGER)
    try:
        assert _sums_once(data, tmp_path / "ck") == {"a": 4, "b": 2}
        assert spark_session.conf.get(FILE_MANAGER) == FILE_SYSTEM_MANAGER
        assert "0" in os.listdir(tmp_path / "ck" / "commits")
        changelogs = [f for _, _, files in os.walk(tmp_path / "ck" / "state") for f in files
                      if f.endswith(".changelog")]
        assert changelogs, "the stateful step's state store wrote no changelog"
        assert _sums_once(data, tmp_path / "ck") == {}   # resumed: nothing new to read
        theirs = FILE_SYSTEM_MANAGER.replace("FileSystemBased", "FileContextBased")
        spark_session.conf.set(FILE_MANAGER, theirs)
        assert _sums_once(data, tmp_path / "ck2") == {"a": 4, "b": 2}
        assert spark_session.conf.get(FILE_MANAGER) == theirs
    finally:
        spark_session.conf.unset(FILE_MANAGER)


@pytest.mark.parametrize("early_s, fires_now", [(0.3, True), (3.0, False)])
def test_a_grouping_waits_for_a_wake_up_due_soon_rather_than_leave_it_a_micro_batch(
        early_s, fires_now):
    """On a real clock a grouping's micro-batch ends by firing the processing-time wake-ups
    due within half a trigger interval (here 1 s), waiting for them; later ones wait for a
    later micro-batch. Both the kernel's hosts: per key, and a window at a time."""
    import time as clock
    from pomset.runners.spark.stateful import KernelProcessor
    from pomset.runtime.kernel_host import KernelHost
    from pomset.runtime.timed_combine import TimedCombineHost
    from pomset.triggers.reducers import CombineReducer
    from pomset.triggers.strategy import WindowingStrategy
    from pomset.windowing import NO_FIRING, WindowedValue, now_micros
    strategy = WindowingStrategy(pm.FixedWindows(60), pm.AfterWatermark(
        early=pm.AfterProcessingTime(early_s)), pm.AccumulationMode.ACCUMULATING, 0)
    processor = KernelProcessor("sums", strategy, pm.CombinePerKey(pm.Sum()), ["a"],
                                [["c"]], {None: "o"}, [], "g0", real_clock=True, settle_s=0.5)
    for make in (KernelHost, TimedCombineHost):
        host, out = make(strategy, CombineReducer(pm.Sum()), "sums"), []
        started = now_micros()
        host.processing_time(started, out)
        host.elements([WindowedValue.raw(("k", 5), 1_000_000, pm.IntervalWindow(0, 60),
                                         NO_FIRING, 1)], out)
        assert out == []
        before = clock.monotonic()
        processor._settle(host, out)
        waited = clock.monotonic() - before
        if fires_now:
            assert [(wv.value, wv.pane.timing.name) for wv in out] == [(("k", 5), "EARLY")]
            assert now_micros() - started >= early_s * 1e6   # not before it was due
        else:
            assert out == [] and waited < 0.1, make


def test_the_planner_unpickles_a_grouping_without_importing_pandas(tmp_path):
    """At each query's start Spark unpickles every stateful step's processor in a Python
    process of its own that only calls `init` (transformWithState's driver worker): pandas,
    most of a second to import, is left to the tasks that handle frames."""
    from pyspark import cloudpickle
    from pomset.runners.spark.stateful import KernelProcessor
    from pomset.triggers.strategy import WindowingStrategy
    strategy = WindowingStrategy(pm.Sessions(60), pm.AfterWatermark(
        early=pm.AfterProcessingTime(1)), pm.AccumulationMode.RETRACTING, 0)
    processor = KernelProcessor("sums", strategy, pm.CombinePerKey(pm.Sum()), ["a"],
                                [["c"]], {None: "o"}, [], "g0", real_clock=True, settle_s=0.5)
    path = tmp_path / "processor.pkl"
    path.write_bytes(cloudpickle.dumps(processor))
    code = ("import pickle, sys\n"
            "import pyspark.sql.streaming.transform_with_state_driver_worker\n"
            "processor = pickle.loads(open(sys.argv[1], 'rb').read())\n"
            "print(type(processor).__name__, 'pandas' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["KernelProcessor", "False"]
