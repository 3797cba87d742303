"""Beam's `apache_beam.transforms.stats`: approximate distinct counts and quantiles."""
from .._beam_names import missing
from ..sdk.approximate_quantiles import ApproximateQuantiles, ApproximateQuantilesCombineFn
from ..sdk.approximate_unique import ApproximateUnique, ApproximateUniqueCombineFn

__all__ = ["ApproximateQuantiles", "ApproximateQuantilesCombineFn", "ApproximateUnique",
           "ApproximateUniqueCombineFn"]
__getattr__ = missing(__name__, "apache_beam.transforms.stats")
