"""What a short job pays before its result: a 3-element pipeline (Create, Map, collect) run in a
fresh Python process, as a user runs one, on the local runner, on Spark with a local master,
and on a standalone cluster that `pomset spark up` started (`--no-cluster` leaves it out).

Each run reports its phases from timestamps taken in the process: Python start and `import
pomset`; the JVM's start (`spark-submit` launching the gateway); the SparkContext and session
(Spark's scheduler, block manager, UI, and on a cluster the executors' registration); shipping
pomset and the local modules (a cluster only); the first run (pomset's planning, the first
job, the Python workers' start); and a second run of the same pipeline in the same process,
which reuses the session and its workers. Time to result is the first run's end, from the
process's start. The median of `--repeat` runs of each.

Reproduce: `.venv/bin/python benchmarks/spark_startup.py` (`--no-write` prints without
updating BENCHMARKS.md).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

from results import write_block

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BEGIN, END = "<!-- spark-startup:begin -->", "<!-- spark-startup:end -->"
PHASES = [("import", "import pomset"), ("jvm", "JVM start"), ("context", "SparkContext"),
          ("ship", "shipping"), ("first", "first run"), ("to_result", "time to result"),
          ("second", "second run")]


def child(runner: str, master: str) -> Dict[str, float]:
    """Run the pipeline twice in this process; the phases' seconds."""
    began = float(os.environ["SPARK_STARTUP_T0"])
    phases: Dict[str, float] = {}
    sys.path.insert(0, ROOT)
    import pomset as pm
    phases["import"] = time.time() - began
    if runner == "spark":
        from pomset.runners.spark import session, shipping
        _timed(session, "start_jvm", "jvm", phases)
        _timed(session, "new_session", "session", phases)
        _timed(shipping, "ship", "ship", phases)

    def run() -> float:
        start = time.time()
        with pm.Pipeline(options=pm.PipelineOptions(
                [f"--runner={runner}", f"--spark_master={master}", "--quiet"])) as p:
            out = p | pm.Create([1, 2, 3]) | pm.Map(lambda x: 2 * x)
        assert sorted(wv.value for wv in p.result.collect(out)) == [2, 4, 6]
        return time.time() - start
    t = run()
    phases["to_result"] = time.time() - began
    phases["second"] = run()
    if runner == "spark":
        phases["context"] = phases.pop("session") - phases["jvm"] - phases.get("ship", 0.0)
        phases["first"] = t - phases["jvm"] - phases["context"] - phases.get("ship", 0.0)
    else:
        phases["first"] = t
    return phases


def _timed(module: Any, name: str, phase: str, phases: Dict[str, float]) -> None:
    """Wrap `module.name` to add the seconds its calls take to `phases[phase]`."""
    inner = getattr(module, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.time()
        try:
            return inner(*args, **kwargs)
        finally:
            phases[phase] = phases.get(phase, 0.0) + time.time() - start
    setattr(module, name, timed)


def measure(runner: str, master: str, env: Dict[str, str]) -> Dict[str, float]:
    """One fresh process's phases."""
    env = dict(env, SPARK_STARTUP_T0=repr(time.time()))
    done = subprocess.run([sys.executable, __file__, "--child", runner, master], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{runner} {master}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each, the median reported")
    ap.add_argument("--cluster", action=argparse.BooleanOptionalAction, default=True,
                    help="also a standalone cluster of one worker (pomset spark up)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    sys.path.insert(0, ROOT)
    from pomset.runners.spark import standalone
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cases = [("local", "local", "-"), ("Spark, local[2]", "spark", "local[2]")]
    where = tempfile.mkdtemp(prefix="spark-startup-")
    up = None
    if args.cluster:
        start = time.time()
        state = standalone.up(workers=1, cores=2, memory="2g", port=standalone.free_port(
            "127.0.0.1"), webui_port=standalone.free_port("127.0.0.1"), where=where)
        up = time.time() - start
        cases.append(("Spark, standalone (1 worker)", "spark", state["master"]))
    try:
        rows = []
        for label, runner, master in cases:
            runs = [measure(runner, master, env) for _ in range(args.repeat)]
            rows.append((label, {key: statistics.median(r.get(key, 0.0) for r in runs)
                                 for key, _ in PHASES}))
            print(label, rows[-1], flush=True)
    finally:
        if args.cluster:
            standalone.down(where)
    text = render(rows, args, up)
    print(text)
    if not args.no_write:
        write_block(BEGIN, END, text)


def render(rows: List[Any], args: argparse.Namespace, up: Any) -> str:
    head = "| runner | " + " | ".join(title for _, title in PHASES) + " |"
    lines = [f"Median of {args.repeat} fresh processes, seconds, on {os.cpu_count()} cores; "
             f"each phase as the docstring of `benchmarks/spark_startup.py` defines it. "
             + (f"`pomset spark up --workers 1` took {up:.1f} s." if up is not None else ""),
             "", head, "|" + "---|" * (len(PHASES) + 1)]
    for label, phases in rows:
        cells = [("-" if label == "local" and key in ("jvm", "context", "ship")
                  or key == "ship" and "standalone" not in label else f"{phases[key]:.1f}")
                 for key, _ in PHASES]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
