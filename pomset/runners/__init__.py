"""Runners: each executes a pipeline graph; chosen by `--runner`."""
from __future__ import annotations

from typing import Any


def get_runner(name: str) -> Any:
    """The runner called `name` (only imported when used)."""
    if name == "local":
        from .local.runner import LocalRunner
        return LocalRunner()
    if name == "spark":
        from .spark.runner import SparkRunner
        return SparkRunner()
    from ..sdk.errors import OptionsError
    raise OptionsError(f"unknown runner {name!r}")
