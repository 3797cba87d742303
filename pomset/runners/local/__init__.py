"""The local runner. Importing the package registers every stage kind in its translator table
(`stages.STAGES`): the core's in `stages`, each extension's in its own module."""
from . import dgs, files, kafka, oplus, stages, templates  # noqa: F401  (they register)
