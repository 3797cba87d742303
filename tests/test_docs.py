"""The documentation site builds as `make docs` builds it: `mkdocs build --strict` fails on a
broken link or anchor and on an API reference entry that names no object. The API reference
(docs/api/) has an entry for every public name of `pomset` and lists every name of its
modules of Beam's names."""
from __future__ import annotations

import glob
import importlib
import os
import subprocess
import sys
import types

import pomset

ROOT = os.path.join(os.path.dirname(__file__), "..")
API = os.path.join(ROOT, "docs", "api")
#: pomset's modules of Beam's names (pomset.window, ...) and pomset.testing
FACADES = [name for name in pomset.__all__ if isinstance(getattr(pomset, name), types.ModuleType)]


def _api_text() -> str:
    return "".join(open(page, encoding="utf-8").read()
                   for page in glob.glob(os.path.join(API, "*.md")))


def test_the_site_builds_strictly(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "api" / "transforms" / "index.html").exists()


def test_every_public_name_has_a_reference_entry():
    text = _api_text()
    missing = [name for name in pomset.__all__ if f"::: pomset.{name}\n" not in text]
    assert not missing, (f"pomset.__all__ names without an entry in docs/api/: {missing}; add "
                         f"'::: pomset.NAME' to the page of docs/api/ where it belongs")


def test_the_reference_lists_the_names_of_each_beam_module():
    text = _api_text()
    assert FACADES
    for facade in FACADES:
        module = importlib.import_module(f"pomset.{facade}")
        missing = [name for name in module.__all__
                   if not isinstance(getattr(module, name), types.ModuleType)
                   and f"`{name}`" not in text and f".{name}\n" not in text]
        assert not missing, (f"docs/api/ does not list pomset.{facade}'s {missing}: name them "
                             f"in docs/api/beam-modules.md (pomset.testing's in testing.md)")
