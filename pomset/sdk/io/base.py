"""What every file source and sink shares.

Sources (`FileSource`): a glob pattern expanded to files in name order, event time from a
record field or the minimum timestamp, and malformed records handed to the runner's `on_bad`
as `DeadLetter`s (the run fails on them unless the source was configured with
`.with_exception_handling()`, which adds a dead-letter output).

Sinks (`FileSink`): one file `{path_prefix}-00000-of-00001{file_name_suffix}` (by default the
format's extension: `FileSink.default_suffix`), written to a
temporary name beside it and renamed into place when the run ends (Spark batch writes
schema'd Parquet output natively as shards `-SSSSS-of-NNNNN`: `FileSink.output_files`). Elements become rows:
a dict gives its fields as columns, a (key, value) pair the columns `key` and `value`, anything
else the column `value`. Input that is windowed or may carry retractions also gets the columns
`window_start`, `window_end` (seconds, null for the global window), `timestamp` (seconds),
`pane_timing`, `pane_index` and `diff`, so downstream systems can tell panes apart and apply
retractions; Parquet sinks write the three times as timestamps (`parquetio`)."""
from __future__ import annotations

import copy
import datetime as _dt
import decimal
import enum
import glob
import json
import math
import os
import re
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ...triggers import AccumulationMode
from ...windowing.beam_keywords import beam_keywords
from ...windowing import (GLOBAL_WINDOW, MIN_MICROS, NO_FIRING, GlobalWindow,
                          GlobalWindows, Timestamp, WindowedValue)
from ..core import Source
from ..dofn import DeadLetter
from ..errors import CorruptInputError, PipelineConstructionError, UserCodeError
from ..event_time import event_time_micros, time_unit, warn_other_unit
from ..kinds import NOT_KV
from ..ptransform import Primitive
from .. import plan_kinds
from ..pvalue import DoOutputsTuple, PCollection
from ..schema import SchemaLike, as_schema, conform
from .meter import ReadMeter

PathLike = Union[str, "os.PathLike[str]"]
#: `on_bad(letter, corrupt=False)`: a malformed record, or (corrupt) a file not readable at all
OnBad = Callable[..., None]

_raw = WindowedValue.raw


class NoMatchingFilesError(PipelineConstructionError, FileNotFoundError):
    """A read pattern matched no files."""


# --- sources ------------------------------------------------------------------------------------

def expand_pattern(pattern: Union[PathLike, Sequence[PathLike]]) -> List[str]:
    """The files a glob pattern matches (`**` spans directories), sorted by name; a directory
    stands for the files in it and below, except those whose name starts with `_` or `.`
    (Hadoop's and Spark's markers such as `_SUCCESS`); a list of patterns for the union."""
    if isinstance(pattern, (list, tuple)):
        return sorted({f for p in pattern for f in expand_pattern(p)})
    text = os.fspath(pattern)
    if not isinstance(text, str):
        raise TypeError(f"a file pattern must be a str or path, got {pattern!r}")
    text = os.path.expanduser(text)
    if os.path.isdir(text):
        found = []
        for folder, dirs, names in os.walk(text):
            dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
            found += [os.path.join(folder, n) for n in names if not n.startswith(("_", "."))]
        return sorted(found)
    if glob.has_magic(text):
        matches = glob.glob(text, recursive=True)
    else:
        matches = [text] if os.path.exists(text) else []
    return sorted(m for m in matches if os.path.isfile(m))


