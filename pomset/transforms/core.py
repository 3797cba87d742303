"""Beam's `apache_beam.transforms.core`: the core transforms pomset has, under the module Beam
code imports them from (`from apache_beam.transforms.core import DoFn`)."""
from .._beam_names import missing
from ..sdk.combinefn import CombineFn
from ..sdk.core import (CombineGlobally, CombinePerKey, CombineValues, Create, Filter, FlatMap,
                        Flatten, FlattenWith, GroupByKey, Impulse, Map, ParDo, Partition,
                        PartitionFn, Tee, WindowInto)
from ..sdk.dofn import DeadLetter, DoFn
from ..sdk.shorthands import FlatMapTuple, MapTuple

__all__ = ["CombineFn", "CombineGlobally", "CombinePerKey", "CombineValues", "Create",
           "DeadLetter", "DoFn", "Filter", "FlatMap", "FlatMapTuple", "Flatten", "FlattenWith",
           "GroupByKey", "Impulse", "Map", "MapTuple", "ParDo", "Partition", "PartitionFn",
           "Tee", "WindowInto"]
__getattr__ = missing(__name__, "apache_beam.transforms.core")
