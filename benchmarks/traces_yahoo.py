"""Yahoo Streaming Benchmark query IV written with operator templates against the same query
hand-written on pomset's plain transforms (local runner), and, with `--spark`, templates on
the Spark runner against hand-written PySpark DataFrame code.

Query IV: filter views, project the ad, look up its campaign; per campaign the views in the
last 10 s, every second (`examples/yahoo_streaming.py`). The variants, on the same generated
events (`pm.Create` of timestamped events), in the same process:

- templates: `Typed(U(Unit, Event), period=1) | OpStateless(filter, lookup) |
  OpKeyedUnordered(count per block; state a ring of the last 10 per-second counts; at each
  marker the ring's sum)`, at `--parallelism` (1 by default; more instances run in the one
  process, so they add routing, not speed).
- hand-written: `Filter(view) | Map(e -> (campaign(e.ad), 1)) | WindowInto(SlidingWindows(10, 1))
  | CombinePerKey(Sum()) | Map(format)`: the plain translation, every view added to 10 windows.
- hand-tuned: `... | WindowInto(FixedWindows(1)) | CombinePerKey(Sum()) |
  WindowInto(SlidingWindows(10, 1)) | CombinePerKey(Sum()) | Map(format)`: per-second counts
  first, then the sliding sums over them, the templates' algorithm on plain transforms.

Every variant's outputs are (campaign, (window end second, views)) at window end - 1 µs; the
windowed variants also emit the windows that end after the last view's second (up to 9 per
campaign), where the templates' markers have stopped, so the check compares the windows that
end by then, which must be equal. Events/s = events / wall time from building the pipeline
to holding its outputs (event generation excluded); repetitions interleave the variants
(their order rotating), the figure is the median.

With `--spark`: the events are written to Parquet; templates on `--runner=spark`
(`ReadFromParquet | Map(row -> Event) | query IV`) against PySpark (`read.parquet`, filter
views, broadcast join with the ad -> campaign table, `groupBy(campaign, window(ts, 10 s,
1 s)).count()`), once each after a warm-up job, and the same check.

    .venv/bin/python benchmarks/traces_yahoo.py --events 200000 --repeat 5
    .venv/bin/python benchmarks/traces_yahoo.py --table sqlite
    .venv/bin/python benchmarks/traces_yahoo.py --spark --events 100000 --repeat 1 --no-local
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from typing import Any, Callable, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))

import pomset as pm  # noqa: E402
import yahoo_streaming as ys  # noqa: E402

Outputs = Counter


def pipeline(argv: List[str]) -> pm.Pipeline:
    """A pipeline keeping only its leaves, quiet."""
    return pm.Pipeline(options=pm.PipelineOptions(["--quiet", "--collect=leaves", *argv]))


def run_templates(inputs: List[pm.TimestampedValue], table: ys.Table, par: int) -> Outputs:
    """Query IV with templates; its outputs."""
    p = pipeline([])
    src = p | pm.Create(inputs) | pm.Typed(pm.U(pm.Unit, ys.Event), period=1)
    out = ys.query_iv(src, table, par)
    return Counter(wv.value for wv in p.run().collect(out))


def window_row(kv: Tuple[str, int], w: Any = pm.DoFn.WindowParam) -> Tuple[str, Tuple[int, int]]:
    """(campaign, (window end second, views)), as the templates emit it."""
    return (kv[0], (w.end.micros // 1_000_000, kv[1]))


def is_view(event: ys.Event) -> bool:
    """Whether an event is a view."""
    return event.event_type == "view"


def campaign_one(table: ys.Table) -> Callable[[ys.Event], Tuple[str, int]]:
    """Map a view to (its ad's campaign, 1)."""
    campaign = table.campaign

    def lookup(event: ys.Event) -> Tuple[str, int]:
        """(campaign, 1)."""
        return (campaign(event.ad_id), 1)
    return lookup


def run_handwritten(inputs: List[pm.TimestampedValue], table: ys.Table, par: int) -> Outputs:
    """Query IV as sliding windows on plain transforms; its outputs."""
    p = pipeline([])
    out = (p | pm.Create(inputs)
           | pm.Filter(is_view)
           | pm.Map(campaign_one(table))
           | pm.WindowInto(pm.SlidingWindows(10, 1))
           | pm.CombinePerKey(pm.Sum())
           | pm.Map(window_row))
    return Counter(wv.value for wv in p.run().collect(out))


def run_handtuned(inputs: List[pm.TimestampedValue], table: ys.Table, par: int) -> Outputs:
    """Query IV as per-second counts, then sliding sums of them, on plain transforms."""
    p = pipeline([])
    out = (p | pm.Create(inputs)
           | pm.Filter(is_view)
           | pm.Map(campaign_one(table))
           | "Seconds" >> pm.WindowInto(pm.FixedWindows(1))
           | "PerSecond" >> pm.CombinePerKey(pm.Sum())
           | "Sliding" >> pm.WindowInto(pm.SlidingWindows(10, 1))
           | "PerWindow" >> pm.CombinePerKey(pm.Sum())
           | pm.Map(window_row))
    return Counter(wv.value for wv in p.run().collect(out))


def through(outputs: Outputs, last_second: int) -> Outputs:
    """The outputs of windows that end by `last_second`."""
    return Counter({k: n for k, n in outputs.items() if k[1][0] <= last_second})


def last_view_second(events: List[ys.Event]) -> int:
    """The end second of the last view's 1 s block: the templates' last marker."""
    return max(e.event_time for e in events if e.event_type == "view") // 1000 + 1


def timed(fn: Callable[..., Outputs], *args: Any) -> Tuple[float, Outputs]:
    """Wall time of fn(*args) after a full garbage collection, and its outputs."""
    gc.collect()
    started = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - started, out


def local_part(args: argparse.Namespace, events: List[ys.Event],
               world: ys.World) -> List[Dict[str, Any]]:
    """Interleaved repetitions of every local variant; a row per variant."""
    table = ys.Table(world, args.table)
    inputs = ys.timestamped(events, lambda e: e.event_time)
    variants: List[Tuple[str, Callable[..., Outputs], int]] = [
        (f"templates (parallelism {par})", run_templates, par) for par in args.parallelism]
    variants += [("hand-written (sliding windows)", run_handwritten, 1),
                 ("hand-tuned (per-second, then sliding)", run_handtuned, 1)]
    last = last_view_second(events)
    expected = ys.expected_campaign_windows(events, world.ad_campaign, 10, 1)
    times: Dict[str, List[float]] = {name: [] for name, _, _ in variants}
    match: Dict[str, bool] = {}
    sizes: Dict[str, int] = {}
    run_templates(inputs[:2000], table, 1)   # warm-up: imports, runner modules
    run_handwritten(inputs[:2000], table, 1)
    for rep in range(args.repeat):
        order = variants[rep % len(variants):] + variants[:rep % len(variants)]
        for name, fn, par in order:
            t, out = timed(fn, inputs, table, par)
            times[name].append(t)
            sizes[name] = sum(out.values())
            match[name] = through(out, last) == expected
            print(f"  rep {rep + 1} {name}: {t:.2f} s, {sizes[name]:,} outputs", file=sys.stderr,
                  flush=True)
    return [{"variant": name, "times": times[name], "median": statistics.median(times[name]),
             "outputs": sizes[name], "match": match[name]} for name, _, _ in variants]


def write_parquet(directory: str, events: List[ys.Event], files: int) -> str:
    """The events in `files` Parquet files with a `ts` timestamp column; their glob."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    per = -(-len(events) // files)
    for f in range(files):
        chunk = events[f * per:(f + 1) * per]
        pq.write_table(pa.table({
            "user_id": [e.user_id for e in chunk],
            "page_id": [e.page_id for e in chunk],
            "ad_id": [e.ad_id for e in chunk],
            "event_type": [e.event_type for e in chunk],
            "event_time": pa.array([e.event_time for e in chunk], pa.int64()),
            "ts": pa.array([e.event_time * 1000 for e in chunk], pa.timestamp("us", "UTC")),
        }), os.path.join(directory, f"part-{f:03d}.parquet"))
    return os.path.join(directory, "part-*.parquet")


def row_event(row: Dict[str, Any]) -> ys.Event:
    """A Parquet row as the example's Event."""
    return ys.Event(row["user_id"], row["page_id"], row["ad_id"], row["event_type"],
                    row["event_time"])


def spark_templates(pattern: str, table: ys.Table, par: int) -> Outputs:
    """Query IV with templates on the Spark runner, from the Parquet files."""
    p = pm.Pipeline(options=pm.PipelineOptions(["--runner=spark", "--quiet", "--collect=leaves"]))
    src = (p | pm.ReadFromParquet(pattern, columns=["user_id", "page_id", "ad_id", "event_type",
                                                    "event_time"], timestamp_field="ts")
           | pm.Map(row_event)
           | pm.Typed(pm.U(pm.Unit, ys.Event), period=1))
    out = ys.query_iv(src, table, par)
    return Counter(wv.value for wv in p.run().collect(out))


def spark_native(spark: Any, directory: str, world: ys.World) -> Outputs:
    """Query IV in PySpark: views joined with the campaign table, counted per campaign and
    sliding 10 s window."""
    from pyspark.sql import functions as F
    ads = spark.createDataFrame(list(world.ad_campaign.items()), ["ad_id", "campaign_id"])
    views = (spark.read.parquet(os.path.join(directory, "part-*.parquet"))
             .where(F.col("event_type") == "view")
             .select("ad_id", "ts")
             .join(F.broadcast(ads), "ad_id"))
    window = F.window("ts", "10 seconds", "1 second").alias("w")
    counts = views.groupBy("campaign_id", window).count()
    rows = counts.select("campaign_id", F.col("w.end").cast("long").alias("end"), "count").collect()
    return Counter((r["campaign_id"], (r["end"], r["count"])) for r in rows)


def spark_part(args: argparse.Namespace, events: List[ys.Event],
               world: ys.World) -> List[Dict[str, Any]]:
    """Each Spark side once (or --repeat times), interleaved, on one session."""
    from pomset.runners.spark.session import spark_session
    # Spark's Python workers unpickle the example's functions and Event by module name
    paths = [ROOT, os.path.join(ROOT, "examples"), os.environ.get("PYTHONPATH", "")]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    spark = spark_session(pm.PipelineOptions([f"--spark_master={args.master}"]))
    table = ys.Table(world, args.table)
    last = last_view_second(events)
    expected = ys.expected_campaign_windows(events, world.ad_campaign, 10, 1)
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="pomset-yahoo-") as directory:
            pattern = write_parquet(directory, events, args.files)
            spark.range(1000).selectExpr("sum(id)").collect()   # warm-up: JVM, Python workers
            sides = [(f"templates on Spark (parallelism {args.spark_parallelism})",
                      lambda: spark_templates(pattern, table, args.spark_parallelism)),
                     ("hand-written PySpark DataFrame",
                      lambda: spark_native(spark, directory, world))]
            times: Dict[str, List[float]] = {name: [] for name, _ in sides}
            match: Dict[str, bool] = {}
            sizes: Dict[str, int] = {}
            for rep in range(args.repeat):
                for name, fn in (sides if rep % 2 == 0 else sides[::-1]):
                    print(f"  spark rep {rep + 1} {name} ...", file=sys.stderr, flush=True)
                    t, out = timed(fn)
                    times[name].append(t)
                    sizes[name] = sum(out.values())
                    match[name] = through(out, last) == expected
                    print(f"  spark rep {rep + 1} {name}: {t:.1f} s, {sizes[name]:,} outputs",
                          file=sys.stderr, flush=True)
            rows = [{"variant": name, "times": times[name],
                     "median": statistics.median(times[name]), "outputs": sizes[name],
                     "match": match[name]} for name, _ in sides]
        version = spark.version
    finally:
        spark.stop()
    for r in rows:
        r["spark"] = version
    return rows


