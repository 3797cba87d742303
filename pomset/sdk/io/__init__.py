"""IO: bounded file sources and sinks for text, Parquet, JSON lines and CSV (pyarrow underneath),
and Kafka (`kafka`, on confluent-kafka).

Sources take a glob pattern (a pattern matching no files is an error when the pipeline is
built) and, except text, an optional `timestamp_field` giving event time. Malformed records
fail the run with `file:line: what was wrong`, or go to a dead-letter output when the source is
configured with `.with_exception_handling(dead_letter_tag="bad")`. Sinks write one file
`{path_prefix}-00000-of-00001{file_name_suffix}` (the suffix defaults to the format's
extension: `.parquet`, `.jsonl`, `.csv`, none for text), with window, pane and diff columns when
their input is windowed or may carry retractions.
"""
from .base import (EXTRA_NAMES, DeadLetterSource, FileSink, FileSource, NoMatchingFilesError,
                   event_time_micros)
from .csvio import ReadFromCsv, WriteToCsv
from .jsonio import ReadFromJson, WriteToJson
from .kafka import DIFF_HEADER, ReadFromKafka, WriteToKafka
from .parquetio import ReadFromParquet, WriteToParquet
from .textio import ReadFromText, WriteToText

__all__ = [
    "ReadFromCsv", "ReadFromJson", "ReadFromParquet", "ReadFromText",
    "WriteToCsv", "WriteToJson", "WriteToParquet", "WriteToText",
    "ReadFromKafka", "WriteToKafka", "DIFF_HEADER", "DeadLetterSource",
    "FileSink", "FileSource", "NoMatchingFilesError", "EXTRA_NAMES", "event_time_micros",
]
