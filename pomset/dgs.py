"""Dependency-guided synchronization (Kallas et al.): `import pomset as pm` gives `pm.DGS` and
this module's names as `pm.dgs.*` (they live in `pomset.traces.dgs`)."""
from .traces.dgs import (DGS, ConsistencyError, Fork, PlanError, ReadStreams, StateType,
                         Stream, StreamError, SyncPlan, Worker, check_consistency, optimize)

__all__ = ["DGS", "ConsistencyError", "Fork", "PlanError", "ReadStreams", "StateType", "Stream",
           "StreamError", "SyncPlan", "Worker", "check_consistency", "optimize"]
