"""Beam's `apache_beam.transforms.combiners` (`beam.combiners`) names: `Count`, `Mean`, `Top`
(`Of`, `Largest`, `Smallest`, `LargestPerKey`, `SmallestPerKey`), `Sample`, `Latest`, the
gathering transforms `ToList()`, `ToDict()`, `ToSet()`, and the CombineFns under Beam's
CombineFn names (`MeanCombineFn`, `TupleCombineFn`, `Largest`, ...)."""
from ._beam_names import missing
from .sdk.collect import ToDict, ToList, ToSet
from .sdk.combinefn import (Count, Largest, Mean, Smallest, ToDict as ToDictCombineFn,
                            ToList as ToListCombineFn, ToSet as ToSetCombineFn, Top)
from .sdk.sample import Sample, SampleCombineFn
from .sdk.shorthands import Latest, LatestCombineFn
from .sdk.tuple_combine import SingleInputTupleCombineFn, TupleCombineFn

CountCombineFn = Count
MeanCombineFn = Mean
TopCombineFn = Top

__all__ = ["Count", "CountCombineFn", "Largest", "Latest", "LatestCombineFn", "Mean",
           "MeanCombineFn", "Sample", "SampleCombineFn", "SingleInputTupleCombineFn",
           "Smallest", "ToDict", "ToDictCombineFn", "ToList", "ToListCombineFn", "ToSet",
           "ToSetCombineFn", "Top", "TopCombineFn", "TupleCombineFn"]
__getattr__ = missing(__name__, "apache_beam.transforms.combiners")
