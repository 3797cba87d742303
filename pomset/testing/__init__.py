"""Testing pipelines, under Beam's names: `TestPipeline`, `assert_that` and its matchers
(`equal_to`, `is_empty`, `is_not_empty`, `matches_all`), `TestStream`; and beyond Beam,
matchers of the panes a grouping fired (`panes_equal`) and of what its retractions net to
(`nets_to`). `pomset.testing.util` and `pomset.testing.test_pipeline` hold them as Beam's
modules do, so `from apache_beam.testing.util import ...` ports by renaming the package."""
from ..sdk.asserts import (BeamAssertException, assert_that, equal_to, is_empty, is_not_empty,
                           matches_all, nets_to, panes_equal)
from ..sdk.test_stream import TestStream
from .test_pipeline import TestPipeline

__all__ = ["BeamAssertException", "TestPipeline", "TestStream", "assert_that", "equal_to",
           "is_empty", "is_not_empty", "matches_all", "nets_to", "panes_equal"]
