"""Where a benchmark's CPU goes among the processes sharing the machine: CPU seconds per
session (a process started with a session of its own, and everything it starts: PySpark's
worker daemon puts its workers in a process group of their own, not a session), read from
Linux's /proc, between two snapshots. A run on a 2-core host shares
it with the embedded broker and the benchmark's own producer and consumer; this says how many
cores each had while the run was measured."""
from __future__ import annotations

import os
from typing import Dict, Optional

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def snapshot() -> Dict[int, tuple]:
    """pid -> (session, command name, CPU seconds so far) of every live process;
    empty where /proc does not show them."""
    out: Dict[int, tuple] = {}
    if not os.path.isdir("/proc/self"):
        return out
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:   # exited meanwhile
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        rest = stat[stat.rindex(")") + 2:].split()
        out[int(name)] = (int(rest[3]), comm, (int(rest[11]) + int(rest[12])) / _TICK)
    return out


def cores(before: Dict[int, tuple], after: Dict[int, tuple], seconds: float,
          pipeline: int, broker: Optional[int]) -> Dict[str, float]:
    """Cores used between two snapshots `seconds` apart: the pipeline's session split into its
    JVM (Spark's driver and executors), its Python workers and its own process (`pipeline`
    is its pid and session), the broker's session, and this process (the benchmark's producer
    and consumer). A process that exited in between is not counted."""
    used = {"jvm": 0.0, "python workers": 0.0, "pipeline process": 0.0, "broker": 0.0,
            "benchmark": 0.0}
    me = os.getpid()
    for pid, (session, comm, cpu) in after.items():
        spent = cpu - (before[pid][2] if pid in before else 0.0)
        if pid == me:
            used["benchmark"] += spent
        elif session == pipeline:
            used["pipeline process" if pid == pipeline else
                 "jvm" if comm == "java" else "python workers"] += spent
        elif broker is not None and session == broker:
            used["broker"] += spent
    return {k: v / seconds for k, v in used.items()}
