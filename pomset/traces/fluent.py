"""The fluent methods of typed data traces on every PCollection: `pcoll.typed(U(str, int))
.sort(order).keyed_ordered(...)`, each applying the transform of the same name."""
from __future__ import annotations

from typing import Any, Callable

from ..sdk.fluent import add_fluent_methods
from .templates import (Hash, Merge, OpKeyedOrdered, OpKeyedUnordered, OpStateless,
                        RoundRobin, Sort, Typed)


@add_fluent_methods
class TraceMethods:
    """Added to PCollection by `add_fluent_methods`."""

    def typed(self, trace_type: Any, period: Any = None) -> Any:
        return self.apply(Typed(trace_type, period))

    def sort(self, order: Callable, parallelism: int = 1) -> Any:
        return self.apply(Sort(order, parallelism))

    def stateless(self, **functions: Any) -> Any:
        return self.apply(OpStateless(**functions))

    def keyed_ordered(self, **functions: Any) -> Any:
        return self.apply(OpKeyedOrdered(**functions))

    def keyed_unordered(self, **functions: Any) -> Any:
        return self.apply(OpKeyedUnordered(**functions))

    def merge(self, *others: Any) -> Any:
        return self.pipeline.apply(Merge(), (self,) + others)

    def hash_split(self, n: int) -> Any:
        return self.apply(Hash(n))

    def round_robin(self, n: int) -> Any:
        return self.apply(RoundRobin(n))
