"""Beam's `apache_beam.testing.test_pipeline.TestPipeline`: a pipeline for tests, quiet, run
when its `with` block ends, its flags from `--test-pipeline-options` on the command line."""
from __future__ import annotations

import shlex
import sys
from typing import Any, List, Optional, Sequence

from ..sdk.options import PipelineOptions
from ..sdk.pipeline import Pipeline

__test__ = False   # not a test class for pytest to collect


class TestPipeline(Pipeline):
    """A Pipeline for tests: without `options` or `argv`, its flags are those in
    `--test-pipeline-options="..."` on the command line (as Beam's test runners pass them),
    else none; progress output is off (`--quiet`). It runs when its `with` block ends, and
    the `assert_that`s on it are checked then."""

    __test__ = False

    def __init__(self, runner: Optional[str] = None, options: Optional[PipelineOptions] = None,
                 argv: Optional[Sequence[str]] = None, **_: Any) -> None:
        if options is None:
            flags = list(argv) if argv is not None else _test_pipeline_options()
            options = PipelineOptions(["--quiet", *flags])
        super().__init__(runner=runner, options=options)


def _test_pipeline_options() -> List[str]:
    """The flags in `--test-pipeline-options` on the command line, split as a shell would."""
    args = sys.argv[1:]
    for i, arg in enumerate(args):
        if arg.startswith("--test-pipeline-options="):
            return shlex.split(arg.split("=", 1)[1])
        if arg == "--test-pipeline-options" and i + 1 < len(args):
            return shlex.split(args[i + 1])
    return []
