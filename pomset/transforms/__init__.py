"""Beam's `apache_beam.transforms` (`beam.transforms`) names: the core transforms, and the
`core`, `window`, `trigger` and `combiners` modules under it as in Beam."""
from .._beam_names import missing
from ..sdk.combinefn import CombineFn
from ..sdk.core import (CombineGlobally, CombinePerKey, CombineValues, Create, Distinct,
                        Filter, FlatMap, Flatten, GroupByKey, Keys, KvSwap, Map, ParDo,
                        Partition, Values, WindowInto, WithTimestamps)
from ..sdk.dofn import DoFn
from ..sdk.ptransform import PTransform, ptransform_fn
from ..sdk.shorthands import FlatMapTuple, MapTuple, Reshuffle, WithKeys
from . import (combiners, core, error_handling, ptransform, resources, stats, timeutil, trigger,
               userstate, util, window)

__all__ = ["CombineFn", "CombineGlobally", "CombinePerKey", "CombineValues", "Create",
           "Distinct", "DoFn", "Filter", "FlatMap", "FlatMapTuple", "Flatten", "GroupByKey", "Keys", "KvSwap",
           "Map", "MapTuple", "PTransform", "ParDo", "Partition", "ptransform", "ptransform_fn", "Reshuffle", "Values", "WindowInto",
           "WithKeys", "WithTimestamps", "combiners", "core", "error_handling", "resources", "stats", "timeutil", "trigger", "userstate", "util",
           "window"]
__getattr__ = missing(__name__, "apache_beam.transforms")