class DeadLetterSource(Source):
    """A source whose malformed records fail the run, naming them, or (configured with
    `.with_exception_handling()`) go to a dead-letter output as `DeadLetter`s."""

    dead_letter_tag: Optional[str] = None
    main_tag: str = "good"

    def with_exception_handling(self, main_tag: str = "good",
                                dead_letter_tag: str = "bad") -> "DeadLetterSource":
        """Send malformed records to a dead-letter output (as `DeadLetter`s whose `error` says
        where the record was and what was wrong) instead of failing the run; applying the
        source then returns (good, bad) outputs."""
        if not isinstance(dead_letter_tag, str) or not isinstance(main_tag, str):
            raise TypeError("output tags must be strs")
        if main_tag == dead_letter_tag:
            raise ValueError(f"main_tag and dead_letter_tag must differ, both are {main_tag!r}")
        out = copy.copy(self)
        out.main_tag = main_tag
        out.dead_letter_tag = dead_letter_tag
        return out

    def outputs(self, node: Any) -> Dict[Optional[str], PCollection]:
        outs = super().outputs(node)
        if self.dead_letter_tag is not None:
            outs[self.dead_letter_tag] = outs[None].derive(kind=NOT_KV)
        return outs

    def result(self, node: Any) -> Any:
        if self.dead_letter_tag is not None:
            return DoOutputsTuple(self.main_tag, node.outputs)
        return node.outputs[None]

    @property
    def name(self) -> str:
        return self.label or type(self).__name__

    def dead_letters(self, label: str, into: List[WindowedValue]) -> OnBad:
        """The `on_bad` every runner reads with: a malformed record (or, `corrupt`, a file
        that cannot be read at all) becomes an element of the dead-letter output, appended to
        `into`, or without one fails the run naming it (`CorruptInputError` for a file)."""
        tag = self.dead_letter_tag

        def on_bad(letter: DeadLetter, corrupt: bool = False) -> None:
            if tag is None:
                error = CorruptInputError if corrupt else UserCodeError
                raise error(f"{label}: {letter.error}")
            into.append(WindowedValue.raw(letter, MIN_MICROS, GLOBAL_WINDOW, NO_FIRING, 1))
        return on_bad


class FileSource(DeadLetterSource):
    """A bounded source over the files a glob pattern, a directory or a list of them match
    (`expand_pattern`). Subclasses implement
    `read_file(path, on_bad)`, yielding WindowedValues and reporting malformed records with
    `self.bad(...)`, and may report how far into the file they are to `self.meter`."""

    #: the progress of the read under way, where a runner shows it (`meter.ReadMeter`)
    meter: Optional[ReadMeter] = None

    def __init__(self, pattern: PathLike, timestamp_field: Optional[str] = None,
                 label: Optional[str] = None, schema: Optional[SchemaLike] = None,
                 timestamp_unit: str = "s") -> None:
        super().__init__(label)
        self.timestamp_unit = time_unit(timestamp_unit)
        self.unit_checked = False   # whether check_unit ran (the columnar reader asks too)
        patterns = list(pattern) if isinstance(pattern, (list, tuple)) else [pattern]
        if not patterns or not all(isinstance(p, (str, os.PathLike)) for p in patterns):
            raise TypeError(f"{type(self).__name__} takes a file pattern, a directory or a "
                            f"list of them (strs or paths), got {pattern!r}")
        if timestamp_field is not None and not isinstance(timestamp_field, str):
            raise TypeError(f"timestamp_field must be a field name (str), got {timestamp_field!r}")
        self.pattern: Union[str, List[str]] = (
            [os.fspath(p) for p in patterns] if isinstance(pattern, (list, tuple))
            else os.fspath(pattern))
        self.timestamp_field = timestamp_field
        # a declared schema: each record becomes a Row of it, or a malformed record
        self.row_schema = as_schema(schema) if schema is not None else None

    def schema(self) -> Any:
        return self.row_schema

    def kind(self) -> Optional[str]:
        return NOT_KV

    # --- construction -----------------------------------------------------------------------
    def files(self) -> List[str]:
        """The matching files, sorted; a clear error when there are none."""
        files = expand_pattern(self.pattern)
        if not files:
            raise NoMatchingFilesError(
                f"{self.name}: no files match the pattern {self.pattern!r}")
        return files

    def validate(self, node: Any) -> None:
        super().validate(node)
        self.files()

    def read_size(self, path: str) -> int:
        """How much reading `path` is, in the units a reader reports to `meter`: bytes."""
        return os.path.getsize(path)

    # --- reading ----------------------------------------------------------------------------
    def read_file(self, path: str, on_bad: OnBad) -> Iterator[WindowedValue]:
        raise NotImplementedError(f"{type(self).__name__} must implement read_file(path, on_bad)")

    def bad(self, on_bad: OnBad, element: Any, path: str, line: Any, what: str) -> None:
        """Report a malformed record: `line` is its line (or row) number, or a function
        computing it, or None for a whole file."""
        if callable(line):
            line = line()
        where = path if line is None else f"{path}:{line}"
        on_bad(DeadLetter(element, self.name, f"{where}: {what}", ""))

    def unreadable(self, on_bad: OnBad, path: str, what: str) -> None:
        """Report a file that cannot be read at all (damaged, or not of the source's format):
        one dead letter (its path), or without a dead-letter output a `CorruptInputError`."""
        on_bad(DeadLetter(path, self.name, f"{path}: {what}", ""), corrupt=True)

    def check_unit(self, number: Any) -> None:
        """Warn, once per source, when the first event time read looks like a number of
        another unit than `timestamp_unit` (a millisecond epoch read as seconds)."""
        self.unit_checked = True
        warn_other_unit(self.name, self.timestamp_field, number, self.timestamp_unit)

    def element(self, record: Any, on_bad: OnBad, path: str,
                line: Any) -> Optional[WindowedValue]:
        """The element for a parsed record, timestamped from `timestamp_field` if set; None
        (after reporting it) when that field is missing or not a time."""
        field = self.timestamp_field
        ts = MIN_MICROS
        if field is not None:
            if not isinstance(record, dict) or field not in record:
                self.bad(on_bad, record, path, line, f"missing timestamp field {field!r}")
                return None
            try:
                ts = event_time_micros(record[field], self.timestamp_unit)
            except ValueError as e:
                self.bad(on_bad, record, path, line, f"timestamp field {field!r} {e}")
                return None
            if not self.unit_checked:
                self.check_unit(record[field])
        if self.row_schema is not None:
            try:
                record = conform(record, self.row_schema)
            except ValueError as e:
                self.bad(on_bad, record, path, line, f"does not fit the schema: {e}")
                return None
        return _raw(record, ts, GLOBAL_WINDOW, NO_FIRING, 1)


