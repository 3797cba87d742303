"""pomset on Kafka, the video-sessions example (`examples/video_sessions.py`) on the local and
the Spark runner: sustained throughput over a pre-filled topic, and end-to-end latency at a
fixed input rate. Each run (a throughput run, a latency run) talks to an embedded broker of its
own (`pomset.broker.EmbeddedKafka`, noida-db) on this machine: noida-db saves all it holds as
one JSON file every couple of seconds, so a broker kept across runs would spend more and more
of the cores the pipeline runs on saving the earlier runs' topics. The pipeline always runs as
a user starts it, in a subprocess of its
own (`python examples/video_sessions.py --role=pipeline ...`), exactly once (`--checkpoint_dir`,
so both runners write their output in Kafka transactions), early panes every
`--early-seconds`.

Input: `video_sessions.generate(N, users, ads, seed)` (20 ads): views over 6 hours of event
time in arrival order (up to 3 minutes out of order, a tenth of the users uploading half their
views 1-3 hours late), keyed by user, into a 3-partition `views` topic. Two shapes by default
(`--users`), each run in full (throughput and latency, every runner): 10,000 users, where a
micro-batch of 50,000 events holds about 5 views per user and nearly every user's session
fires, retracts and is re-billed in each one, and 1,000 users, about 50 views per user per
micro-batch. A grouping's work per micro-batch follows the keys it touches as much as the
events, so the two show the range.

1. Throughput. N events are produced into the topic first (not timed); then the pipeline runs
   with `--until=latest` (it reads up to the offsets latest at its start, fires everything and
   exits), on Spark in micro-batches of `--spark-batch-records` (50,000; the pipeline's
   `--max_records_per_batch`, Spark's `maxOffsetsPerTrigger`), as a user catching up a
   backlog would cap them. Reported: wall time from spawning the process to its exit, and the
   same without start-up and shutdown, read from the files the run writes into its checkpoint
   directory:
   start-up ends when the run is ready to read (local: the checkpoint directory's
   `pomset.json`, written once the pipeline is built; Spark: the query's first offsets file,
   `offsets/0`, written when the first micro-batch's offsets are chosen, after the JVM, the
   SparkSession (`pomset.json`, a part reported separately) and the query started, and before
   the micro-batch's query planning, so Spark's processing includes that planning: 3.0-3.6 s
   here, in which Spark starts Python processes to plan the Kafka source and set up each
   `transformWithState`); processing
   ends at the run's last checkpoint (local: the last `epoch-*.pkl`; Spark: the last
   `commits/N`, written after its micro-batch's Kafka transaction committed). events/s
   (processing) = N / that processing time. On Spark the first micro-batch of a query also
   starts its Python workers and plans the Kafka source and every `transformWithState` (several
   times what a later one of the same size takes), so the **sustained** rate is the events
   after the first micro-batch over the time from its commit to the last one (the last
   micro-batch, which fires every session at the end of time, included); on the local runner
   (no micro-batches) it is the processing rate. Over that same sustained part, the cores each
   part of the machine used (`cpu_share`, snapshots every 0.5 s: the pipeline's JVM, Python
   workers and own process, the broker, the benchmark), also as CPU µs per event: where the
   time goes. Checked, or the benchmark fails: the netted
   billing topic (per ad, the sum of value x pomset-diff over the committed records) equals
   `batch_answer`'s billing, and the netted sessions topic equals its sessions (every count 1).

2. Latency. `--warmup-events` (1,000) events are put in the topic, then the pipeline is
   started without `--until` (it runs until SIGINT); once it has made its first commit
   (local: the first `epoch-*.pkl`; Spark: `commits/0`, the micro-batch of the warm-up events,
   so its start-up and first-batch costs are over), the measured events are produced at a
   fixed rate R for `--latency-seconds` (60; one run per rate R in `--rate-fractions`, by
   default a half and a quarter of the runner's sustained events/s, capped at
   `--max-rate`, 20,000/s; without `--max_records_per_batch`, so a micro-batch reads all
   there is), and a read_committed consumer in this process reads the `sessions` and
   `billing` topics, noting when (monotonic clock) each record arrived. The
   latency of an event is the time from its produce call to the arrival of the first
   committed session record that includes it. A session record (user, start, end, seconds)
   includes exactly the user's events the pipeline had read with event time in
   [start, end - gap]; the pipeline reads a user's events in produce order (one key, one
   partition), so those are a prefix (in produce order) of the user's events in that range,
   the one whose seconds add up to the record's `seconds` (each view counts >= 5 s, so at
   most one prefix does). The produce times are kept in this process rather than in the
   events (a pane carries no field of its events). Records matching no prefix would be
   counted as unmatched (0 expected). Reported: p50/p90/p99/max over all measured events
   (the warm-up events are left out) and of those produced in the first and in the last
   third of the time (equal if the run keeps up, growing if it falls behind), the rate
   actually achieved, and the drain: from the last produce call until the billing totals
   equal the batch answer (which the run must reach within `--drain-timeout`, or fail); then
   the pipeline is stopped with SIGINT to its process group (killed after 60 s, with a
   `py-spy dump` of where it was).

Latency includes the commit interval (a record is visible to a read_committed consumer only
once its transaction commits: every `--checkpoint-interval` s on the local runner, at the end
of every micro-batch on Spark, which starts one every `--trigger-interval` s at the soonest),
the early-pane delay, and the
benchmark's own producer and consumer (up to 50 ms of polling), which share the 2 cores with
the broker and the pipeline. How many cores each of them used while the events were produced
is reported too (`cpu_share`: the pipeline's JVM, its Python workers and its own process, the
broker, the benchmark's producer and consumer).

    .venv/bin/python benchmarks/kafka_streaming.py                    # writes BENCHMARKS.md
    .venv/bin/python benchmarks/kafka_streaming.py --local-events 20000 --spark-events 10000 \
        --latency-seconds 15 --no-write
    .venv/bin/python benchmarks/kafka_streaming.py --no-latency --result out.json --no-write
                                                    # throughput only, as JSON (before_after.py)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections import Counter, defaultdict
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.append(ROOT)   # after PYTHONPATH, which may name another tree's pomset to measure
import pomset  # noqa: E402  (before the example, which puts its own tree first)
sys.path.insert(0, os.path.join(ROOT, "examples"))
#: the pipeline: the example of the tree whose pomset is under test, which imports that pomset
EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(pomset.__file__))),
                       "examples", "video_sessions.py")
BEGIN, END = "<!-- kafka-streaming-results:begin -->", "<!-- kafka-streaming-results:end -->"
SUMMARY = "kafka-streaming-summary"
CAP = {"fetch.max.bytes": 1 << 20, "max.partition.fetch.bytes": 1 << 20}

import video_sessions as vs  # noqa: E402
from pomset.sdk.io.base import event_time_micros  # noqa: E402
import cpu_share  # noqa: E402
from results import compile_bytecode, markers, write_block, write_plot  # noqa: E402


def _cpu_table(caption: str, rate_column: str, benchmark_column: str,
               rows: List[Tuple[dict, str, Optional[float]]]) -> List[str]:
    """A table of the cores each part used (`cpu_share.cores`, a run's `cpu`) and their sum:
    rows of (run, its rate cell, the events' rate to show CPU µs per event too, or None); a
    run without CPU figures is left out."""
    lines = ["", caption, "",
             f"| users | runner | {rate_column} | pipeline: JVM | Python workers | its own "
             f"process | broker (noida-db and its front) | {benchmark_column} | in all |",
             "|---|---|---|---|---|---|---|---|---|"]
    for run, rate_cell, rate in rows:
        c = run["cpu"]
        if c:
            parts = [c[k] for k in ("jvm", "python workers", "pipeline process", "broker",
                                    "benchmark")] + [sum(c.values())]
            cells = " | ".join(f"{v:.2f}" + (f" ({v * 1e6 / rate:.0f} µs)" if rate else "")
                               for v in parts)
            lines.append(f"| {run['users']:,} | {run['runner']} | {rate_cell} | {cells} |")
    return lines


class BenchmarkError(RuntimeError):
    pass


# --- the pipeline process -----------------------------------------------------------------------

def pipeline_command(runner: str, servers: str, prefix: str, checkpoint: str, until: bool,
                     args: argparse.Namespace, batch_records: Optional[int] = None) -> List[str]:
    cmd = [sys.executable, EXAMPLE, "--role=pipeline", f"--runner={runner}", "--quiet",
           f"--bootstrap_servers={servers}", f"--topic_prefix={prefix}",
           f"--early_seconds={args.early_seconds}", f"--gap_minutes={args.gap_minutes}",
           f"--checkpoint_dir={checkpoint}"]
    if runner == "local":
        cmd.append(f"--checkpoint_interval={args.checkpoint_interval}")
    else:
        cmd += ["--spark_master=local[2]", "--spark_conf=spark.sql.shuffle.partitions=2",
                f"--trigger_interval={args.trigger_interval}"]
        if batch_records:
            cmd.append(f"--max_records_per_batch={batch_records}")
    if until:
        cmd.append("--until=latest")
    return cmd


def _default_sigint() -> None:
    """In the pipeline's process: SIGINT as Python expects it. A process started from a
    background shell job inherits SIGINT ignored, and Python then installs no KeyboardInterrupt
    handler: the local runner would never see the SIGINT that stops it (pyspark installs its
    own handler, so the Spark runner would)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Pipeline:
    """The pipeline role in a session (and process group) of its own, its output in a log
    file."""

    def __init__(self, cmd: List[str], workdir: str) -> None:
        self.log_path = os.path.join(workdir, "pipeline.log")
        with open(self.log_path, "wb") as log:
            self.spawned = time.time()
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         preexec_fn=_default_sigint)
        self.exited: Optional[float] = None

    def poll(self) -> Optional[int]:
        rc = self.proc.poll()
        if rc is not None and self.exited is None:
            self.exited = time.time()
        return rc

    def wait(self, timeout: float) -> Optional[int]:
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.poll()
        return rc

    def stop(self, grace: float = 60.0) -> Tuple[Optional[int], float, bool]:
        """SIGINT to the process group, SIGKILL after `grace` s: (exit code, seconds to exit,
        whether it had to be killed)."""
        sent = time.time()
        if self.poll() is None:
            self._signal(signal.SIGINT)
        rc = self.wait(grace)
        killed = rc is None
        if killed:
            print(f"the pipeline did not exit within {grace:.0f}s of SIGINT; where it is:\n"
                  + where(self.proc.pid) + "\nits output:\n" + self.log_tail(), flush=True)
            self._signal(signal.SIGKILL)
            rc = self.wait(30)
        self._signal(signal.SIGKILL)   # what is left of its session (Spark's Python workers)
        return rc, (self.exited or time.time()) - sent, killed

    def _signal(self, sig: int) -> None:
        """`sig` to the pipeline's process group, and with SIGKILL to every other process of
        its session too: PySpark's worker daemon puts its workers in a group of their own."""
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        if sig != signal.SIGKILL:
            return
        for pid, (session, _, _) in cpu_share.snapshot().items():
            if session == self.proc.pid:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass

    def log_tail(self, chars: int = 3000) -> str:
        with open(self.log_path, errors="replace") as f:
            return f.read()[-chars:]


def where(pid: int) -> str:
    """The Python stacks of a process (py-spy dump), to say where a pipeline hangs."""
    spy = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(spy):
        return "(py-spy is not installed)"
    try:
        out = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True,
                             timeout=30)
        return (out.stdout + out.stderr)[-6000:]
    except (OSError, subprocess.SubprocessError) as e:
        return f"(py-spy failed: {e})"


