"""Beam's `apache_beam.transforms.deduplicate`: `Deduplicate` and `DeduplicatePerKey`
(`pomset.sdk.deduplicate`)."""
from .._beam_names import missing
from ..sdk.deduplicate import Deduplicate, DeduplicatePerKey

__all__ = ["Deduplicate", "DeduplicatePerKey"]
__getattr__ = missing(__name__, "apache_beam.transforms.deduplicate")
