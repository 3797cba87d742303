"""pytest's `--test-pipeline-options`, as Beam's test setup gives it: installed with pomset
(the `pytest11` entry point), so `pytest --test-pipeline-options="--runner=spark"` runs every
`TestPipeline` of the session with those flags."""
from __future__ import annotations

from typing import Any

from .test_pipeline import TestPipeline

OPTION = "--test-pipeline-options"


def pytest_addoption(parser: Any) -> None:
    """Register the option, unless a conftest of the project (Beam's own has one) did."""
    try:
        parser.addoption(OPTION, default=None,
                         help="flags for every TestPipeline, as one string: "
                              "--test-pipeline-options='--runner=spark --streaming'")
    except ValueError:
        pass


def pytest_configure(config: Any) -> None:
    """Give the option's flags to every TestPipeline of the session."""
    flags = config.getoption(OPTION, default=None)
    if flags:
        TestPipeline.pytest_test_pipeline_options = flags
