"""Files a run must be able to trust after a crash: written atomically (a temporary file,
fsynced, then renamed over the old one, and the directory fsynced), and, for checkpoints,
verified on reading by a checksum, so a damaged file is an error naming it, never wrong state."""
from __future__ import annotations

import hashlib
import os

from .errors import CheckpointError

_MAGIC = b"POMSET-CHECKPOINT-1\n"
_DIGEST = 32


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` with `data`: a crash leaves the old file or the new one, never a mix."""
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
