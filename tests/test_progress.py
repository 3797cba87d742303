"""What a user sees on a terminal while a local run goes: a status line of each step's
count, step names shortened where a word ends, a note while the last windows fire after the
input is read (the line would otherwise stand still), and the summary at the end."""
from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

from pomset.runtime.progress import short

SCRIPT = """
import pomset as pm
events = [pm.TimestampedValue(("user%d" % (i % 500), 1), i * 0.5) for i in range(60000)]
with pm.Pipeline(argv=["--workers=1", "--bundle_size=500"]) as p:
    (p | pm.Create(events) | pm.WindowInto(pm.Sessions(30))
       | "CountPerUserSession" >> pm.CombinePerKey(sum))
"""


def test_names_are_shortened_where_a_word_ends():
    assert short("Create") == "Create"
    assert short("WindowInto(Sessions(1800))") == "WindowInto…"
    assert short("CombinePerKey(Sum)") == "CombinePerKey(Sum)"
    assert short("read_the_clickstream_files") == "read_the…"
    assert short("averyveryverylongsinglewordname") == "averyveryverylong…"
    assert all(len(short(n)) <= 18 for n in ("WindowInto(Sessions(1800))",
                                               "read_the_clickstream_files"))


def test_a_run_on_a_terminal_shows_its_progress_and_the_last_windows_firing(tmp_path):
    script = tmp_path / "p.py"
    script.write_text(SCRIPT)
    main, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.DEVNULL,
                            stderr=terminal, stdin=subprocess.DEVNULL)
    os.close(terminal)
    out = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=120) == 0
    os.close(main)
    text = out.decode("utf-8", "replace")
    assert "Create read; closing its windows" in text
    assert "WindowInto…=" in text and "CountPerUserSess" in text
    assert "pomset run finished in" in text
    assert re.search(r"CountPerUserSession\s+received=60000", text)
