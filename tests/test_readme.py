"""The snippets of the README and of every docs page run as written, in order, and print
exactly what the page shows under them: each Python block that prints is followed by a plain
block with its output. Each page runs in a namespace of its own, so its snippets start from
its own imports. A block marked ```py instead of ```python is shown, not run: it needs what a
test run does not have (a Kafka broker, a cluster)."""
from __future__ import annotations

import contextlib
import glob
import io
import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")
PAGES = ["README.md"] + sorted(os.path.relpath(path, ROOT) for path in
                               glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
#: a Python block, and the plain block right under it (what it prints), if any
SNIPPET = re.compile(r"```python\n(.*?)```\n(?:```\n(.*?)```\n)?", re.S)


def _snippets(page: str) -> list:
    text = open(os.path.join(ROOT, page), encoding="utf-8").read()
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
            for m in SNIPPET.finditer(text)]


def test_the_pages_have_their_snippets():
    assert _snippets("README.md")
    assert sum(len(_snippets(page)) for page in PAGES) >= 20


@pytest.mark.parametrize("page", PAGES)
def test_snippets_run_and_print_what_the_page_shows(page):
    namespace: dict = {}
    for code, shown, line in _snippets(page):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            # blank lines first, so that a traceback gives the line in the page
            exec(compile("\n" * line + code, page, "exec"), namespace)
        printed = out.getvalue()
        assert printed == (shown or ""), (
            f"{page}:{line}: the snippet prints {printed!r}, the page shows {shown!r}")