def _mtime(path: str) -> Optional[float]:
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return None


def _numbered(directory: str) -> Dict[int, float]:
    """Spark checkpoint files named by batch id (offsets/N, commits/N) -> mtime."""
    if not os.path.isdir(directory):
        return {}
    return {int(f): os.stat(os.path.join(directory, f)).st_mtime
            for f in os.listdir(directory) if f.isdigit()}


def _epochs(directory: str) -> Dict[str, float]:
    if not os.path.isdir(directory):
        return {}
    return {f: os.stat(os.path.join(directory, f)).st_mtime
            for f in os.listdir(directory) if f.startswith("epoch-") and f.endswith(".pkl")}


def released(checkpoint: str, batch: int) -> int:
    """How many records the Kafka source had released to a Spark query by the end of
    micro-batch `batch` (the source's offsets, the last line of its offset log entry; the
    topic is a fresh one, so its offsets count its records)."""
    with open(os.path.join(checkpoint, "offsets", str(batch))) as f:
        return sum(json.loads(f.read().splitlines()[-1])["o"].values())


def ready(runner: str, checkpoint: str) -> bool:
    """Whether the run has made its first commit."""
    if runner == "local":
        return bool(_epochs(checkpoint))
    return 0 in _numbered(os.path.join(checkpoint, "commits"))


