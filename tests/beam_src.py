"""Beam's own Python sources for tests/test_beam_*.py: the pinned apache-beam wheel, fetched
from PyPI with pip (never installed: its dependencies conflict with pomset's), checked against
its sha256, and the modules the tests run unpacked into .beam-src/ (git-ignored). `make test`
fetches it first; the tests fetch it when it is missing.

    python tests/beam_src.py [DIR]"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

VERSION = "2.77.0"
#: the wheel pip picks for CPython 3.11 on manylinux x86_64, and its sha256 on PyPI
WHEEL = (f"apache_beam-{VERSION}-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64"
         ".manylinux_2_28_x86_64.whl")
SHA256 = "c5288fd71a0a322ccd81c6387d2340a89c9d3cb4d673b59b5d5e226790ee031d"
#: what the tests load from it: the examples and their tests, and Beam's unit tests that
#: tests/test_beam_suite.py runs (issue 60), with the modules and data those import
SUITE = ("transforms/combiners_test", "transforms/util_test", "transforms/ptransform_test",
         "transforms/core_test", "transforms/window_test", "transforms/trigger_test",
         "transforms/sideinputs_test", "transforms/create_test", "transforms/stats_test",
         "transforms/deduplicate_test", "transforms/userstate_test",
         "transforms/combinefn_lifecycle_test", "testing/util_test",
         "testing/test_stream_test", "pvalue_test", "pipeline_test")
MEMBERS = ("apache_beam/examples/wordcount.py", "apache_beam/examples/wordcount_test.py",
           "apache_beam/examples/complete/game/",
           "apache_beam/transforms/combinefn_lifecycle_pipeline.py",
           "apache_beam/testing/data/trigger_transcripts.yaml",
           "apache_beam/typehints/typehints_test.py") + tuple(
               f"apache_beam/{name}.py" for name in SUITE)
DEFAULT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".beam-src")


def fetch(directory: str = DEFAULT) -> str:
    """Unpack Beam's sources into `directory` unless they are there from this wheel; return
    it. Safe to run from several processes at once: the tree is built aside and renamed."""
    directory = os.path.abspath(directory)
    stamp = os.path.join(directory, "SHA256")
    if os.path.exists(stamp) and open(stamp).read() == _stamp():
        return directory
    parent = os.path.dirname(directory)
    with tempfile.TemporaryDirectory(dir=parent, prefix=".beam-src-") as tmp:
        wheel = _download(tmp)
        tree = os.path.join(tmp, "tree")
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.startswith(MEMBERS):
                    zf.extract(name, tree)
        with open(os.path.join(tree, "SHA256"), "w") as f:
            f.write(_stamp())
        if os.path.exists(directory):
            shutil.rmtree(directory, ignore_errors=True)
        try:
            os.rename(tree, directory)
        except OSError:   # another process put it there first
            if not os.path.exists(stamp):
                raise
    return directory


def _stamp() -> str:
    """What .beam-src/SHA256 says of a tree unpacked from this wheel with these members."""
    return f"{SHA256}\n" + "".join(f"{m}\n" for m in MEMBERS)


def _download(into: str) -> str:
    """The pinned wheel, downloaded into `into` by pip and checked against its sha256."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--only-binary=:all:", "--platform", "manylinux2014_x86_64",
                    "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
                    "-d", into, f"apache-beam=={VERSION}"], check=True)
    wheel = os.path.join(into, WHEEL)
    digest = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
    if digest != SHA256:
        raise RuntimeError(f"{WHEEL}: sha256 {digest}, expected {SHA256}")
    return wheel


if __name__ == "__main__":
    fetch(sys.argv[1] if len(sys.argv) > 1 else DEFAULT)
