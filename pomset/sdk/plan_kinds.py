"""The kinds of execution-plan node: each primitive transform declares the one it lowers to
(`Primitive.plan_kind`), and runners translate plan nodes by kind (`runtime.plan`)."""
from __future__ import annotations

#: a bounded source the runtime reads: files, or elements the source makes itself (Create)
READ = "read"
#: a source whose steps the runner's driver replays on its own clock (TestStream)
DRIVER_READ = "driver_read"
#: DGS input streams, merged by timestamp or read by the DGS step's workers themselves
DGS_READ = "dgs_read"
KAFKA_READ = "kafka_read"
KAFKA_WRITE = "kafka_write"
#: a stateless ParDo or one of its shorthands (Map, FlatMap, Filter, the relational steps)
ELEMENTWISE = "elementwise"
ASSIGN_WINDOWS = "assign_windows"
#: GroupByKey or CombinePerKey: a windowing strategy and a reducer
GROUP = "group"
STATEFUL_PARDO = "stateful_pardo"
FLATTEN = "flatten"
#: a file sink
SINK = "sink"
TEMPLATE = "template"
TYPED = "typed"
OPLUS = "oplus"
DGS = "dgs"

KINDS = (READ, DRIVER_READ, DGS_READ, KAFKA_READ, KAFKA_WRITE, ELEMENTWISE, ASSIGN_WINDOWS,
         GROUP, STATEFUL_PARDO, FLATTEN, SINK, TEMPLATE, TYPED, OPLUS, DGS)
