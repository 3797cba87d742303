"""Typed data-trace annotations (Mamouras et al., Data-Trace Types): trace types on edges,
operator templates, connectors, the type check, and the runtime every runner deploys them
with."""
from . import fluent as _fluent  # noqa: F401  (adds the fluent methods to PCollection)
from . import dgs
from .dgs import DGS, DGSStep
from .edges import EdgeTrace, trace_of
from .equivalence import equivalent, normal_form
from .oplus import OPlus
from .templates import (Hash, Merge, OpKeyedOrdered, OpKeyedUnordered, OpStateless,
                        RoundRobin, Sort, SortInserted, TemplateStep, Typed)
from .types import MARKER, O, KeyValueType, Marker, TraceType, U, Unit

__all__ = ["dgs", "DGS", "DGSStep", "EdgeTrace", "trace_of", "equivalent", "normal_form", "OPlus", "Hash", "Merge",
           "OpKeyedOrdered", "OpKeyedUnordered", "OpStateless", "RoundRobin", "Sort",
           "SortInserted", "TemplateStep", "Typed", "MARKER", "O", "KeyValueType", "Marker",
           "TraceType", "U", "Unit"]
