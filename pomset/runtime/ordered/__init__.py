"""The ordered-parallel core (Prasaad et al., "Scaling Ordered Stream Processing on
Shared-Memory Multicores"): units of work carry serial numbers, run on any worker, and their
outputs leave in serial order through a reorder buffer."""
from .hybrid import HybridQueue, PartitionedQueue
from .reorder import LockedReorder, NonBlockingReorder

__all__ = ["HybridQueue", "LockedReorder", "NonBlockingReorder", "PartitionedQueue"]
