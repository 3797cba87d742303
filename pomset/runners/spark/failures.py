"""Failures of Spark jobs, in the user's terms rather than the JVM's."""
from __future__ import annotations

import errno
import os
import re
from contextlib import contextmanager
from typing import Iterator, Optional
from urllib.parse import unquote, urlparse

from ...sdk.checkpoint_lock import CheckpointLock
from ...sdk.errors import CheckpointError, CorruptInputError, DataLossError, UserCodeError

#: The errors a task (or the query's foreachBatch) raises that reach the user as themselves.
_PASSED_ON = {"UserCodeError": UserCodeError, "DataLossError": DataLossError,
              "CheckpointError": CheckpointError, "CorruptInputError": CorruptInputError}


@contextmanager
def user_errors(checkpoint: Optional[str] = None,
                lock: Optional[CheckpointLock] = None) -> Iterator[None]:
    """Re-raise a failure in a Spark job in the user's terms (`_in_user_terms`). When the
    query's checkpoint directory, held by `lock`, was deleted or replaced meanwhile, that is
    the failure, however Spark met it (in a task, in the query's foreachBatch, writing its
    own logs): the lock's `CheckpointError` naming the directory, caused by what Spark met."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException
    try:
        yield
    except (PySparkException, Py4JJavaError) as exc:
        failure = _in_user_terms(str(exc), checkpoint)
        lost = lock.lost() if lock is not None else None
        if lost is None or (isinstance(failure, CheckpointError)
                            and str(failure) == str(lost)):
            raise failure from None
        raise lost from failure


def _in_user_terms(text: str, checkpoint: Optional[str]) -> Exception:
    """A Spark failure (its text) as what it was in the user's terms: a `UserCodeError` (or
    `CorruptInputError`, `DataLossError`, or a `CheckpointError` from the query's
    foreachBatch) raised in a task keeps its message (transform, element, traceback); a file
    Spark's own reader cannot read is a `CorruptInputError` naming it; a full disk where a
    query's `checkpoint` directory is is a `CheckpointError` naming it; anything else names
    the Python worker's own error, never the JVM's stack."""
    m = re.search(rf"pomset\.sdk\.errors\.({'|'.join(_PASSED_ON)}): (.*)", text, re.S)
    if m:
        return _PASSED_ON[m.group(1)](_strip_jvm(m.group(2)))
    unread = re.search(r"\[FAILED_READ_FILE[.\w]*\] Encountered error while reading file "
                       r"(\S+?)\.?\s", text)
    if unread:
        return CorruptInputError(_unread_file(unread.group(1), text))
    if checkpoint is not None and os.strerror(errno.ENOSPC) in text and _full(checkpoint):
        return CheckpointError(
            f"Spark could not write to the checkpoint directory {checkpoint}: "
            f"{os.strerror(errno.ENOSPC)} (ENOSPC). What it wrote before is intact: free "
            f"space there and start the run again, and it resumes from its last "
            f"micro-batch")
    cause = _cause(text)
    if cause.startswith("ModuleNotFoundError"):
        cause += (" (in the executors' Python: ship what the tasks import with "
                  "--spark_ship=all, the default, or install it on the workers)")
    return SparkJobError(f"a Spark job failed: {cause}")


def _unread_file(uri: str, text: str) -> str:
    """What a file Spark itself could not read (its Parquet reader's) names: the file, as a
    path where it is local, and the innermost cause Spark gives."""
    path = unquote(urlparse(uri).path) if uri.startswith("file:") else uri
    causes = re.findall(r"^Caused by: (?:[\w.$]+\.)?(\w+: .*)$", text, re.M)
    return (f"Spark could not read {path}: it is damaged or not Parquet"
            + (f" ({causes[-1].strip()})" if causes else ""))


def _full(directory: str) -> bool:
    """Whether the file system of `directory` has (next to) no space left: under 1 MiB (not
    when the directory is gone)."""
    try:
        stat = os.statvfs(directory)
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < 1 << 20


class SparkJobError(RuntimeError):
    """Spark itself failed a job (lost executors or results, out of memory), not user code."""


def _cause(text: str) -> str:
    """The line of a Spark failure that says what went wrong: the Python worker's own
    exception if there is one, else Spark's reason for aborting the job."""
    lines = text.splitlines()
    python = [ln for ln in lines if re.match(r"^\w[\w.]*(Error|Exception): ", ln)
              and not ln.startswith(("org.apache", "py4j", "java."))]
    if python:
        return python[-1]
    m = re.search(r"(Job aborted due to stage failure: .*?)(?:\n|$)", text)
    return m.group(1) if m else lines[0]


def _strip_jvm(text: str) -> str:
    """The Python part of a task failure's message, without what Spark appends: JVM frames,
    SQL states, a streaming query's description and plan."""
    cut = re.search(r"\n\s*(at |\tat |JVM stacktrace:|=== Streaming Query ===)| SQLSTATE: ", text)
    return (text[:cut.start()] if cut else text).rstrip()
