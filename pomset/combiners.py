"""Beam's `apache_beam.transforms.combiners` (`beam.combiners`) names: `Count.PerKey()`,
`Count.PerElement()`, `Count.Globally()`, `Mean.PerKey()`, `Top.Of(n)`, `Top.Largest(n)`,
`Top.SmallestPerKey(n)`, `ToList.Globally()`, `Latest.Globally()`, `Latest.PerKey()`, and the
CombineFns under Beam's CombineFn names."""
from ._beam_names import missing
from .sdk.combinefn import Count, Mean, Top, ToList
from .sdk.shorthands import Latest

CountCombineFn = Count
MeanCombineFn = Mean
ToListCombineFn = ToList
TopCombineFn = Top

__all__ = ["Count", "CountCombineFn", "Latest", "Mean", "MeanCombineFn", "Top", "TopCombineFn",
           "ToList", "ToListCombineFn"]
__getattr__ = missing(__name__, "apache_beam.transforms.combiners")