#: bytes a text source looks at for data that is not text (`not_text`)
TEXT_PROBE = 8192
_GZIP_MAGIC = b"\x1f\x8b"


def not_text(path: str) -> Optional[str]:
    """Why the file is not text a line reader can read, or None: gzip-compressed data (pomset
    reads files uncompressed) or a NUL byte (binary data, or UTF-16 text) in its first
    `TEXT_PROBE` bytes, with its offset."""
    with open(path, "rb") as f:
        head = f.read(TEXT_PROBE)
    if head.startswith(_GZIP_MAGIC):
        return ("is gzip-compressed data (bytes 0-1 are gzip's magic number 1f 8b): "
                "decompress it first, pomset reads files uncompressed")
    nul = head.find(b"\0")
    if nul >= 0:
        return (f"is not text: a NUL byte at offset {nul} (binary data, or text in UTF-16; "
                f"text sources read UTF-8)")
    return None


def binary_lines(path: str, meter: Optional[ReadMeter] = None) -> Iterator[Tuple[int, bytes]]:
    """(line number from 1, line without its \\n or \\r\\n) for each line of a file; every
    4096 lines the bytes read so far go to `meter`, if given."""
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if line.endswith(b"\n"):
                line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
            if n == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if meter is not None and not n & 4095:
                meter.at(f.tell())
            yield n, line


# --- sinks --------------------------------------------------------------------------------------

#: The columns a sink adds for windowed or retracting input, with their Arrow type names.
EXTRA_COLUMNS: Tuple[Tuple[str, str], ...] = (
    ("window_start", "float64"), ("window_end", "float64"), ("timestamp", "float64"),
    ("pane_timing", "string"), ("pane_index", "int64"), ("diff", "int64"),
)
EXTRA_NAMES = tuple(name for name, _ in EXTRA_COLUMNS)
#: the extra columns that are times: seconds since the epoch, or exact µs where a sink asks
TIME_COLUMNS = ("window_start", "window_end", "timestamp")


