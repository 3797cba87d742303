"""The `pomset` command: `pomset run SCRIPT [flags]` runs a pipeline script with pipeline
flags (as `python SCRIPT flags` does); `pomset kafka up|down|status` runs an embedded
Kafka-protocol broker in the background, so the streaming examples run without a cluster;
`pomset --version` says which pomset this is."""
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
    args = parser.parse_args(argv)
    if args.command == "run":
        return run_script(args.script, args.flags)
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
