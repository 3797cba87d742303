"""The runner-neutral execution plan: a pipeline lowers once to plan nodes (`lower`), each of
a kind (`kinds`) with the facts its translation needs, and each runner translates the nodes
through its `TranslatorTable`."""
from .chains import fused_chains
from .kinds import (ASSIGN_WINDOWS, DGS, DGS_READ, DRIVER_READ, ELEMENTWISE, FLATTEN, GROUP,
                    KAFKA_READ, KAFKA_WRITE, KINDS, OPLUS, READ, SINK, STATEFUL_PARDO, TEMPLATE,
                    TYPED)
from .lower import Plan, kind_of, lower, lower_node
from .node import PlanNode
from .table import Translator, TranslatorTable, UntranslatableError

__all__ = ["ASSIGN_WINDOWS", "DGS", "DGS_READ", "DRIVER_READ", "ELEMENTWISE", "FLATTEN", "GROUP",
           "KAFKA_READ", "KAFKA_WRITE", "KINDS", "OPLUS", "READ", "SINK", "STATEFUL_PARDO",
           "TEMPLATE", "TYPED", "Plan", "PlanNode", "Translator", "TranslatorTable",
           "UntranslatableError", "fused_chains", "kind_of", "lower", "lower_node"]
