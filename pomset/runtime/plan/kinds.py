"""The plan's node kinds, as the primitives declare them (defined in `sdk.plan_kinds`)."""
from ...sdk.plan_kinds import (ASSIGN_WINDOWS, DGS, DGS_READ, DRIVER_READ, ELEMENTWISE, FLATTEN,
                               GROUP, KAFKA_READ, KAFKA_WRITE, KINDS, OPLUS, READ, SINK,
                               STATEFUL_PARDO, TEMPLATE, TYPED)

__all__ = ["ASSIGN_WINDOWS", "DGS", "DGS_READ", "DRIVER_READ", "ELEMENTWISE", "FLATTEN", "GROUP",
           "KAFKA_READ", "KAFKA_WRITE", "KINDS", "OPLUS", "READ", "SINK", "STATEFUL_PARDO",
           "TEMPLATE", "TYPED"]