# --- Kafka helpers ------------------------------------------------------------------------------

def fresh_topics(servers: str, tag: str) -> str:
    prefix = f"bench-{tag}-{uuid.uuid4().hex[:6]}-"
    views, sessions, billing = vs.topics(prefix)
    vs.create_topics(servers, [views, sessions, billing, f"{views}-dead-letters"])
    return prefix


def producer(servers: str) -> Any:
    from confluent_kafka import Producer
    return Producer({"bootstrap.servers": servers, "enable.idempotence": True, "linger.ms": 5})


def produce_all(servers: str, topic: str, events: List[dict]) -> None:
    p = producer(servers)
    for e in events:
        while True:
            try:
                p.produce(topic, key=e["user"].encode(), value=json.dumps(e).encode())
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    if p.flush(120):
        raise BenchmarkError(f"could not produce the input to {topic}")


def consumer(servers: str, topics: List[str], eof: bool) -> Any:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(dict(CAP, **{"bootstrap.servers": servers, "group.id": f"bench-{uuid.uuid4().hex}",
                              "isolation.level": "read_committed", "enable.auto.commit": False,
                              "enable.partition.eof": eof}))
    meta = c.list_topics(timeout=10).topics
    c.assign([TopicPartition(t, p, 0) for t in topics for p in sorted(meta[t].partitions)])
    return c


def _diff(msg: Any) -> int:
    value = dict(msg.headers() or ()).get("pomset-diff")
    if value not in (b"+1", b"-1"):
        raise BenchmarkError(f"a record of {msg.topic()} has pomset-diff {value!r}")
    return 1 if value == b"+1" else -1


