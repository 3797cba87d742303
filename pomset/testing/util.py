"""Beam's `apache_beam.testing.util`: `assert_that` and its matchers."""
from ..sdk.asserts import (BeamAssertException, assert_that, equal_to, is_empty, is_not_empty,
                           matches_all, nets_to, panes_equal)

__all__ = ["BeamAssertException", "assert_that", "equal_to", "is_empty", "is_not_empty",
           "matches_all", "nets_to", "panes_equal"]
