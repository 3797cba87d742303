"""The README's snippets run as written, in order, and print exactly what the README shows
under them: each Python block that prints is followed by a plain block with its output."""
from __future__ import annotations

import contextlib
import io
import os
import re

README = os.path.join(os.path.dirname(__file__), "..", "README.md")
#: a Python block, and the plain block right under it (what it prints), if any
SNIPPET = re.compile(r"```python\n(.*?)```\n(?:```\n(.*?)```\n)?", re.S)


def _snippets() -> list:
    text = open(README, encoding="utf-8").read()
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
            for m in SNIPPET.finditer(text)]


def test_readme_snippets_run_and_print_what_the_readme_shows():
    namespace: dict = {}
    snippets = _snippets()
    assert len(snippets) >= 15
    for code, shown, line in snippets:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), namespace)
        printed = out.getvalue()
        assert printed == (shown or ""), (
            f"README.md:{line}: the snippet prints {printed!r}, the README shows {shown!r}")
