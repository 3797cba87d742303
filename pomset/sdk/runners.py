"""Runners by name: the SDK finds the runner `--runner` names here, importing it only when a
pipeline runs, so no part of the SDK imports a runner. The built-in runners are a table of
names to classes; another package adds a runner under the `pomset.runners` entry-point group
(`name = package.module:RunnerClass`), a class whose `run(pipeline)` returns the result."""
from __future__ import annotations

import functools
import importlib
from importlib.metadata import entry_points
from typing import Any, Dict, Tuple

from .errors import OptionsError

BUILT_IN: Dict[str, str] = {
    "local": "pomset.runners.local.runner:LocalRunner",
    "spark": "pomset.runners.spark.runner:SparkRunner",
}
ENTRY_POINTS = "pomset.runners"
#: Beam's runner names, for Beam code that names one (FnApiRunner: the in-process runner
#: behind Beam's DirectRunner, which Beam's own tests pin)
ALIASES: Dict[str, str] = {"DirectRunner": "local", "FnApiRunner": "local",
                           "SparkRunner": "spark"}


@functools.lru_cache(maxsize=None)
def _registered() -> Tuple[Tuple[str, str], ...]:
    """The runners installed packages register, read once a process: reading every installed
    package's metadata costs tens of milliseconds, and every pipeline's options ask."""
    return tuple((ep.name, ep.value) for ep in entry_points(group=ENTRY_POINTS))


def _targets() -> Dict[str, str]:
    return {**dict(_registered()), **BUILT_IN}


def runner_names() -> list:
    """The names `--runner` accepts (Beam's aliases besides)."""
    return list(_targets())


def canonical_runner(name: Any) -> str:
    """The runner a name or Beam's alias for it (`DirectRunner`, `SparkRunner`) means; a
    runner object (Beam code passes `DirectRunner()`) names its kind by `runner_name`."""
    if not isinstance(name, str):
        name = getattr(name, "runner_name", None) or type(name).__name__
    return ALIASES.get(name, name)


def get_runner(name: str) -> Any:
    """A new runner of the kind `name` names."""
    target = _targets().get(name)
    if target is None:
        raise OptionsError(f"unknown runner {name!r}; available runners: "
                           f"{', '.join(runner_names())}")
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)()


class BeamRunnerAlias:
    """A Beam runner class Beam code constructs (`DirectRunner()`, `FnApiRunner()`), standing
    for the pomset runner `runner_name`: a pipeline given one runs there."""

    runner_name = "local"

    def run(self, pipeline: Any) -> Any:
        """Run `pipeline` on the pomset runner this one stands for."""
        return get_runner(self.runner_name).run(pipeline)

    def run_pipeline(self, pipeline: Any, options: Any = None) -> Any:
        """Beam's name for `run`."""
        return self.run(pipeline)
