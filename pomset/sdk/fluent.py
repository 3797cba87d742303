"""The fluent, snake_case face of PCollection: `pcoll.map(f).window_into(...).retracting()`.

Each method applies the transform of the same name, so both styles build the same graph.
"""
from __future__ import annotations

from typing import Any, Callable, Optional


class FluentMethods:
    """Mixed into PCollection; every method returns the resulting PCollection(s)."""

    def apply(self, transform: Any, label: Optional[str] = None) -> Any:
        raise NotImplementedError

    # element-wise
    def map(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        from .core import Map
        return self.apply(Map(fn, *args, **kwargs))

    def flat_map(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        from .core import FlatMap
        return self.apply(FlatMap(fn, *args, **kwargs))

    def filter(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        from .core import Filter
        return self.apply(Filter(fn, *args, **kwargs))

    def par_do(self, dofn: Any, *args: Any, **kwargs: Any) -> Any:
        from .core import ParDo
        return self.apply(ParDo(dofn, *args, **kwargs))

    def with_timestamps(self, fn: Callable) -> Any:
        from .core import WithTimestamps
        return self.apply(WithTimestamps(fn))

    def keys(self) -> Any:
        from .core import Keys
        return self.apply(Keys())

    def values(self) -> Any:
        from .core import Values
        return self.apply(Values())

    def kv_swap(self) -> Any:
        from .core import KvSwap
        return self.apply(KvSwap())

    # where, when, how
    def window_into(self, window_fn: Any = None, **kwargs: Any) -> Any:
        from .core import WindowInto
        return self.apply(WindowInto(window_fn, **kwargs))

    def triggering(self, trigger: Any) -> Any:
        return self.window_into(trigger=trigger)

    def discarding(self) -> Any:
        from ..triggers import AccumulationMode
        return self.window_into(accumulation_mode=AccumulationMode.DISCARDING)

    def accumulating(self) -> Any:
        from ..triggers import AccumulationMode
        return self.window_into(accumulation_mode=AccumulationMode.ACCUMULATING)

    def retracting(self) -> Any:
        from ..triggers import AccumulationMode
        return self.window_into(accumulation_mode=AccumulationMode.RETRACTING)

    def with_allowed_lateness(self, lateness: Any) -> Any:
        return self.window_into(allowed_lateness=lateness)

    def with_timestamp_combiner(self, combiner: Any) -> Any:
        return self.window_into(timestamp_combiner=combiner)

    # grouping and combining
    def group_by_key(self) -> Any:
        from .core import GroupByKey
        return self.apply(GroupByKey())

    def combine_per_key(self, fn: Any) -> Any:
        from .core import CombinePerKey
        return self.apply(CombinePerKey(fn))

    def combine_globally(self, fn: Any) -> Any:
        from .core import CombineGlobally
        return self.apply(CombineGlobally(fn))

    def combine_values(self, fn: Any) -> Any:
        from .core import CombineValues
        return self.apply(CombineValues(fn))

    def distinct(self) -> Any:
        from .core import Distinct
        return self.apply(Distinct())

    def partition(self, fn: Callable, n: int, *args: Any, **kwargs: Any) -> Any:
        from .core import Partition
        return self.apply(Partition(fn, n, *args, **kwargs))

    def flatten(self, *others: Any) -> Any:
        from .core import Flatten
        return self.pipeline.apply(Flatten(), (self,) + others)

    def co_group_by_key(self, *others: Any) -> Any:
        from .core import CoGroupByKey
        return self.pipeline.apply(CoGroupByKey(), (self,) + others)

    # file sinks
    def write_to_text(self, path_prefix: Any, **kwargs: Any) -> Any:
        from .io import WriteToText
        return self.apply(WriteToText(path_prefix, **kwargs))

    def write_to_parquet(self, path_prefix: Any, **kwargs: Any) -> Any:
        from .io import WriteToParquet
        return self.apply(WriteToParquet(path_prefix, **kwargs))

    def write_to_json(self, path_prefix: Any, **kwargs: Any) -> Any:
        from .io import WriteToJson
        return self.apply(WriteToJson(path_prefix, **kwargs))

    def write_to_csv(self, path_prefix: Any, **kwargs: Any) -> Any:
        from .io import WriteToCsv
        return self.apply(WriteToCsv(path_prefix, **kwargs))


def add_fluent_methods(cls: type) -> type:
    """Give every PCollection the methods of `cls`: how a layer above the SDK (typed data
    traces) adds its fluent methods without the SDK importing it. Used as a class decorator."""
    for name, value in vars(cls).items():
        if callable(value) and not name.startswith("_"):
            if hasattr(FluentMethods, name):
                raise TypeError(f"fluent method {name!r} is already defined")
            setattr(FluentMethods, name, value)
    return cls
