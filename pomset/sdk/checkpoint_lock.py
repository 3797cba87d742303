"""The lock a run holds on its checkpoint directory (`pomset.lock`, the owner's pid and host),
so that a second copy of the pipeline on the same directory is refused at start rather than
fencing the first one's transactions later. It is an `fcntl.flock`, which the OS releases when
the process exits, however it exits (SIGKILL too). The lock's file also tells a running run
that its directory was deleted or replaced under it."""
from __future__ import annotations

import fcntl
import os
import socket
from contextlib import contextmanager
from typing import Iterator, Optional, Set

from .errors import CheckpointError

FILE = "pomset.lock"
#: the descriptors of the locks this process holds: a forked child (a local worker process)
#: closes its copies, so that the lock lasts as long as its owner, not its children
_HELD: Set[int] = set()


def _close_in_child() -> None:
    for fd in _HELD:
        os.close(fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_close_in_child)


class CheckpointLock:
    """Holds `directory`'s lock from construction until `release()`; `CheckpointError` naming
    the directory and the process holding it when another process (or another run in this
    one) holds it."""

    def __init__(self, directory: str) -> None:
        self.directory = os.path.abspath(directory)
        self.path = os.path.join(self.directory, FILE)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with os.fdopen(fd) as f:
                owner = f.read().strip() or "another process"
            raise CheckpointError(
                f"checkpoint directory {self.directory} is in use by {owner} (it holds "
                f"{self.path}): another run of this pipeline is running on it. Stop that run, "
                f"or give this one another --checkpoint_dir") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"process {os.getpid()} on host {socket.gethostname()}\n".encode())
        os.fsync(fd)
        self.fd: Optional[int] = fd
        self.owner = os.getpid()
        _HELD.add(fd)
        held = os.fstat(fd)
        self.identity = (held.st_dev, held.st_ino)

    def verify(self) -> None:
        """`CheckpointError` when the directory or its lock file is gone or another file now
        (the directory was deleted, or replaced, while the run was running)."""
        lost = self.lost()
        if lost is not None:
            raise lost

    def lost(self) -> Optional[CheckpointError]:
        """The `CheckpointError` `verify` raises, or None while the directory is the run's:
        what a failure met meanwhile is reported as when it is not."""
        try:
            now: Optional[os.stat_result] = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):   # gone, or a file in its place
            now = None
        if now is not None and (now.st_dev, now.st_ino) == self.identity:
            return None
        return CheckpointError(
            f"checkpoint directory {self.directory} was deleted or replaced while the run was "
            f"running (its lock {self.path} is {'gone' if now is None else 'another file'}): "
            f"the run stops without committing more; restore the directory from a backup and "
            f"restart, or see --on_lost_checkpoint (docs/fault-tolerance.md)")

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Around a change to the directory: `verify` first, and a `FileNotFoundError` from a
        directory deleted meanwhile raised as `verify`'s `CheckpointError`."""
        self.verify()
        try:
            yield
        except (FileNotFoundError, NotADirectoryError):
            self.verify()
            raise

    def release(self) -> None:
        """Let another run take the directory (idempotent; a forked child holds nothing)."""
        if self.fd is not None and os.getpid() == self.owner:
            _HELD.discard(self.fd)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
