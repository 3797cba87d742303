"""Beam's `apache_beam.testing.test_utils`: the file helpers tests of file pipelines use,
`create_file` to write an input and `read_files_from_pattern` to read what a run wrote."""
from __future__ import annotations

import os

from .._beam_names import missing
from ..sdk.io.base import expand_pattern

__test__ = False   # not a test module for pytest to collect


def create_file(path: str, contents: str) -> str:
    """Write `contents` (UTF-8) to the local file `path`, making its directory; returns
    `path`."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(contents)
    return path


def read_files_from_pattern(file_pattern: str) -> str:
    """The files the glob `file_pattern` matches, in name order, each read as UTF-8 and
    stripped, joined by newlines."""
    texts = []
    for path in expand_pattern(file_pattern):
        with open(path, encoding="utf-8") as f:
            texts.append(f.read().strip())
    return "\n".join(texts)


__all__ = ["create_file", "read_files_from_pattern"]
__getattr__ = missing(__name__, "apache_beam.testing.test_utils")