def read_outputs(servers: str, prefix: str, timeout: float = 300.0) -> Tuple[Counter, Dict[str, int], int]:
    """The committed sessions and billing records, netted: (sessions as a multiset of
    (user, start µs, end µs, seconds), billing per ad, how many records there were)."""
    from confluent_kafka import KafkaError
    _, sessions_topic, billing_topic = vs.topics(prefix)
    c = consumer(servers, [sessions_topic, billing_topic], eof=True)
    open_parts = {(tp.topic, tp.partition) for tp in c.assignment()}
    sessions: Counter = Counter()
    billing: Dict[str, int] = defaultdict(int)
    records = 0
    deadline = time.monotonic() + timeout
    try:
        while open_parts:
            if time.monotonic() > deadline:
                raise BenchmarkError(f"the output topics did not reach their end: {open_parts}")
            for m in c.consume(5000, 0.5):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        open_parts.discard((m.topic(), m.partition()))
                    continue
                records += 1
                diff = _diff(m)
                value = json.loads(m.value())
                if m.topic() == billing_topic:
                    ad, seconds = value
                    billing[ad] += diff * seconds
                else:
                    sessions[(value["user"], round(value["start"] * 1e6),
                              round(value["end"] * 1e6), value["seconds"])] += diff
    finally:
        c.close()
    return (Counter({k: n for k, n in sessions.items() if n}),
            {ad: s for ad, s in billing.items() if s}, records)


def expected(events: List[dict], gap_minutes: float) -> Tuple[Counter, Dict[str, int]]:
    sessions, billing = vs.batch_answer(events, gap_minutes)
    return (Counter((u, round(s * 1e6), round(e * 1e6), n) for u, s, e, n in sessions),
            {ad: s for ad, s in billing.items() if s})


# --- 1. throughput ------------------------------------------------------------------------------

class CpuSamples:
    """`cpu_share` snapshots every `period` s (wall-clock times) while a run lasts, so that the
    cores each part used over a window known only afterwards (a throughput run's sustained
    part) can be read: between the first snapshot in the window and the last."""

    def __init__(self, period: float = 0.5) -> None:
        self.samples: List[Tuple[float, Dict[int, tuple]]] = []
        self.period, self.done = period, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.is_set():
            self.samples.append((time.time(), cpu_share.snapshot()))
            self.done.wait(self.period)

    def stop(self) -> None:
        self.done.set()
        self.thread.join()

    def cores(self, start: float, end: float, pipeline: int,
              broker: Optional[int]) -> Dict[str, float]:
        """`cpu_share.cores` between `start` and `end` (wall clock); {} if under two
        snapshots fall in between."""
        inside = [(t, snap) for t, snap in self.samples if start <= t <= end]
        if len(inside) < 2:
            return {}
        (t0, a), (t1, b) = inside[0], inside[-1]
        return cpu_share.cores(a, b, t1 - t0, pipeline, broker)


def throughput(runner: str, servers: str, n: int, args: argparse.Namespace,
               broker: Optional[int] = None) -> Dict[str, Any]:
    """One throughput run (see the module docstring); `broker`, the broker's process (a
    session of its own), for the cores each part used over the sustained part."""
    prefix = fresh_topics(servers, f"tp-{runner}")
    events = [e for _, e in vs.generate(n, args.users, args.ads, args.seed)]
    produce_all(servers, vs.topics(prefix)[0], events)
    workdir = tempfile.mkdtemp(prefix=f"bench-kafka-{runner}-")
    checkpoint = os.path.join(workdir, "checkpoint")
    print(f"{time.strftime('%H:%M:%S')} [{runner}] throughput: {n:,} events of {args.users:,} users in the "
          f"topic, running the pipeline with --until=latest", flush=True)
    batch_records = args.spark_batch_records if runner == "spark" else None
    p = Pipeline(pipeline_command(runner, servers, prefix, checkpoint, True, args, batch_records),
                 workdir)
    samples = CpuSamples()
    try:
        rc = p.wait(args.timeout)
        samples.stop()
        if rc is None:
            p.stop(10)
            raise BenchmarkError(f"[{runner}] the pipeline did not finish within {args.timeout:.0f}s:\n"
                                 + p.log_tail())
        if rc != 0:
            raise BenchmarkError(f"[{runner}] the pipeline exited with {rc}:\n" + p.log_tail())
        spawned, exited = p.spawned, p.exited
        built = _mtime(os.path.join(checkpoint, "pomset.json"))
        if runner == "local":
            epochs = _epochs(checkpoint)
            ready_at, done_at = built, max(epochs.values())
            state_bytes = sum(os.path.getsize(os.path.join(checkpoint, f)) for f in epochs)
            batches, first_batch, steady = None, None, None
        else:
            offsets = _numbered(os.path.join(checkpoint, "offsets"))
            commits = _numbered(os.path.join(checkpoint, "commits"))
            ready_at, done_at = offsets[min(offsets)], commits[max(commits)]
            state_bytes = None
            batches = len(commits)
            first_batch = commits[min(commits)] - ready_at
            later = n - released(checkpoint, min(commits))
            steady = (later, done_at - commits[min(commits)]) if later else None
        cpu = samples.cores(done_at - steady[1] if steady else ready_at, done_at, p.proc.pid,
                            broker)
        got_sessions, got_billing, records = read_outputs(servers, prefix)
    finally:
        samples.stop()
        p.stop(10)   # nothing left of its process group
        shutil.rmtree(workdir, ignore_errors=True)
    want_sessions, want_billing = expected(events, args.gap_minutes)
    processing = done_at - ready_at
    out = dict(runner=runner, users=args.users, events=n, wall=exited - spawned, startup=ready_at - spawned,
               session=(built - spawned) if runner == "spark" else None, processing=processing,
               shutdown=exited - done_at, rate_wall=n / (exited - spawned),
               rate=n / processing, records=records, batches=batches, state_bytes=state_bytes,
               batch_records=batch_records, first_batch=first_batch,
               sustained=steady[0] / steady[1] if steady else n / processing,
               billing_ok=got_billing == want_billing,
               sessions_ok=got_sessions == want_sessions,
               sessions=len(want_sessions), cpu=cpu)
    print(f"{time.strftime('%H:%M:%S')} [{runner}] {n:,} events: {out['wall']:.1f}s start to exit ({out['rate_wall']:,.0f} "
          f"events/s), start-up {out['startup']:.1f}s, processing {processing:.1f}s "
          f"({out['rate']:,.0f} events/s" + (f", {batches} micro-batches" if batches else "")
          + (f"; the first {first_batch:.1f}s, the {steady[0]:,} events after it "
             f"{steady[1]:.1f}s: {out['sustained']:,.0f} events/s sustained" if steady else "")
          + f"), shutdown {out['shutdown']:.1f}s; {records:,} output records; "
          + (f"final checkpoint {state_bytes / 1e6:.1f} MB; " if state_bytes else "")
          + f"billing = batch: {out['billing_ok']}, sessions = batch: {out['sessions_ok']}",
          flush=True)
    if not out["billing_ok"]:
        diff = {ad: (got_billing.get(ad), want_billing.get(ad))
                for ad in sorted(set(got_billing) | set(want_billing))
                if got_billing.get(ad) != want_billing.get(ad)}
        print(f"{time.strftime('%H:%M:%S')} [{runner}] BILLING DIFFERS (ad: (netted topic, batch answer)): {diff}")
    if not out["sessions_ok"]:
        extra = got_sessions - want_sessions
        missing = want_sessions - got_sessions
        print(f"{time.strftime('%H:%M:%S')} [{runner}] SESSIONS DIFFER: {sum(extra.values())} netted records not in the "
              f"batch answer (e.g. {list(extra.items())[:3]}), {sum(missing.values())} sessions "
              f"missing (e.g. {list(missing)[:3]})")
    return out


