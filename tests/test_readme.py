"""The README's snippets run as written, in order, and print what their comments say."""
from __future__ import annotations

import contextlib
import io
import os
import re

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def _snippets() -> list:
    text = open(README, encoding="utf-8").read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_snippets_run_and_print_what_they_promise():
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for code in _snippets():
            exec(compile(code, "README.md", "exec"), namespace)
    printed = out.getvalue().splitlines()
    assert printed[0] == "('user1', 38)"
    assert printed[1] == "[5, 7] 2"
    assert printed[2:4] == ["IntervalWindow(10, 70) 5", "IntervalWindow(70, 210) 14"]
    assert printed[4:7] == ["5 EARLY 0", "12 ON_TIME 1", "21 LATE 2"]
    assert printed[7:12] == ["1 5 IntervalWindow(0, 60)", "-1 5 IntervalWindow(0, 60)",
                             "1 12 IntervalWindow(0, 110)", "-1 12 IntervalWindow(0, 110)",
                             "1 12 IntervalWindow(0, 110)"]
    assert printed[12] == "events.txt 2"
    assert printed[13] == "[1, 2] x"
    assert printed[14] == "checked"
    assert printed[15] == "4 ('user1', 38)"
    assert printed[16:19] == ["[('a', 4), ('a', 4), ('b', 2)]", "[('a', 6), ('a', 8), ('b', 4)]",
                              "[('a', 40), ('b', 20)]"]
    assert printed[19] == "[(20.0, 1), (21.0, 2), (22.0, 3), (23.0, 4)]"
    assert printed[20] == "[('a', -60, 1), ('a', 0, 1), ('b', -60, 1)]"
    assert len(_snippets()) == 15
