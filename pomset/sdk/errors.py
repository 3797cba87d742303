"""Errors a pipeline author sees."""
from __future__ import annotations


class PipelineConstructionError(ValueError):
    """The pipeline cannot run as written; raised while it is being built."""


class UserCodeError(RuntimeError):
    """A user function raised while processing an element; the run failed."""


class CorruptInputError(RuntimeError):
    """An input file cannot be read at all (a damaged or truncated Parquet file, compressed or
    binary data where text is expected, one JSON document where JSON lines are): bad input,
    not user code. The message names the source, the file and, where known, the offset or
    line; with `.with_exception_handling()` the file is one dead letter instead."""


class MemoryLimitError(MemoryError):
    """A grouping's state for one key alone outgrew `--memory_limit`, so spilling its keys to
    disk by partition cannot bring it under; the message names the step, the key, its size
    and the budget."""


class OptionsError(ValueError):
    """A command-line flag or pipeline option is unknown or invalid."""


class OptionsWarning(UserWarning):
    """Flags on the program's command line that are not pipeline options were passed over
    (the program may have flags of its own); the message names them."""


class CheckpointError(RuntimeError):
    """A checkpoint cannot be used: damaged, of another pipeline, or out of step with the
    output it belongs to. The message names the file or step and what to do."""


class CheckpointWarning(UserWarning):
    """A damaged checkpoint was passed over for an older one that can be resumed safely."""


class DataLossError(RuntimeError):
    """A source's data was deleted (Kafka retention) before the run read it, and
    `--on_data_loss=fail` says to stop rather than go on without it; the message names the
    topic, partition and offsets."""


class LateDataWarning(UserWarning):
    """A run dropped elements that came too late: behind the watermark by more than their
    window's allowed lateness (a grouping), or behind the step's watermark (an O+ step). The
    message names the step, the count and its share of what the step received; the count is
    also in `result.metrics()`."""


class KafkaUnreachableError(ConnectionError):
    """No Kafka broker answered at a source's bootstrap servers within its `connect_timeout`;
    the message names the servers and the wait."""


class KafkaStallWarning(UserWarning):
    """A Kafka broker has not answered for `--kafka_stall_warning` seconds (stopped, frozen or
    cut off without closing its connections), or answers again after such a silence; the
    message names its bootstrap servers and how long."""


class BacklogWarning(UserWarning):
    """A streaming source's backlog (Kafka lag, files waiting) has grown for
    `--backlog_warning` seconds: the run reads slower than its input arrives; the message
    names the source and its backlog then and now."""


class TimeUnitWarning(UserWarning):
    """A source's event times look like numbers of another unit than its `timestamp_unit`
    (milliseconds read as seconds, say); the message names the field, the value and the unit
    to pass."""


class DataLossWarning(UserWarning):
    """A source's data was deleted (Kafka retention) before the run read it; the run went on
    from the earliest data left (`--on_data_loss=warn`, the default). Filter it with the
    `warnings` module, or make it an error there."""
