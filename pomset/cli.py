"""The `pomset` command: `pomset kafka up|down|status` runs an embedded Kafka-protocol broker
in the background, so the streaming examples run without a cluster."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from . import broker


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="pomset")
    commands = parser.add_subparsers(dest="command", required=True)
    kafka = commands.add_parser("kafka", help="an embedded Kafka-protocol broker (noida-db)")
    kafka.add_argument("action", choices=("up", "down", "status"))
    kafka.add_argument("--port", type=int, default=None, help="port for `up` (default: a free one)")
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