def annotates(pcoll: PCollection) -> bool:
    """Whether a sink writes window, pane and diff columns for this input."""
    s = pcoll.windowing
    return (not isinstance(s.window_fn, GlobalWindows) or bool(pcoll.may_retract)
            or s.accumulation_mode is AccumulationMode.RETRACTING)


class RowMaker:
    """Turns WindowedValues into row dicts for one sink; the times as float seconds, or as
    int µs (exact for every event time) with `micros`."""

    def __init__(self, annotate: bool, sink_name: str, micros: bool = False) -> None:
        self.annotate = annotate
        self.sink_name = sink_name
        self.micros = micros

    def __call__(self, wv: WindowedValue) -> Dict[str, Any]:
        v = wv.value
        if isinstance(v, dict):
            row = {k if isinstance(k, str) else str(k): x for k, x in v.items()}
        elif isinstance(v, tuple) and len(v) == 2:
            row = {"key": v[0], "value": v[1]}
        else:
            row = {"value": v}
        if self.annotate:
            clash = [name for name in EXTRA_NAMES if name in row]
            if clash:
                raise ValueError(
                    f"{self.sink_name}: element {v!r} has field(s) {clash}, which clash with the "
                    f"window/pane columns the sink adds for windowed or retracting input "
                    f"({', '.join(EXTRA_NAMES)}); rename them first")
            row.update(window_fields(wv, self.micros))
        return row


def window_fields(wv: WindowedValue, micros: bool = False) -> Dict[str, Any]:
    """The extra columns for one element: the times in seconds, or in µs with `micros`."""
    w, ts = wv.window, wv.ts
    if isinstance(w, GlobalWindow):
        start = end = None
    else:
        start, end = getattr(w, "start_us", None), w.max_ts + 1
    if not micros:
        start = None if start is None else start / 1_000_000
        end = None if end is None else end / 1_000_000
        ts = ts / 1_000_000
    pane = wv.pane if wv.pane is not None else NO_FIRING
    return {"window_start": start, "window_end": end, "timestamp": ts,
            "pane_timing": pane.timing.value, "pane_index": pane.index, "diff": wv.diff}


_scan_json = json.JSONDecoder().scan_once


def json_loads(text: str) -> Any:
    """`json.loads(text)`, about twice as fast on a text that is one JSON value with nothing
    around it (a record, a line): json.loads's Python layers cost about as much as the C
    scanner's parse of a small object. Any other text goes through json.loads, so that its
    value or its error is json.loads's; a text nested too deeply to parse is a JSONDecodeError
    too."""
    try:
        value, end = _scan_json(text, 0)
    except (StopIteration, ValueError):
        return _loads(text)
    except RecursionError:
        raise _too_deep(text) from None
    return value if end == len(text) else _loads(text)


def _too_deep(text: str) -> json.JSONDecodeError:
    """The error for a JSON text nested deeper than Python's recursion limit lets it be
    parsed: invalid JSON like any other (a malformed record), not a RecursionError."""
    return json.JSONDecodeError("nested too deeply (past Python's recursion limit)", text, 0)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise _too_deep(text) from None


def json_default(o: Any) -> Any:
    """How values JSON has no type for are written (JSON lines and annotated text)."""
    if isinstance(o, (_dt.datetime, _dt.date, _dt.time)):
        return o.isoformat()
    if isinstance(o, Timestamp):
        return float(o)
    if isinstance(o, (set, frozenset)):
        try:
            return sorted(o)
        except TypeError:
            return list(o)
    if isinstance(o, enum.Enum):
        return o.value
    if isinstance(o, DeadLetter):
        return {"element": o.element, "transform": o.transform, "error": o.error}
    if isinstance(o, decimal.Decimal):
        return float(o)
    if isinstance(o, (bytes, bytearray)):
        return bytes(o).decode("utf-8", "backslashreplace")
    if hasattr(o, "tolist"):  # numpy scalars and arrays
        return o.tolist()
    if hasattr(o, "as_py"):  # pyarrow scalars
        return o.as_py()
    return str(o)


