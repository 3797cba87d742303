"""An embedded Kafka-protocol broker for tests, demos and trying pomset without a cluster.

It runs `noida-db` (from PyPI) with only its Kafka service and a fresh data directory, behind
`broker_front` (which holds empty fetches back as a Kafka broker does, so that idle consumers
wait instead of spinning, and cuts a fetch's answer to the request's limits, which noida-db
ignores) on a free loopback port, both in a process group of their own.
Everything else in pomset talks plain Kafka to whatever `bootstrap_servers` it is given; a real
cluster works the same way."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Optional

STATE_FILE = os.path.join(os.path.expanduser("~"), ".cache", "pomset", "kafka.json")
FRONT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "broker_front.py")


class BrokerError(RuntimeError):
    """The embedded broker could not be started or found."""


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    """Whether something already listens on (or holds) this loopback port."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _executable() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "noida-db")
    found = beside if os.path.exists(beside) else shutil.which("noida-db")
    if not found:
        raise BrokerError("the embedded Kafka broker needs noida-db: pip install 'pomset[kafka]'")
    return found


class EmbeddedKafka:
    """One broker process: `start()` returns its bootstrap servers, `stop()` ends it and
    removes its data directory when it made that directory itself."""

    def __init__(self, port: Optional[int] = None, data_dir: Optional[str] = None) -> None:
        self.port = port or free_port()
        self.own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="pomset-kafka-")
        self.process: Optional[subprocess.Popen] = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> str:
        log = open(os.path.join(self.data_dir, "broker.log"), "wb")
        self.process = subprocess.Popen(
            [sys.executable, FRONT, "--port", str(self.port), "--broker-port", str(free_port()),
             "--noida", _executable(), "--data-dir", os.path.join(self.data_dir, "data")],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        log.close()
        wait_until_serving(self.bootstrap_servers, timeout, self.process, self.data_dir)
        return self.bootstrap_servers

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process.pid, graceful=not self.own_dir)
            self.process.wait()
            self.process = None
        if self.own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "EmbeddedKafka":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_until_serving(bootstrap: str, timeout: float, process: Optional[subprocess.Popen] = None,
                       data_dir: str = "") -> None:
    """Return once a Kafka client gets the broker's metadata; a clear error otherwise."""
    from confluent_kafka.admin import AdminClient
    deadline = time.monotonic() + timeout
    host, port = bootstrap.rsplit(":", 1)
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise BrokerError(f"the embedded Kafka broker exited with {process.returncode}: "
                              f"{_log_tail(data_dir)}")
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
            return
        except Exception:
            time.sleep(0.1)
    raise BrokerError(f"no Kafka broker answered at {bootstrap} within {timeout:.0f}s "
                      f"{_log_tail(data_dir)}")


def _log_tail(data_dir: str) -> str:
    path = os.path.join(data_dir, "broker.log")
    if not data_dir or not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        return f.read()[-2000:]


def stop_process(pid: int, graceful: bool = True) -> None:
    """Stop a broker's process group and return once all of it is gone: SIGTERM (the broker
    saves its data), then SIGKILL if it lingers; SIGKILL at once when not `graceful` (its data
    is about to be removed). The broker runs under the front, the group's leader, and may
    still be saving after the leader exits: a data directory removed then would be made again."""
    try:
        os.killpg(pid, signal.SIGTERM if graceful else signal.SIGKILL)
    except ProcessLookupError:
        return
    if not _group_gone(pid, 10.0):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        _group_gone(pid, 10.0)


def _group_gone(pid: int, timeout: float) -> bool:
    """Wait until no process of group `pid` is left (reaping its leader when it is ours)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def up(port: Optional[int] = None, state_file: str = STATE_FILE) -> str:
    """Start a broker in the background for `pomset kafka down` to stop; its bootstrap servers.
    With `port`, on that port or a BrokerError saying why not."""
    running = status(state_file)
    if running:
        if port is not None and running != f"127.0.0.1:{port}":
            raise BrokerError(f"a broker started by `pomset kafka up` already runs at "
                              f"{running}, not on port {port}; `pomset kafka down` stops it")
        return running
    if port is not None and not 0 < port < 65536:
        raise BrokerError(f"port {port} is not a TCP port (1 to 65535)")
    if port is not None and port_in_use(port):
        raise BrokerError(f"port {port} is in use by another process on 127.0.0.1; choose "
                          f"another --port, or leave it out for a free one")
    broker = EmbeddedKafka(port)
    broker.start()
    os.makedirs(os.path.dirname(state_file), exist_ok=True)
    with open(state_file, "w") as f:
        json.dump({"pid": broker.process.pid, "bootstrap_servers": broker.bootstrap_servers,
                   "data_dir": broker.data_dir}, f)
    return broker.bootstrap_servers


def status(state_file: str = STATE_FILE) -> Optional[str]:
    """The bootstrap servers of the broker `up` started, if it still runs."""
    if not os.path.exists(state_file):
        return None
    with open(state_file) as f:
        state = json.load(f)
    try:
        os.kill(state["pid"], 0)
    except ProcessLookupError:
        return None
    return state["bootstrap_servers"]


def down(state_file: str = STATE_FILE) -> bool:
    """Stop the broker `up` started and delete its data; whether one was running."""
    if not os.path.exists(state_file):
        return False
    with open(state_file) as f:
        state = json.load(f)
    stop_process(state["pid"])
    shutil.rmtree(state["data_dir"], ignore_errors=True)
    os.remove(state_file)
    return True
