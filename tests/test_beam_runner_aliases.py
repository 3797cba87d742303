"""Beam's runner classes that Beam code constructs (`DirectRunner()`, `FnApiRunner()`,
`BundleBasedDirectRunner()`): each runs a pipeline given it on pomset's local runner."""
from __future__ import annotations

import pytest

import pomset as pm
from pomset.runners.direct.direct_runner import BundleBasedDirectRunner, DirectRunner
from pomset.runners.portability.fn_api_runner import FnApiRunner
from pomset.testing.util import assert_that, equal_to


@pytest.mark.parametrize("runner", [DirectRunner, BundleBasedDirectRunner, FnApiRunner])
def test_a_beam_runner_object_runs_the_pipeline_locally(runner):
    p = pm.Pipeline(runner=runner(), options=pm.PipelineOptions(["--quiet"]))
    assert p.options.runner == "local"
    assert_that(p | pm.Create([1, 2]) | pm.Map(lambda x: x * 10), equal_to([10, 20]))
    p.run()


def test_beams_pickle_library_flag_is_accepted():
    assert pm.PipelineOptions(["--pickle_library=cloudpickle"]).pickle_library == "cloudpickle"
