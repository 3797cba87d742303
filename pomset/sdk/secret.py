"""Beam's `Secret` and `GroupByEncryptedKey`: a GroupByKey whose keys and values cross the
shuffle encrypted (Fernet, with an HMAC of the key as the grouping key), for pipelines whose
keys must not be visible to the runner's shuffle."""
from __future__ import annotations

import hashlib
import hmac
from typing import Any, Iterable, Iterator, Tuple

from .core import GroupByKey, ParDo
from .dofn import DoFn
from .ptransform import PTransform
from .pvalue import PCollection


class Secret:
    """A secret's bytes, as a Fernet key: subclasses say where they come from."""

    def get_secret_bytes(self) -> bytes:
        """The secret (a url-safe base64 32-byte key)."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_secret_bytes")

    @staticmethod
    def generate_secret_bytes() -> bytes:
        """A fresh random secret, usable as a Fernet key."""
        from cryptography.fernet import Fernet
        return Fernet.generate_key()


def _codec(coder: Any) -> Any:
    from ..coders import PickleCoder
    return coder if coder is not None else PickleCoder()


class EncryptMessage(DoFn):
    """(key, value) -> (hmac(key), (encrypted key, encrypted value))."""

    def __init__(self, hmac_key_secret: Secret, key_coder: Any, value_coder: Any) -> None:
        self.hmac_key_secret = hmac_key_secret
        self.key_coder = _codec(key_coder)
        self.value_coder = _codec(value_coder)

    def setup(self) -> None:
        from cryptography.fernet import Fernet
        self.hmac_key = self.hmac_key_secret.get_secret_bytes()
        self.fernet = Fernet(self.hmac_key)

    def process(self, element: Tuple[Any, Any]) -> Iterator[Any]:
        key, value = element
        encoded_key = self.key_coder.encode(key)
        digest = hmac.new(self.hmac_key, encoded_key, hashlib.sha256).digest()
        yield digest, (self.fernet.encrypt(encoded_key),
                       self.fernet.encrypt(self.value_coder.encode(value)))


class DecryptMessage(DoFn):
    """(hmac(key), [(encrypted key, encrypted value)...]) -> (key, [value...])."""

    def __init__(self, hmac_key_secret: Secret, key_coder: Any, value_coder: Any) -> None:
        self.hmac_key_secret = hmac_key_secret
        self.key_coder = _codec(key_coder)
        self.value_coder = _codec(value_coder)

    def setup(self) -> None:
        from cryptography.fernet import Fernet
        self.fernet = Fernet(self.hmac_key_secret.get_secret_bytes())

    def process(self, element: Tuple[bytes, Iterable[Tuple[bytes, bytes]]]) -> Iterator[Any]:
        _, pairs = element
        pairs = list(pairs)
        key = self.key_coder.decode(self.fernet.decrypt(pairs[0][0]))
        yield key, [self.value_coder.decode(self.fernet.decrypt(v)) for _, v in pairs]


class GroupByEncryptedKey(PTransform):
    """Beam's `GroupByEncryptedKey(secret)`: GroupByKey's answer, with keys and values
    encrypted by `secret` while they are shuffled."""

    def __init__(self, hmac_key: Secret, label: Any = None) -> None:
        super().__init__(label)
        self.hmac_key = hmac_key

    def expand(self, pcoll: PCollection) -> PCollection:
        grouped = (pcoll | "Encrypt" >> ParDo(EncryptMessage(self.hmac_key, None, None))
                   | "GroupByKey" >> GroupByKey())
        return grouped | "Decrypt" >> ParDo(DecryptMessage(self.hmac_key, None, None))
