"""Files a run must be able to trust after a crash: written atomically (a temporary file,
fsynced, then renamed over the old one, and the directory fsynced), and, for checkpoints,
verified on reading by a checksum, so a damaged file is an error naming it, never wrong state."""
from __future__ import annotations

import errno
import hashlib
import os

from .errors import CheckpointError

_MAGIC = b"POMSET-CHECKPOINT-1\n"
_DIGEST = 32
#: the errors of a file system with no room left: full, over a quota, over a size limit
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` with `data`: a crash leaves the old file or the new one, never a mix. A
    write that fails (a full disk) removes its temporary file and is a `CheckpointError` naming
    the directory, the file and the reason, so that the run, started again once the cause is
    fixed, resumes from the files written before."""
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise CheckpointError(_write_failed(path, e)) from e
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_failed(path: str, e: OSError) -> str:
    directory, name = os.path.split(os.path.abspath(path))
    reason = e.strerror or str(e)
    code = errno.errorcode.get(e.errno or 0)
    if code:
        reason = f"{reason} ({code})"
    what = f"cannot write {name} in the checkpoint directory {directory}: {reason}"
    if e.errno in _NO_ROOM:
        return (f"{what}. The files written before are intact: free space there and start the "
                f"run again, and it resumes from its last checkpoint")
    return f"{what}; the files written before are intact"


def write_checked(path: str, payload: bytes) -> None:
    """Write `payload` atomically behind a header and its SHA-256 (read back by `read_checked`)."""
    write_atomic(path, _MAGIC + hashlib.sha256(payload).digest() + payload)


def read_checked(path: str) -> bytes:
    """The payload `write_checked` wrote to `path`; `CheckpointError` naming the file when it is
    missing its header, truncated or changed since."""
    with open(path, "rb") as f:
        data = f.read()
    head = len(_MAGIC) + _DIGEST
    if not data.startswith(_MAGIC) or len(data) < head:
        raise CheckpointError(f"checkpoint file {path} is damaged or not a pomset checkpoint "
                              f"({len(data)} bytes, no valid header)")
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(_MAGIC):head]:
        raise CheckpointError(f"checkpoint file {path} is damaged: its checksum does not match "
                              f"its {len(payload)} bytes of content (truncated or overwritten)")
    return payload
