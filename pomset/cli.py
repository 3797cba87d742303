"""The `pomset` command: `pomset run SCRIPT [flags]` runs a pipeline script with pipeline
flags (as `python SCRIPT flags` does); `pomset kafka up|down|status` runs an embedded
Kafka-protocol broker in the background, so the streaming examples run without a cluster;
`pomset spark up|down|status` runs a Spark standalone cluster (a master and workers) in the
background; `pomset --version` says which pomset this is."""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from typing import List, Optional

from . import __version__, broker
from .sdk.errors import KafkaUnreachableError, OptionsError, PipelineConstructionError


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="pomset")
    parser.add_argument("--version", action="version", version=f"pomset {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a pipeline script, its flags after it "
                                          "(`pomset run p.py --runner=spark`)")
    run.add_argument("script", help="the pipeline's Python file")
    run.add_argument("flags", nargs=argparse.REMAINDER,
                     help="the script's flags: pipeline options and its own")
    kafka = commands.add_parser("kafka", help="an embedded Kafka-protocol broker (noida-db)")
    kafka.add_argument("action", choices=("up", "down", "status"))
    kafka.add_argument("--port", type=int, default=None, help="port for `up` (default: a free one)")
    spark = commands.add_parser("spark", help="a Spark standalone cluster: a master and workers")
    spark.add_argument("action", choices=("up", "down", "status"))
    spark.add_argument("--workers", type=int, default=1, help="workers to start (default 1)")
    spark.add_argument("--cores", type=int, default=None,
                       help="cores of each worker (default: an equal share of this machine's)")
    spark.add_argument("--memory", default=None,
                       help="memory of each worker, as 4g or 512m (default: an equal share of "
                            "this machine's, less 1 GiB)")
    spark.add_argument("--host", default="127.0.0.1",
                       help="the address to serve on, which the other machines reach this one "
                            "by (default 127.0.0.1: this machine only)")
    spark.add_argument("--port", type=int, default=7077, help="the master's port (default 7077)")
    spark.add_argument("--webui-port", type=int, default=8080,
                       help="the master's web UI port (default 8080)")
    spark.add_argument("--master", default=None,
                       help="start only workers, joined to this master (spark://host:port)")
    args = parser.parse_args(argv)
    if args.command == "run":
        return run_script(args.script, args.flags)
    if args.command == "spark":
        return spark_command(args)
    if args.action == "up":
        try:
            servers = broker.up(args.port)
        except broker.BrokerError as e:
            print(f"pomset kafka up: {e}", file=sys.stderr)
            return 1
        print(f"Kafka broker running; pass --bootstrap_servers={servers}")
        return 0
    if args.action == "down":
        print("Kafka broker stopped" if broker.down() else "no Kafka broker was running")
        return 0
    servers = broker.status()
    print(f"Kafka broker running at {servers}" if servers else "no Kafka broker running")
    return 0 if servers else 1


def spark_command(args: argparse.Namespace) -> int:
    """`pomset spark up|down|status`: start, stop or describe the background cluster."""
    from .runners.spark import standalone
    if args.action == "up":
        try:
            state = standalone.up(args.workers, args.cores, args.memory, args.host, args.port,
                                  args.webui_port, args.master)
        except standalone.ClusterError as e:
            print(f"pomset spark up: {e}", file=sys.stderr)
            return 1
        ui = f", web UI at {state['web_ui']}" if state["web_ui"] else ""
        print(f"Spark cluster running ({args.workers} worker(s){ui}); pass "
              f"--spark_master={state['master']}")
        return 0
    if args.action == "down":
        print("Spark cluster stopped" if standalone.down() else "no Spark cluster was running")
        return 0
    state = standalone.status()
    if state is None:
        print("no Spark cluster running")
        return 1
    workers = (f", {state['alive_workers']} worker(s) alive with {state['cores']} cores"
               if "alive_workers" in state else "")
    print(f"Spark cluster running at {state['master']}{workers}; logs in {state['logs']}")
    return 0


def run_script(script: str, flags: List[str]) -> int:
    """Run `script` as `__main__` with `flags` as its command line, as Python would; its
    pipelines read the flags (`pm.Pipeline()` reads the command line). A pipeline that
    cannot be built or reach its broker ends it with one line saying why, not a traceback."""
    if not os.path.isfile(script):
        print(f"pomset run: no such file: {script}", file=sys.stderr)
        return 2
    sys.argv = [script, *flags]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except (KafkaUnreachableError, OptionsError, PipelineConstructionError) as e:
        print(f"{os.path.basename(script)}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
