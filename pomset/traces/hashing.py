"""A hash of keys that is the same in every process, for splitting keyed items among parallel
instances (the HASH connector, keyed deployments)."""
from __future__ import annotations

import pickle
import zlib
from typing import Any


def stable_hash(key: Any) -> int:
    """A hash of a key that is the same in every process (Python's str hash is not)."""
    if type(key) is int:
        return key & 0x7FFFFFFF
    if type(key) is str:
        return zlib.crc32(key.encode("utf-8", "surrogatepass"))
    if type(key) is bytes:
        return zlib.crc32(key)
    if type(key) is tuple:
        h = 0x345678
        for part in key:
            h = (h * 1000003) ^ stable_hash(part)
        return h & 0x7FFFFFFF
    if key is None:
        return 0
    return zlib.crc32(pickle.dumps(key, protocol=4))
