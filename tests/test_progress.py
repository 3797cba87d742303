"""What a user sees on a terminal while a local run goes: a status line of each step's
count, step names shortened where a word ends, the share read and the time left of a source
whose size is known, a note while the last windows fire after the input is read (the line
would otherwise stand still), and the summary at the end."""
from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import time

from kafka_util import new_topic, produce
from pomset.runtime.progress import ProgressLine, clock, short

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


FILE_SCRIPT = """
import sys, time
import pomset as pm
with pm.Pipeline(argv=["--workers=1", "--bundle_size=200"]) as p:
    (p | pm.ReadFromJson(sys.argv[1], timestamp_field="t")
       | "Slowly" >> pm.Map(lambda r: time.sleep(0.0001) or (r["user"], 1))
       | pm.WindowInto(pm.FixedWindows(60)) | "Count" >> pm.CombinePerKey(sum))
"""

KAFKA_SCRIPT = """
import sys
import pomset as pm
bootstrap, topic, until = sys.argv[1], sys.argv[2], sys.argv[3] or None
with pm.Pipeline(argv=["--bundle_size=10"]) as p:
    p | pm.ReadFromKafka(bootstrap, topic, until=until) | pm.Map(len)
"""


def on_a_terminal(*args: str, stop_at: bytes = b"") -> str:
    """What a Python script writes to stderr on a pseudo-terminal; a run that never ends is
    sent SIGTERM (it stops, as on Ctrl-C, with status 143) once its output shows `stop_at`."""
    main, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL,
                            stderr=terminal, stdin=subprocess.DEVNULL)
    os.close(terminal)
    out, deadline = b"", time.monotonic() + 120
    stopped = bool(stop_at)
    while time.monotonic() < deadline:
        if not select.select([main], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
        if stop_at and stop_at in out and proc.poll() is None:
            proc.terminate()
            stop_at = b""
    assert proc.wait(timeout=60) == (143 if stopped else 0)
    os.close(main)
    return out.decode("utf-8", "replace")


def lines(text: str) -> list:
    return [line.strip() for line in text.split("\r")]


def test_a_run_on_a_terminal_shows_its_progress_and_the_last_windows_firing(tmp_path):
    script = tmp_path / "p.py"
    script.write_text(SCRIPT)
    text = on_a_terminal(str(script))
    assert "Create read; closing its windows" in text
    assert "WindowInto…=" in text and "CountPerUserSess" in text
    assert "pomset run finished in" in text
    assert re.search(r"CountPerUserSession\s+received=60000", text)
    assert "Create=60000 100%" in text


def test_a_file_source_shows_the_share_read_rising_to_100_and_the_time_left(tmp_path):
    data = tmp_path / "events.jsonl"
    data.write_text("".join(json.dumps({"user": f"u{i % 50}", "t": i}) + "\n"
                            for i in range(20000)))
    script = tmp_path / "p.py"
    script.write_text(FILE_SCRIPT)
    text = on_a_terminal(str(script), str(data))
    shares = [int(s) for s in re.findall(r"ReadFromJson=\d+ (\d+)%", text)]
    assert len(shares) >= 3 and shares == sorted(shares) and shares[0] < 100
    assert shares[-1] == 100
    assert re.search(r"ReadFromJson=\d+ \d+% ETA \d+:\d\d Slowly=", text)
    assert all(len(line) <= 200 for line in lines(text))


def test_a_bounded_kafka_read_shows_its_share_and_an_unbounded_one_none(kafka_broker, tmp_path):
    topic = new_topic(kafka_broker, "progress", 2)
    produce(kafka_broker, topic, [{"value": {"i": i}, "partition": i % 2} for i in range(3000)])
    script = tmp_path / "p.py"
    script.write_text(KAFKA_SCRIPT)
    bounded = on_a_terminal(str(script), kafka_broker, topic, "latest")
    read, share = map(int, re.search(r"ReadFromKafka=(\d+) (\d+)%", bounded).groups())
    assert share == 100 * read // 3000   # its offsets, as no transaction marks take any
    unbounded = on_a_terminal(str(script), kafka_broker, topic, "", stop_at=b"ReadFromKafka=")
    assert re.search(r"ReadFromKafka=\d+ Map", unbounded)
    assert "%" not in unbounded and "ETA" not in unbounded
    assert re.search(r"pomset: stopped on SIGTERM; the input was (not )?caught up.*; committed "
                     r"epoch", unbounded), unbounded


def test_the_share_and_the_time_left_from_the_rate_read_since_first_seen(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    stream = io.StringIO()
    line = ProgressLine(quiet=False, stream=stream, interval=0, force=True)
    metrics = {"Read": {"read": 0}, "Count": {"received": 0}}
    line.draw(metrics, reads={"Read": (0, 1000)})
    now[0] += 1
    line.draw(metrics, reads={"Read": (100, 1000)})   # first seen reading: no rate yet
    now[0] += 2
    line.draw(metrics, reads={"Read": (300, 1000)})   # 100 a second: 700 left take 7 s
    now[0] += 1
    line.draw(metrics, reads={"Read": (1000, 1000)})
    drawn = lines(stream.getvalue())
    assert [re.search(r"Read=0 (.*) Count", d).group(1) for d in drawn[1:]] == [
        "0%", "10%", "30% ETA 0:07", "100%"]
    line.draw(metrics, reads={})
    assert "%" not in lines(stream.getvalue())[-1]
    assert [clock(s) for s in (0, 12.4, 75, 3600 * 2 + 61)] == ["0:00", "0:12", "1:15", "2:01:01"]
