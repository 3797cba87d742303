"""Errors a pipeline author sees."""
from __future__ import annotations


class PipelineConstructionError(ValueError):
    """The pipeline cannot run as written; raised while it is being built."""


class UserCodeError(RuntimeError):
    """A user function raised while processing an element; the run failed."""


class OptionsError(ValueError):
    """A command-line flag or pipeline option is unknown or invalid."""


class CheckpointError(RuntimeError):
    """A checkpoint cannot be used: damaged, of another pipeline, or out of step with the
    output it belongs to. The message names the file or step and what to do."""


class CheckpointWarning(UserWarning):
    """A damaged checkpoint was passed over for an older one that can be resumed safely."""
