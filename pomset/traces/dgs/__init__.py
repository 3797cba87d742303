"""Dependency-guided synchronization (Kallas et al.): DGS programs, their consistency check,
synchronization plans, and the optimizer that chooses one. `import pomset as pm` gives them
as `pm.DGS` and `pm.dgs.*`."""
from .consistency import ConsistencyError, check_consistency
from .optimizer import optimize
from .plans import PlanError, SyncPlan, Worker
from .program import DGS, DGSStep, Fork, StateType
from .streams import ReadStreams, Stream, StreamError

__all__ = ["ConsistencyError", "check_consistency", "optimize", "PlanError", "SyncPlan",
           "Worker", "DGS", "DGSStep", "Fork", "StateType", "ReadStreams", "Stream",
           "StreamError"]