def table_text(title: str, rows: List[Dict[str, Any]], events: int) -> str:
    """A Markdown table of the rows, throughput ratios of the first templates row to each."""
    lines = [title, "", "| variant | median | best | events/s (median) | "
             "templates ÷ this, events/s: median (best) | windows ending by the last marker = plain Python |",
             "|---|---|---|---|---|---|"]
    tmpl = next((r for r in rows if r["variant"].startswith("templates")), None)
    for r in rows:
        best = min(r["times"])
        ratio = ("" if tmpl is None or r is tmpl else
                 f"{r['median'] / tmpl['median']:.2f} ({best / min(tmpl['times']):.2f})")
        lines.append(f"| {r['variant']} | {r['median']:.2f} s | {best:.2f} s | "
                     f"{events / r['median']:,.0f} | {ratio} | {'yes' if r['match'] else 'NO'} |")
    return "\n".join(lines)


def main() -> int:
    """Generate the events, run the parts asked for, print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5, help="runs of each variant (median)")
    ap.add_argument("--parallelism", type=lambda s: [int(x) for x in s.split(",")], default=[1],
                    help="template parallelism(s) to measure, comma-separated")
    ap.add_argument("--table", default="dict", choices=("dict", "sqlite"),
                    help="the ad -> campaign lookup (both variants use the same)")
    ap.add_argument("--campaigns", type=int, default=100)
    ap.add_argument("--ads_per_campaign", type=int, default=10)
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--rate", type=int, default=1000, help="events per second of event time")
    ap.add_argument("--disorder_ms", type=int, default=500)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-local", action="store_true", help="skip the local-runner part")
    ap.add_argument("--spark", action="store_true", help="also run the Spark comparison")
    ap.add_argument("--spark_parallelism", type=int, default=2)
    ap.add_argument("--files", type=int, default=4, help="Parquet files for the Spark part")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--no-write", action="store_true", help="print only; leave the docs")
    args = ap.parse_args()

    world = ys.make_world(args.campaigns, args.ads_per_campaign, args.users, 10, args.seed)
    events = ys.generate(args.events, world, args.rate, args.disorder_ms, args.seed)
    span = (max(e.event_time for e in events) - min(e.event_time for e in events)) / 1000
    views = sum(1 for e in events if e.event_type == "view")
    print(f"{args.events:,} events ({views:,} views) over {span:.0f} s of event time, "
          f"{args.campaigns} campaigns x {args.ads_per_campaign} ads, table {args.table}, seed "
          f"{args.seed}; machine: {os.cpu_count()} cores, {platform.system()} "
          f"{platform.release()}, Python {platform.python_version()}")
    ok = True
    command = f"Measured by `benchmarks/traces_yahoo.py {' '.join(a for a in sys.argv[1:] if a != '--no-write')}`."
    blocks = {}
    if not args.no_local:
        rows = local_part(args, events, world)
        blocks["traces-yahoo-local"] = table_text(
            f"{command} Local runner, median of {args.repeat} interleaved runs:", rows, args.events)
        ok = ok and all(r["match"] for r in rows)
    if args.spark:
        rows = spark_part(args, events, world)
        blocks["traces-yahoo-spark"] = table_text(
            f"{command} Spark {rows[0]['spark']} (`{args.master}`), median of {args.repeat} "
            f"run(s):", rows, args.events)
        ok = ok and all(r["match"] for r in rows)
    print("\n\n".join(blocks.values()))
    if ok and not args.no_write:
        from results import markers, write_block
        for name, block in blocks.items():
            write_block(*markers(name), block)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
