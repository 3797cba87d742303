"""Beam's `apache_beam.testing.util`: `assert_that` and its matchers."""
from .._beam_names import missing
from ..sdk.any_order import contains_in_any_order
from ..sdk.asserts import (BeamAssertException, assert_that, equal_to, equal_to_approx,
                           is_empty, is_not_empty, matches_all, nets_to, panes_equal)
from ..sdk.reified import TestWindowedValue
from ..sdk.row_equality import row_namedtuple_equals_fn
from ..sdk.sort_lists import SortLists
from ..sdk.window_asserts import equal_to_per_window

__all__ = ["BeamAssertException", "SortLists", "TestWindowedValue", "assert_that",
           "contains_in_any_order", "equal_to", "equal_to_approx", "equal_to_per_window",
           "is_empty", "is_not_empty", "matches_all", "nets_to", "panes_equal",
           "row_namedtuple_equals_fn"]

__getattr__ = missing(__name__, "apache_beam.testing.util")