# --- 2. latency ---------------------------------------------------------------------------------

def latency(runner: str, servers: str, rate: float, args: argparse.Namespace,
            broker: Optional[int] = None) -> Dict[str, Any]:
    """One latency run at `rate` (see the module docstring); `broker`, the broker's process
    (a session of its own), for the cores each part used while the events were produced
    (`cpu_share`)."""
    n, w = int(rate * args.latency_seconds), args.warmup_events
    prefix = fresh_topics(servers, f"lat-{runner}")
    views_topic, sessions_topic, billing_topic = vs.topics(prefix)
    stream = [e for _, e in vs.generate(w + n, args.users, args.ads, args.seed + 1)]
    warmup, events = stream[:w], stream[w:]
    _, want_billing = expected(stream, args.gap_minutes)
    produce_all(servers, views_topic, warmup)   # read by the first micro-batch / epoch
    workdir = tempfile.mkdtemp(prefix=f"bench-kafka-{runner}-")
    checkpoint = os.path.join(workdir, "checkpoint")
    p = Pipeline(pipeline_command(runner, servers, prefix, checkpoint, False, args), workdir)
    try:
        deadline = time.monotonic() + args.timeout
        while not ready(runner, checkpoint):
            if p.poll() is not None or time.monotonic() > deadline:
                raise BenchmarkError(f"[{runner}] the pipeline did not start:\n" + p.log_tail())
            time.sleep(0.1)
        print(f"{time.strftime('%H:%M:%S')} [{runner}] latency: pipeline ready after {time.time() - p.spawned:.1f}s; "
              f"producing {n:,} events at {rate:,.0f}/s", flush=True)
        c = consumer(servers, [sessions_topic, billing_topic], eof=False)
        produced_at = [0.0] * n
        done: List[float] = []

        def produce_at_rate() -> None:
            prod = producer(servers)
            start = time.monotonic()
            for i, e in enumerate(events):
                pause = start + i / rate - time.monotonic()
                if pause > 0.001:
                    time.sleep(pause)
                value, key = json.dumps(e).encode(), e["user"].encode()
                produced_at[i] = time.monotonic()
                while True:
                    try:
                        prod.produce(views_topic, key=key, value=value)
                        break
                    except BufferError:
                        prod.poll(0.01)
                prod.poll(0)
            prod.flush(120)
            done.append(time.monotonic())

        thread = threading.Thread(target=produce_at_rate, daemon=True)
        cpu_from, cpu_start = cpu_share.snapshot(), time.monotonic()
        cpu: Dict[str, float] = {}
        thread.start()
        records: List[tuple] = []   # (arrival, user, start µs, end µs, seconds) of +1 session records
        totals: Dict[str, int] = defaultdict(int)
        converged_at: Optional[float] = None
        give_up: Optional[float] = None
        try:
            while True:
                msgs = c.consume(5000, 0.05)
                now = time.monotonic()
                for m in msgs:
                    if m.error():
                        continue
                    diff = _diff(m)
                    if m.topic() == billing_topic:
                        ad, seconds = json.loads(m.value())
                        totals[ad] += diff * seconds
                    elif diff > 0:
                        s = json.loads(m.value())
                        records.append((now, s["user"], round(s["start"] * 1e6),
                                        round(s["end"] * 1e6), s["seconds"]))
                if done:
                    if not cpu:
                        cpu = cpu_share.cores(cpu_from, cpu_share.snapshot(),
                                              time.monotonic() - cpu_start, p.proc.pid, broker)
                    give_up = give_up or done[0] + args.drain_timeout
                    if converged_at is None and \
                            {ad: s for ad, s in totals.items() if s} == want_billing:
                        converged_at = now
                    if converged_at is not None and now > converged_at + 3:
                        break   # the session records of the last transactions are in too
                    if now > give_up:
                        break
                if p.poll() is not None:
                    raise BenchmarkError(f"[{runner}] the pipeline exited with {p.poll()}:\n"
                                         + p.log_tail())
        finally:
            c.close()
        commits = _numbered(os.path.join(checkpoint, "commits"))
    finally:
        rc, stop_s, killed = p.stop(60)
        shutil.rmtree(workdir, ignore_errors=True)
    first, last = produced_at[0], produced_at[-1]
    timed, unmatched = event_latencies(stream, [0.0] * w + produced_at, records,
                                       args.gap_minutes, skip=w)
    lat = sorted(x for _, x in timed)
    third = (last - first) / 3
    early = sorted(x for t, x in timed if t < first + third)
    late = sorted(x for t, x in timed if t >= last - third)

    def pct(q: float) -> float:
        return lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")
    periods = sorted(b - a for a, b in zip(sorted(commits.values()), sorted(commits.values())[1:]))
    out = dict(runner=runner, users=args.users, rate=rate, events=n, achieved=n / max(last - first, 1e-9),
               seen=len(lat), unmatched=unmatched, p50=pct(0.5), p90=pct(0.9), p99=pct(0.99),
               p50_first=early[len(early) // 2] if early else float("nan"),
               p50_last=late[len(late) // 2] if late else float("nan"),
               max=lat[-1] if lat else float("nan"), converged=converged_at is not None,
               drain=(converged_at - last) if converged_at is not None else None,
               stop_rc=rc, stop_s=stop_s, killed=killed,
               batches=max(commits) + 1 if commits else None,
               batch_period=periods[len(periods) // 2] if periods else None, cpu=cpu)
    print(f"{time.strftime('%H:%M:%S')} [{runner}] latency at {rate:,.0f} events/s (achieved {out['achieved']:,.0f}): "
          f"{len(lat):,}/{n:,} events seen, p50 {out['p50']:.2f}s p90 {out['p90']:.2f}s "
          f"p99 {out['p99']:.2f}s max {out['max']:.2f}s (p50 of the first third "
          f"{out['p50_first']:.2f}s, last third {out['p50_last']:.2f}s); "
          f"{unmatched} unmatched records; "
          f"billing converged: {out['converged']}"
          + (f" {out['drain']:.1f}s after the last event" if out["drain"] is not None else "")
          + f"; SIGINT: exit {rc} after {stop_s:.1f}s" + (" (killed)" if killed else ""),
          flush=True)
    return out


def event_latencies(events: List[dict], produced_at: List[float], records: List[tuple],
                    gap_minutes: float, skip: int = 0) -> Tuple[List[Tuple[float, float]], int]:
    """Per event after the first `skip` (the warm-up) and seen in a record: (produce time,
    arrival of the first session record including it minus its produce time; see the module
    docstring); and how many records matched no prefix."""
    gap_us = round(gap_minutes * 60 * 1_000_000)
    by_user: Dict[str, list] = defaultdict(list)
    for i, (e, t) in enumerate(zip(events, produced_at)):
        by_user[e["user"]].append([event_time_micros(e["t"]), e["seconds"], t, None, i >= skip])
    unmatched = 0
    for arrival, user, start, end, seconds in records:
        lo, hi = start, end - gap_us
        total, included = 0, []
        for ev in by_user.get(user, ()):
            if lo <= ev[0] <= hi:
                total += ev[1]
                included.append(ev)
                if total >= seconds:
                    break
        if total != seconds:
            unmatched += 1
            continue
        for ev in included:
            if ev[3] is None:
                ev[3] = arrival
    return [(ev[2], ev[3] - ev[2]) for evs in by_user.values() for ev in evs
            if ev[4] and ev[3] is not None], unmatched


# --- the report ---------------------------------------------------------------------------------

def machine() -> str:
    """The machine and the versions the run measured."""
    import importlib.metadata as md
    return (f"Machine: {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python "
            f"{platform.python_version()}, Spark {md.version('pyspark')}, confluent-kafka "
            f"{md.version('confluent-kafka')}, embedded broker noida-db {md.version('noida-db')} "
            f"(broker, pipeline and the benchmark's producer and consumer on the same "
            f"{os.cpu_count()} cores).")


def report(args: argparse.Namespace, tps: List[dict], lats: List[dict]) -> str:
    lines = [
        f"Measured by `benchmarks/kafka_streaming.py` "
        f"(`{' '.join(a for a in sys.argv[1:] if a != '--no-write') or 'defaults'}`): {args.ads} ads, "
        f"session gap {args.gap_minutes:g} min, early panes every {args.early_seconds:g} s, "
        f"seed {args.seed}; exactly once (`--checkpoint_dir`); local runner "
        f"`--checkpoint_interval={args.checkpoint_interval:g}`; Spark `--spark_master=local[2]` "
        f"`--spark_conf=spark.sql.shuffle.partitions=2` `--trigger_interval={args.trigger_interval:g}`.",
        "",
        machine(),
        "",
        "Throughput (`--until=latest` over a pre-filled topic):",
        "",
        "| users | runner | events | start to exit | events/s | start-up | processing | events/s (processing) | micro-batches | events/s sustained | shutdown | output records | billing = batch | sessions = batch |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in tps:
        startup = f"{t['startup']:.1f} s"
        if t["session"] is not None:
            startup += f" ({t['session']:.1f} s session)"
        batches = (f"{t['batches']} of up to {t['batch_records']:,} events (the first "
                   f"{t['first_batch']:.1f} s)" if t["batch_records"] else
                   f"{t['batches']} (the first {t['first_batch']:.1f} s)" if t["batches"] else
                   "- (epochs)")
        lines.append(
            f"| {t['users']:,} | {t['runner']} | {t['events']:,} | {t['wall']:.1f} s | {t['rate_wall']:,.0f} | "
            f"{startup} | {t['processing']:.1f} s | {t['rate']:,.0f} | {batches} | "
            f"**{t['sustained']:,.0f}** | {t['shutdown']:.1f} s | "
            f"{t['records']:,} | {'yes' if t['billing_ok'] else 'NO'} | "
            f"{'yes' if t['sessions_ok'] else 'NO'} ({t['sessions']:,} sessions) |")
    lines += _cpu_table(
        f"CPU over the sustained part of each throughput run (Spark: from the first "
        f"micro-batch's commit to the last; local: the processing), in cores of "
        f"{os.cpu_count()} and in CPU µs per event (`benchmarks/cpu_share.py`, snapshots every "
        f"0.5 s):", "events/s sustained", "benchmark",
        [(t, f"{t['sustained']:,.0f}", t["sustained"]) for t in tps])
    lines += [
        "",
        f"Latency (events produced at a fixed rate for {args.latency_seconds:g} s; latency of an "
        f"event = produce call to the arrival of the first committed session record that includes it):",
        "",
        "| users | runner | commits every | rate (achieved) | events | p50 | p90 | p99 | max | p50 first → last third | drain | events seen | billing = batch |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in lats:
        commit = (f"{args.checkpoint_interval:g} s (epoch)" if x["runner"] == "local" else
                  f"micro-batch ({args.trigger_interval:g} s trigger"
                  + (f", median {x['batch_period']:.1f} s apart" if x["batch_period"] else "") + ")")
        lines.append(
            f"| {x['users']:,} | {x['runner']} | {commit} | {x['rate']:,.0f}/s ({x['achieved']:,.0f}) | "
            f"{x['events']:,} | **{x['p50']:.2f} s** | {x['p90']:.2f} s | **{x['p99']:.2f} s** | "
            f"{x['max']:.2f} s | {x['p50_first']:.2f} → {x['p50_last']:.2f} s | "
            + (f"{x['drain']:.1f} s" if x["drain"] is not None else "-")
            + f" | {x['seen']:,} ({x['unmatched']} unmatched records) | "
            f"{'yes' if x['converged'] else 'NO'} |")
    lines += _cpu_table(
        f"CPU while the events were produced, in cores of {os.cpu_count()} "
        "(`benchmarks/cpu_share.py`: each one's CPU time over the time taken to produce them):",
        "rate", "benchmark's producer and consumer",
        [(x, f"{x['rate']:,.0f}/s", None) for x in lats])
    stops = ", ".join(f"{x['runner']} ({x['users']:,} users) at {x['rate']:,.0f}/s exited with {x['stop_rc']} {x['stop_s']:.1f} s after SIGINT"
                      + (" (killed)" if x["killed"] else "") for x in lats)
    lines += ["", f"- *p50 first → last third*: the median latency of the events produced in "
                  f"the first and in the last third of the {args.latency_seconds:g} s (a run "
                  f"that keeps up has about the same; one that falls behind, a growing one).",
              f"- *drain*: from the last produce call until the netted billing topic equals "
              f"the batch answer. Stopping: {stops}."]
    return "\n".join(lines)


def summary(head: str, tps: List[dict], lats: List[dict]) -> str:
    """The table docs/performance.md shows, under `head`: each runner's sustained rate and its
    latency at the rates the latency runs produced."""
    lines = [head, "", "| users | runner | events/s sustained | latency p50 / p99 at an input rate of |",
             "|---|---|---|---|"]
    for t in tps:
        runs = sorted((x for x in lats if (x["users"], x["runner"]) == (t["users"], t["runner"])),
                      key=lambda x: x["rate"])
        at = "; ".join(f"{x['rate']:,.0f}/s: {x['p50']:.2f} / {x['p99']:.2f} s" for x in runs)
        lines.append(f"| {t['users']:,} | {t['runner']} | **{t['sustained']:,.0f}** | {at or '-'} |")
    return "\n".join(lines)


def latency_plot(lats: List[dict]) -> Dict[str, Any]:
    """The latency runs as curves: p50 latency by input rate, a curve per runner and shape."""
    series: Dict[str, List[List[float]]] = {}
    for x in lats:
        series.setdefault(f"{x['runner']}, {x['users']:,} users", []).append([x["rate"], x["p50"]])
    return {"title": "Kafka end to end (video sessions, exactly once): latency by input rate",
            "xlabel": "input rate (events/s)", "ylabel": "p50 latency (s)", "series": series,
            "note": f"benchmarks/kafka_streaming.py, {os.cpu_count()} cores, broker on the same cores"}


def parser() -> argparse.ArgumentParser:
    """The benchmark's flags (also the shape `kafka_cores` runs, at their defaults)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runners", default="local,spark")
    ap.add_argument("--local-events", type=int, default=200_000)
    ap.add_argument("--spark-events", type=int, default=300_000)
    ap.add_argument("--spark-batch-records", type=int, default=50_000,
                    help="throughput on Spark: --max_records_per_batch (0: no cap)")
    ap.add_argument("--users", default="10000,1000",
                    help="users (keys) of each shape, comma-separated: each shape runs the "
                         "throughput and latency runs of every runner")
    ap.add_argument("--ads", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--gap-minutes", type=float, default=30.0)
    ap.add_argument("--early-seconds", type=float, default=1.0)
    ap.add_argument("--checkpoint-interval", type=float, default=1.0,
                    help="local runner: seconds per epoch (commit)")
    ap.add_argument("--trigger-interval", type=float, default=1.0,
                    help="spark runner: seconds between micro-batch starts")
    ap.add_argument("--latency-seconds", type=float, default=60.0)
    ap.add_argument("--max-rate", type=float, default=20000.0,
                    help="latency: the highest rate run (the benchmark's own producer keeps up)")
    ap.add_argument("--warmup-events", type=int, default=1000,
                    help="latency: events in the topic before the pipeline starts, not measured")
    ap.add_argument("--rate-fractions", default="0.5,0.25",
                    help="latency: input rates as fractions of the sustained events/s")
    ap.add_argument("--local-rate", type=float, default=None, help="one fixed rate instead")
    ap.add_argument("--spark-rate", type=float, default=None, help="one fixed rate instead")
    ap.add_argument("--drain-timeout", type=float, default=180.0)
    ap.add_argument("--timeout", type=float, default=900.0, help="per pipeline run")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--no-latency", action="store_true", help="throughput runs only")
    ap.add_argument("--result", help="write the throughput runs to this file as JSON")
    return ap


def main() -> None:
    args = parser().parse_args()
    compile_bytecode()
    from pomset.broker import EmbeddedKafka
    tps, lats, errors = [], [], []
    for users in [int(u) for u in args.users.split(",")]:
        shape = argparse.Namespace(**{**vars(args), "users": users})
        for runner in args.runners.split(","):
            try:
                with EmbeddedKafka() as broker:
                    t = throughput(runner, broker.bootstrap_servers,
                                   getattr(args, f"{runner}_events"), shape, broker.process.pid)
                tps.append(t)
                if not t["billing_ok"] or args.no_latency:
                    continue
                rates = ([getattr(args, f"{runner}_rate")] if getattr(args, f"{runner}_rate")
                         else [min(args.max_rate, round(t["sustained"] * float(f), -1))
                               for f in args.rate_fractions.split(",")])
                for rate in rates:
                    with EmbeddedKafka() as broker:
                        lats.append(latency(runner, broker.bootstrap_servers, rate, shape,
                                            broker.process.pid))
            except Exception as e:
                traceback.print_exc()
                errors.append(f"{runner} ({users:,} users): {type(e).__name__}: {str(e)[:300]}")
    if args.result:
        with open(args.result, "w") as f:
            json.dump({"throughput": tps, "errors": errors}, f)
    text = report(args, tps, lats)
    print()
    print(text)
    failures = errors + ([f"{t['runner']} ({t['users']:,} users): the netted billing topic differs from the batch answer"
                 for t in tps if not t["billing_ok"]]
                + [f"{t['runner']} ({t['users']:,} users): the netted sessions topic differs from the batch answer"
                   for t in tps if not t["sessions_ok"]]
                + [f"{x['runner']} ({x['users']:,} users): the billing totals did not reach the batch answer within "
                   f"{args.drain_timeout:g}s of the last event" for x in lats if not x["converged"]])
    if failures:
        sys.exit("FAILED: " + "; ".join(failures))
    if not args.no_write:
        write_block(BEGIN, END, text)
        write_block(*markers(SUMMARY), summary(machine(), tps, lats))
        write_plot("kafka_latency", latency_plot(lats))


if __name__ == "__main__":
    main()
