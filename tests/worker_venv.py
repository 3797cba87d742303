"""The Python of the test cluster's worker (tests/test_spark_cluster.py): a virtualenv with only
pyarrow, pandas and numpy, at this interpreter's versions, and no pomset, so a run proves that
pomset ships what executors need. `make test` builds it; the test builds it when missing.

    python tests/worker_venv.py DIR"""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

PACKAGES = ("pyarrow", "pandas", "numpy")
DEFAULT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".venv-worker")


def python(directory: str) -> str:
    """The virtualenv's interpreter."""
    return os.path.join(directory, "bin", "python")


def build(directory: str = DEFAULT) -> str:
    """Create the virtualenv unless it is there with these versions, and return its
    interpreter."""
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in PACKAGES]
    done = os.path.join(directory, ".installed")   # the versions it was built with
    if not os.path.exists(done) or open(done).read().split() != pins:
        subprocess.run([sys.executable, "-m", "venv", "--clear", directory], check=True)
        subprocess.run([python(directory), "-m", "pip", "install", "--quiet", *pins], check=True)
        with open(done, "w") as f:
            f.write("\n".join(pins))
    return python(directory)


if __name__ == "__main__":
    build(sys.argv[1] if len(sys.argv) > 1 else DEFAULT)
