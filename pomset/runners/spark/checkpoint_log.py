"""Spark's own checkpoint logs (`metadata`, `offsets/N`, `commits/N`) checked before a query
resumes from them, so that a damaged file is an error naming it rather than a parse error deep
in Spark, and so that what Spark resumes agrees with the output Kafka holds.

Where it is safe, the checkpoint is repaired by setting files aside (renamed `N.set-aside`,
which Spark does not read), with a warning naming them:
- a damaged newest `commits/N`: Spark runs micro-batch N again from its recorded offsets,
  computing what it computed before (its Kafka output, already committed, is not repeated);
- a damaged newest `offsets/N` whose micro-batch never completed nor reached Kafka: Spark plans
  micro-batch N afresh;
- micro-batches after the one whose mark Kafka holds (a broker that lost acknowledged writes):
  Spark runs them again, so their output reaches Kafka once.
Anything else damaged is a `CheckpointError` saying what to do."""
from __future__ import annotations

import json
import os
import warnings
from typing import Dict, List, Optional

from ...sdk.errors import CheckpointError, CheckpointWarning

_AFRESH = "restore it from a backup, or start afresh with a new --checkpoint_dir"


def _batches(directory: str) -> Dict[int, str]:
    """Batch id -> path, for the log files Spark reads in `directory` (names that are numbers)."""
    if not os.path.isdir(directory):
        return {}
    return {int(name): os.path.join(directory, name) for name in os.listdir(directory)
            if name.isdigit()}


def _damage(path: str, versioned: bool) -> Optional[str]:
    """What is wrong with one log file (None when it parses): a version line ("v1") then JSON
    lines for the logs, one JSON object for `metadata`."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if versioned:
            if not lines[0].startswith("v") or not lines[0][1:].isdigit():
                return f"its first line {lines[0][:40]!r} is not a log version"
            lines = lines[1:]
        body = [line for line in lines if line.strip()]
        if not body:
            return "it is empty"
        for line in body:
            json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return f"it does not parse ({type(e).__name__}: {e})"
    return None


def _set_aside(path: str) -> None:
    os.replace(path, f"{path}.set-aside")
    crc = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.crc")
    if os.path.exists(crc):
        os.remove(crc)


def check_checkpoint(directory: str, kafka_mark: Optional[int]) -> List[int]:
    """Check (and where safe repair, see the module docstring) the Spark checkpoint in
    `directory` before a query resumes from it; `kafka_mark` is the last micro-batch whose
    output Kafka holds (-1 when none, None when the query writes nothing to Kafka). Returns the
    micro-batches set aside, whose file parts the query writes again."""
    redo: List[int] = []
    metadata = os.path.join(directory, "metadata")
    if os.path.exists(metadata):
        problem = _damage(metadata, versioned=False)
        if problem:
            raise CheckpointError(f"Spark checkpoint file {metadata} is damaged: {problem}; "
                                  f"{_AFRESH}")
    offsets = _batches(os.path.join(directory, "offsets"))
    commits = _batches(os.path.join(directory, "commits"))
    if commits:
        newest = max(commits)
        problem = _damage(commits[newest], versioned=True)
        if problem:
            if newest not in offsets:
                raise CheckpointError(f"Spark checkpoint file {commits[newest]} is damaged: "
                                      f"{problem}, and its micro-batch has no offsets; {_AFRESH}")
            path = commits.pop(newest)
            _set_aside(path)
            redo.append(newest)
            warnings.warn(f"Spark checkpoint file {path} was damaged ({problem}): set aside; "
                          f"micro-batch {newest} runs again", CheckpointWarning, stacklevel=2)
    if kafka_mark is not None and commits and max(commits) > kafka_mark:
        completed = max(commits)
        lost = sorted(b for b in set(offsets) | set(commits) if b > kafka_mark)
        redo += lost
        for b in lost:
            for log in (offsets, commits):
                if b in log:
                    _set_aside(log.pop(b))
        warnings.warn(f"Kafka holds the output of micro-batches up to {kafka_mark}, but Spark's "
                      f"checkpoint in {directory} had completed up to {completed} (the broker "
                      f"lost writes it had acknowledged): micro-batches {lost[0]}..{lost[-1]} "
                      f"run again", CheckpointWarning, stacklevel=2)
    if offsets:
        newest = max(offsets)
        problem = _damage(offsets[newest], versioned=True)
        reached_kafka = kafka_mark is not None and kafka_mark >= newest
        if problem and (newest in commits or reached_kafka):
            raise CheckpointError(
                f"Spark checkpoint file {offsets[newest]} is damaged: {problem}; micro-batch "
                f"{newest} completed, so planning it again could read other offsets; {_AFRESH}")
        if problem:
            _set_aside(offsets[newest])
            redo.append(newest)
            warnings.warn(f"Spark checkpoint file {offsets[newest]} was damaged ({problem}): "
                          f"set aside; micro-batch {newest}, which never completed, is planned "
                          f"again", CheckpointWarning, stacklevel=2)
    return sorted(set(redo))