_strict_json = json.JSONEncoder(default=json_default, ensure_ascii=False, allow_nan=False).encode
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def json_text(value: Any) -> str:
    """`value` as strict JSON (what JSON has no type for as `json_default` writes it): NaN,
    Infinity and -Infinity, which JSON cannot hold, as the strings "NaN", "Infinity" and
    "-Infinity", wherever they are in the value."""
    try:
        return _strict_json(value)
    except ValueError:   # a float JSON cannot hold, or a value that holds itself
        plain = json.loads(json.dumps(value, default=json_default, ensure_ascii=False))
        return _strict_json(_finite(plain))


def _finite(v: Any) -> Any:
    if isinstance(v, float):
        return v if math.isfinite(v) else _NON_FINITE[repr(v)]
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def arrow_table(rows: Sequence[Dict[str, Any]], annotate: bool, sink_name: str,
                fallback: Optional[Callable[[str, List[Any], Exception], Any]] = None,
                micros: bool = False) -> Any:
    """A pyarrow Table of the rows: columns in first-seen order (the extra columns last, typed;
    the times int64 µs with `micros`, as `RowMaker(micros=True)` gives them), missing fields
    null. A column Arrow cannot hold as one type goes to `fallback(name, values, error)` if
    given (returning an array), else is a clear error."""
    import pyarrow as pa
    names: Dict[str, None] = {}
    for row in rows:
        for k in row:
            if k not in names:
                names[k] = None
    extra = dict(EXTRA_COLUMNS) if annotate else {}
    if micros:
        extra.update((name, "int64") for name in TIME_COLUMNS if name in extra)
    value_names = [n for n in names if n not in extra]
    arrays, fields = [], []
    for name in value_names:
        values = [_arrow_value(row.get(name)) for row in rows]
        try:
            arr = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError) as e:
            if fallback is None:
                kinds = sorted({type(v).__name__ for v in values if v is not None})
                raise ValueError(f"{sink_name}: column {name!r} cannot be written as one Arrow "
                                 f"type (its values are {', '.join(kinds)}): {e}") from None
            arr = fallback(name, values, e)
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    for name, type_name in extra.items():
        arrays.append(pa.array([row.get(name) for row in rows], type=getattr(pa, type_name)()))
        fields.append(pa.field(name, arrays[-1].type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _arrow_value(v: Any) -> Any:
    if isinstance(v, Timestamp):
        return v.to_datetime()
    if isinstance(v, (set, frozenset)):
        return list(v)
    return v


class Sink(Primitive):
    """A transform that writes its one input out of the pipeline (files, Kafka)."""

    @property
    def name(self) -> str:
        return self.label or type(self).__name__

    def validate(self, node: Any) -> None:
        if len(node.inputs) != 1:
            raise PipelineConstructionError(
                f"{type(self).__name__} {node.label!r} takes one PCollection, got {len(node.inputs)}")

    def outputs(self, node: Any) -> Dict[Optional[str], PCollection]:
        return {}

    def result(self, node: Any) -> Any:
        return None


#: Beam's default shard name: the shard's index and the count, five digits each
SHARD_NAME_TEMPLATE = "-SSSSS-of-NNNNN"


class FileSink(Sink):
    """Writes its input to one file, named `{prefix}{shard name}{suffix}` as Beam names
    shards; the suffix is `file_name_suffix`, else the format's `default_suffix` (`.parquet`,
    `.jsonl`, `.csv`; none for text, as Beam) so that a glob such as `*.parquet` finds the
    output (`shard_name_template`, Beam's: a run of S is the shard's index, a run of N the
    count, zero-padded; "" names the file by prefix and suffix alone). Beam's `num_shards`
    may be 0 (the runner decides) or 1; pomset writes one file per sink (Spark's Parquet,
    one per task). Subclasses set `writer_class`, a class taking
    `(path, annotate, sink_name, sink)` with `write(bundle)` and `close()`."""

    def plan_kind(self) -> Optional[str]:
        return plan_kinds.SINK

    writer_class: Any = None
    #: the file name suffix when `file_name_suffix` is not given: the format's extension
    default_suffix = ""

    @beam_keywords(file_path_prefix="path_prefix")
    def __init__(self, path_prefix: PathLike, file_name_suffix: Optional[str] = None,
                 label: Optional[str] = None, *, num_shards: int = 0,
                 shard_name_template: Optional[str] = None) -> None:
        super().__init__(label)
        who = type(self).__name__
        if not isinstance(path_prefix, (str, os.PathLike)):
            raise TypeError(f"{who} takes a path prefix (str or path), got {path_prefix!r}")
        if file_name_suffix is None:
            file_name_suffix = self.default_suffix
        if not isinstance(file_name_suffix, str):
            raise TypeError(f"file_name_suffix must be a str, got {file_name_suffix!r}")
        if num_shards not in (0, 1):
            raise ValueError(f"{who}(num_shards={num_shards!r}): pomset writes one file per "
                             f"sink (one per task for Spark's Parquet), so num_shards may be 0 "
                             f"(the runner decides) or 1; split the output by a key with "
                             f"Partition into several sinks instead")
        template = SHARD_NAME_TEMPLATE if shard_name_template is None else shard_name_template
        if not isinstance(template, str) or re.search(r"S[^S]+S|N[^N]+N", template):
            raise ValueError(f"{who}: shard_name_template must be a str with at most one run "
                             f"of S and one of N (Beam's), got {shard_name_template!r}")
        self.path_prefix = os.fspath(path_prefix)
        self.file_name_suffix = file_name_suffix
        self.num_shards = num_shards
        self.shard_name_template = template

    def shard_path(self, index: int, count: int) -> str:
        """The file of shard `index` of `count`."""
        name = re.sub(r"S+", lambda m: f"{index:0{len(m.group())}d}", self.shard_name_template)
        name = re.sub(r"N+", lambda m: f"{count:0{len(m.group())}d}", name)
        return f"{self.path_prefix}{name}{self.file_name_suffix}"

    def shard_glob(self) -> str:
        """A glob of every shard this sink may write."""
        name = re.sub(r"[SN]+", lambda m: "[0-9]" * len(m.group()),
                      glob.escape(self.shard_name_template))
        return glob.escape(self.path_prefix) + name + glob.escape(self.file_name_suffix)

    @property
    def path(self) -> str:
        """The file this sink writes."""
        return self.shard_path(0, 1)

    def validate(self, node: Any) -> None:
        super().validate(node)
        if os.path.isdir(self.path):
            raise PipelineConstructionError(
                f"{node.label}: cannot write {self.path!r}, it is a directory")

    def writer(self, pcoll: PCollection, path: Optional[str] = None) -> Any:
        """A writer of `pcoll` to this sink's file, or to `path` (a streaming runner writes
        one file per micro-batch)."""
        return self.writer_class(path or self.path, annotates(pcoll), self.name, self)

    def output_files(self) -> List[str]:
        """The files a batch run wrote: the one file, or the shards of a runner that writes
        in parallel."""
        return sorted(glob.glob(self.shard_glob()))

    def part_path(self, part: int) -> str:
        """The file of one part of a streaming run's output (part = micro-batch id)."""
        return f"{self.path_prefix}-batch-{part:06d}{self.file_name_suffix}"

    def remove_parts_after(self, part: int) -> None:
        """Remove the parts after `part`: a run resumed from an older checkpoint writes them
        again, or, where it now ends sooner, not at all."""
        prefix = f"{os.path.basename(self.path_prefix)}-batch-"
        folder = os.path.dirname(self.path_prefix) or "."
        if not os.path.isdir(folder):
            return
        suffix = self.file_name_suffix
        for name in os.listdir(folder):
            if not (name.startswith(prefix) and name.endswith(suffix)):
                continue
            number = name[len(prefix):len(name) - len(suffix)]
            if number.isdigit() and int(number) > part:
                os.remove(os.path.join(folder, name))


class AtomicFile:
    """A file written under a temporary name in the target directory (created if missing)
    and renamed over the target on `commit()`, so a failed run leaves no half-written output."""

    def __init__(self, path: str) -> None:
        self.path = path
        directory, base = os.path.split(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        self.tmp = os.path.join(directory, f".{base}.{os.getpid()}.inprogress")

    def commit(self) -> None:
        os.replace(self.tmp, self.path)


class LineWriter:
    """Streams one line per element to the file: `line(wv) -> str` (no newline)."""

    def __init__(self, path: str, line: Callable[[WindowedValue], str]) -> None:
        self.path = path
        self.line = line
        self.file: Optional[AtomicFile] = None
        self.out: Any = None
        self.closed = False

    def _open(self) -> None:
        self.file = AtomicFile(self.path)
        self.out = open(self.file.tmp, "w", encoding="utf-8", newline="\n")

    def write(self, bundle: List[WindowedValue]) -> None:
        if self.out is None:
            self._open()
        line = self.line
        self.out.write("".join([line(wv) + "\n" for wv in bundle]))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.out is None:
            self._open()
        self.out.close()
        self.file.commit()

    def abort(self) -> None:
        """The run failed: leave no file behind, neither the real one nor the temporary."""
        self.closed = True
        if self.out is not None:
            self.out.close()
            if os.path.exists(self.file.tmp):
                os.remove(self.file.tmp)


class TableWriter:
    """Buffers rows and writes them as one Arrow table at the end (so every row shares one
    schema, whatever fields later elements add). Subclasses implement `write_table`; one
    that sets `time_micros` gets the time columns as int64 µs, not float seconds."""

    time_micros = False

    def __init__(self, path: str, annotate: bool, sink_name: str, sink: Any) -> None:
        self.path = path
        self.annotate = annotate
        self.sink_name = sink_name
        self.sink = sink
        self.make_row = RowMaker(annotate, sink_name, self.time_micros)
        self.rows: List[Dict[str, Any]] = []
        self.tables: List[Any] = []   # parts written as Arrow tables (`write_arrow`)
        self.closed = False

    def write(self, bundle: List[WindowedValue]) -> None:
        make_row = self.make_row
        self.rows.extend(make_row(wv) for wv in bundle)

    def write_arrow(self, table: Any) -> None:
        """Rows already as an Arrow table with the sink's columns (a columnar runner's)."""
        clash = [n for n in table.column_names[:-len(EXTRA_NAMES)] if n in EXTRA_NAMES] \
            if self.annotate else []
        if clash:
            raise ValueError(f"{self.sink_name}: rows have field(s) {clash}, which clash with "
                             f"the window/pane columns the sink adds for windowed or "
                             f"retracting input ({', '.join(EXTRA_NAMES)}); rename them first")
        self.tables.append(table)

    def rows_table(self) -> Any:
        """The rows written as elements, as a table."""
        return arrow_table(self.rows, self.annotate, self.sink_name, micros=self.time_micros)

    def table(self) -> Any:
        import pyarrow as pa
        if not self.tables:
            return self.rows_table()
        parts = self.tables + ([self.rows_table()] if self.rows else [])
        try:
            return pa.concat_tables(parts, promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise ValueError(f"{self.sink_name}: rows of different types cannot be written to "
                             f"one file: {e}") from None

    def write_table(self, table: Any, path: str) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        """The run failed: write nothing."""
        self.closed = True
        self.rows, self.tables = [], []

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        table = self.table()
        self.rows, self.tables = [], []
        target = AtomicFile(self.path)
        try:
            self.write_table(table, target.tmp)
        except Exception:
            if os.path.exists(target.tmp):
                os.remove(target.tmp)
            raise
        target.commit()
