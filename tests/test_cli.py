"""The `pomset` command as a user types it: `pomset --version`; `pomset run SCRIPT [flags]`,
which runs a pipeline script with its flags as `python SCRIPT flags` would; `pomset kafka up
--port N`, which uses that port or says why not."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

import pomset

POMSET = [sys.executable, "-m", "pomset.cli"]

SCRIPT = """
import pomset as pm
import helper                      # a module beside the script, as python finds it

with pm.Pipeline() as p:
    out = p | pm.Create([1, 2, 3]) | pm.Map(helper.double)
print(sorted(wv.value for wv in p.result.collect(out)), p.options.runner, p.options.workers,
      __name__)
"""


def test_version():
    run = subprocess.run([*POMSET, "--version"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == f"pomset {pomset.__version__}"


def test_run_gives_the_script_its_flags(tmp_path):
    (tmp_path / "p.py").write_text(SCRIPT)
    (tmp_path / "helper.py").write_text("def double(x):\n    return 2 * x\n")
    run = subprocess.run([*POMSET, "run", str(tmp_path / "p.py"), "--quiet", "--workers=2"],
                         capture_output=True, text=True, timeout=120, cwd=os.getcwd())
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[2, 4, 6] local 2 __main__"
    bad = subprocess.run([*POMSET, "run", str(tmp_path / "p.py"), "--workers=many"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("p.py: error: argument --workers/--direct_num_workers: "
                                  "--workers takes a whole number, got 'many'")
    typo = subprocess.run([*POMSET, "run", str(tmp_path / "p.py"), "--runer=spark", "--quiet"],
                          capture_output=True, text=True, timeout=120)
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr.strip() == ("p.py: error: --runer is not a pipeline option; did you "
                                   "mean --runner?")
    missing = subprocess.run([*POMSET, "run", str(tmp_path / "nope.py")], capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_kafka_up_on_a_port_uses_it_or_says_why_not(tmp_path):
    from pomset import broker
    state = str(tmp_path / "broker.json")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(broker.BrokerError, match=f"port {port} is in use by another "
                                                     f"process"):
            broker.up(port, state)
    with pytest.raises(broker.BrokerError, match="not a TCP port"):
        broker.up(70000, state)
    port = broker.free_port()
    try:
        assert broker.up(port, state) == f"127.0.0.1:{port}"
        assert broker.up(port, state) == f"127.0.0.1:{port}"      # already up: the same
        with pytest.raises(broker.BrokerError, match=f"already runs at 127.0.0.1:{port}, "
                                                     f"not on port {port + 1}"):
            broker.up(port + 1, state)
    finally:
        broker.down(state)


def test_an_unreachable_broker_is_one_line_naming_the_servers(tmp_path):
    """No librdkafka lines on the terminal, and `pomset run` says it in one line."""
    from pomset import broker
    port = broker.free_port()
    (tmp_path / "k.py").write_text(
        "import pomset as pm\n"
        "with pm.Pipeline() as p:\n"
        f"    p | pm.ReadFromKafka('127.0.0.1:{port}', 'events', until='latest',\n"
        "                         connect_timeout=3)\n")
    run = subprocess.run([*POMSET, "run", str(tmp_path / "k.py"), "--quiet"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    [line] = run.stderr.strip().splitlines()
    assert line.startswith(f"k.py: KafkaUnreachableError: ReadFromKafka: no Kafka broker "
                           f"answered at 127.0.0.1:{port} (")
    assert "waited at most 3 s, connect_timeout= sets how long); is it running?" in line
    plain = subprocess.run([sys.executable, str(tmp_path / "k.py"), "--quiet"],
                           capture_output=True, text=True, timeout=120)
    assert plain.returncode == 1 and "%3|" not in plain.stderr and "rdkafka" not in plain.stderr
    assert plain.stderr.strip().splitlines()[-1].startswith(
        "pomset.sdk.errors.KafkaUnreachableError: ReadFromKafka: no Kafka broker answered")
