"""Beam's `apache_beam.testing.test_pipeline.TestPipeline`: a pipeline for tests, quiet, run
when its `with` block ends, its flags from `--test-pipeline-options` on the command line."""
from __future__ import annotations

import argparse
import shlex
import sys
import unittest
from typing import Any, List, Optional, Sequence

from ..sdk.options import PipelineOptions
from ..sdk.pipeline import Pipeline
from ..sdk.runners import get_runner

__test__ = False   # not a test class for pytest to collect


class TestPipeline(Pipeline):
    """A Pipeline for tests: without `options` or `argv`, its flags are those in
    `--test-pipeline-options="..."` on the command line (as Beam's test runners pass them),
    else in the class's `pytest_test_pipeline_options` (as Beam's pytest plugin sets it), else
    none; progress output is off (`--quiet`). It runs when its `with` block ends, and the
    `assert_that`s on it are checked then.

    As in Beam, an integration test (`is_integration_test=True`) is skipped when no test
    pipeline options are given, and reads what it needs from them: `get_option(name)`, and
    `get_full_options_as_args(**extra)` for the program under test."""

    __test__ = False
    #: the test pipeline options when the command line has none (Beam's pytest plugin sets it)
    pytest_test_pipeline_options: Optional[str] = None

    def __init__(self, runner: Optional[str] = None, options: Optional[PipelineOptions] = None,
                 argv: Optional[Sequence[str]] = None, is_integration_test: bool = False,
                 additional_pipeline_args: Optional[Sequence[str]] = None, **_: Any) -> None:
        self.is_integration_test = is_integration_test
        #: the flags the test was given, for get_option and get_full_options_as_args
        self.options_list = (list(argv) if argv is not None else self._test_pipeline_options()
                             ) + list(additional_pipeline_args or ())
        if options is None:
            options = PipelineOptions(["--quiet", *self.options_list])
        super().__init__(runner=runner, options=options)

    @property
    def runner(self) -> Any:
        """Beam's `TestPipeline.runner`: a runner of the kind the options name (a
        `LocalRunner`, a `SparkRunner`: its class says which), the one that runs the
        pipeline."""
        return get_runner(self.options.runner)

    @property
    def _options(self) -> PipelineOptions:
        """Beam's attribute for the pipeline's options, which Beam's tests set flags through
        before the pipeline runs (`p._options.view_as(StandardOptions).streaming = True`)."""
        return self.options

    def _test_pipeline_options(self) -> List[str]:
        """The flags in `--test-pipeline-options`, split as a shell would; an integration test
        without them is skipped."""
        flags = _command_line_option() or type(self).pytest_test_pipeline_options
        if self.is_integration_test and not flags:
            raise unittest.SkipTest("an integration test runs only with --test-pipeline-options")
        return shlex.split(flags) if flags else []

    def get_option(self, name: str) -> Optional[str]:
        """The value of `--name` among the test's flags (None when not given)."""
        name = name[2:] if name.startswith("--") else name
        parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        parser.add_argument(f"--{name}", dest="value")
        return parser.parse_known_args(self.options_list)[0].value

    def get_full_options_as_args(self, **extra: Any) -> List[str]:
        """The test's flags, then `--key=value` for each of `extra` (`--key` for True; a
        false or empty one left out), for a program under test that parses its own."""
        args = list(self.options_list)
        for key, value in extra.items():
            if value is True:
                args.append(f"--{key}")
            elif value:
                args.append(f"--{key}={value}")
        return args


def _command_line_option() -> Optional[str]:
    """The value of `--test-pipeline-options` on the command line, if it is there."""
    args = sys.argv[1:]
    for i, arg in enumerate(args):
        if arg.startswith("--test-pipeline-options="):
            return arg.split("=", 1)[1]
        if arg == "--test-pipeline-options" and i + 1 < len(args):
            return args[i + 1]
    return None
