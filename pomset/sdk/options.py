"""PipelineOptions: flags parsed from argv (`--runner=local`). Flags given to it explicitly
must all be known; with none given it reads the program's command line, as Beam does."""
from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .errors import OptionsError, OptionsWarning
from .runners import canonical_runner, runner_names


def _spark_conf(text: str) -> tuple:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--spark_conf takes KEY=VALUE, got {text!r}")
    return key.strip(), value


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _positive(flag: str) -> Callable[[str], float]:
    """An argument type: a number of seconds above 0, else an error naming `flag`."""
    def parse(text: str) -> float:
        try:
            seconds = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes a number of seconds, got {text!r}")
        if not seconds > 0:
            raise argparse.ArgumentTypeError(f"{flag} must be above 0 seconds, got {text}")
        return seconds
    return parse


def _at_least(flag: str, least: int, meaning: str = "") -> Callable[[str], int]:
    """An argument type: a whole number of `least` (which means `meaning`) or more, else an
    error naming `flag`."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes a whole number, got {text!r}")
        if n < least:
            raise argparse.ArgumentTypeError(f"{flag} must be {least}{meaning} or more, got {n}")
        return n
    return parse


_UNITS = {"": 1, "b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40}


def parse_bytes(text: str) -> int:
    """A size in bytes from `512MB`, `2GB`, `1.5kb` or a bare number of bytes (units are
    binary: 1KB = 1024 bytes); ValueError for anything else, or a size under one byte."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?b?)\s*", text.lower())
    if match is None or match.group(2) not in _UNITS:
        raise ValueError(f"not a size: {text!r} (say 512MB, 2GB or a number of bytes)")
    size = int(float(match.group(1)) * _UNITS[match.group(2)])
    if size < 1:
        raise ValueError(f"a size of at least one byte, got {text!r}")
    return size


def _size(flag: str) -> Callable[[str], int]:
    """An argument type: a size (`parse_bytes`), else an error naming `flag`."""
    def parse(text: str) -> int:
        try:
            return parse_bytes(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{flag} takes a size: {e}")
    return parse


#: the local runner's scheduling policies (pomset/runtime/ordered/schedule.py)
SCHEDULES = ("ct", "lp", "qst", "et", "random")

#: the parser of each options class and program name (PipelineOptions._parser)
_PARSERS: Dict[Tuple[type, str], argparse.ArgumentParser] = {}
#: Beam's --direct_running_mode, as --workers and --worker_mode
_BEAM_RUNNING_MODES = {"in_memory": None, "multi_threading": "threads",
                       "multi_processing": "processes"}


#: how alike an unknown flag's name and an option's must be to be taken for a misspelling
NEAR_MISS = 0.8


def compatible_before(options: Any, version: str) -> bool:
    """Whether `--update_compatibility_version` asks for Beam's behaviour of a release
    before `version` ("2.73.0"): what a Beam change kept for pipelines updated from it."""
    asked = getattr(options, "update_compatibility_version", None)
    if not asked:
        return False

    def parts(text: str) -> Tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", str(text))[:3])
    return parts(asked) < parts(version)


def near_misses(unknown: Sequence[str], known: Sequence[str]) -> List[str]:
    """For each of the `unknown` flags whose name is a near-miss of a `known` option's
    (difflib's ratio at least `NEAR_MISS`: `--runer`, `--streming`), a line naming both."""
    hints = []
    for flag in unknown:
        if not flag.startswith("--"):
            continue
        name = flag.split("=", 1)[0]
        match = difflib.get_close_matches(name, known, n=1, cutoff=NEAR_MISS)
        if match:
            hints.append(f"{name} is not a pipeline option; did you mean {match[0]}?")
    return hints


def _flags_of(parser: argparse.ArgumentParser) -> List[str]:
    """The parser's long options, sorted."""
    return sorted(a.option_strings[0] for a in parser._actions if a.option_strings)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print usage and exit
        raise OptionsError(message)


class PipelineOptions:
    """Options for running a pipeline, from `flags` or, when none are given, from the
    program's command line (`sys.argv`), as Beam reads them. Subclass and override
    `add_arguments(parser)` (a plain, class or static method; Beam's `_add_argparse_args`
    too) to add your own flags.

    Explicit `flags` must all be known: an unknown or invalid one raises `OptionsError`
    naming it (and the option it resembles, if one). On the command line, where the program
    may have flags of its own, unknown ones are passed over with an `OptionsWarning` naming
    them, as Beam discards them, except a near-miss of an option (`--runer=spark`), which
    is an error suggesting it when the run starts; an invalid value (`--workers=x`) ends the
    program with one line on stderr. `--help` prints every flag with its help and ends the
    program."""

    def __init__(self, flags: Optional[Sequence[str]] = None, **kwargs: Any) -> None:
        command_line = flags is None
        self._parse(list(sys.argv[1:] if command_line else flags), command_line, kwargs)

    def _parse(self, argv: List[str], command_line: bool, kwargs: Dict[str, Any],
               view: bool = False) -> None:
        """Parse `argv`; flags this class does not know are an error unless they come from
        the command line or this is a view (of options that know them)."""
        parser = self._parser()
        if "--help" in argv or "-h" in argv:
            parser.print_help()
            raise SystemExit(0)
        try:
            namespace, unknown = parser.parse_known_args(argv)
            if unknown and not (command_line or view):
                known = _flags_of(parser)
                hints = "".join(f"; {hint}" for hint in near_misses(unknown, known))
                raise OptionsError(f"unknown option(s) {' '.join(unknown)}{hints}; known "
                                   f"options: {', '.join(known)} (--help says what each does)")
            if command_line:    # a value there is the user's to fix, not the program's
                self._check(vars(namespace))
        except OptionsError as e:
            if not command_line:
                raise
            print(f"{parser.prog}: error: {e}", file=sys.stderr)
            raise SystemExit(2) from None
        for key, value in kwargs.items():
            if not hasattr(namespace, key):
                raise OptionsError(f"unknown option {key!r}")
            setattr(namespace, key, value)
        self._values: Dict[str, Any] = vars(namespace)
        self._resolve_workers()
        self.set_runner(self._values["runner"])
        self._flags = argv
        self._command_line = command_line
        #: the command line's flags that no view of these options knows, shared by the views
        self._unknown = unknown

    def warn_unknown(self) -> None:
        """Warn, once, of the command line's flags that are not pipeline options (of this
        class or any `view_as` of it): a run calls it as it starts. One that is a near-miss
        of a pipeline option (`--runer`) is an error suggesting it, as a bad value is: one
        line on stderr, exit status 2."""
        parser = self._parser()
        hints = near_misses(self._unknown, _flags_of(parser))
        if hints:
            print(f"{parser.prog}: error: {'; '.join(hints)}", file=sys.stderr)
            raise SystemExit(2)
        if self._unknown:
            warnings.warn(f"{' '.join(self._unknown)}: not pipeline options, passed over (pass "
                          "the pipeline's flags explicitly, PipelineOptions(flags) or "
                          "Pipeline(argv=...), to make an unknown one an error)",
                          OptionsWarning, stacklevel=3)
            self._unknown.clear()

    def _parser(self) -> argparse.ArgumentParser:
        """Every flag: pomset's, and each class's in the hierarchy from `add_arguments`. Built
        once for a class and program name where every `add_arguments` is a class or static
        method (Beam's form): building it costs milliseconds, and each pipeline asks twice."""
        prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "pipeline"
        key = (type(self), prog)
        if key in _PARSERS:
            return _PARSERS[key]
        parser = _Parser(prog=prog, add_help=False, allow_abbrev=False)
        self._add_core(parser)
        per_class = True
        for cls in reversed(type(self).__mro__):
            # `_add_argparse_args` is Beam's name for it
            add = cls.__dict__.get("add_arguments", cls.__dict__.get("_add_argparse_args"))
            if isinstance(add, (classmethod, staticmethod)):
                add.__get__(self, cls)(parser)
            elif add is not None:
                add(self, parser)
                per_class = False
        if per_class:
            _PARSERS[key] = parser
        return parser

    def view_as(self, cls: type) -> "PipelineOptions":
        """These options seen as `cls` (another `PipelineOptions` subclass, as in Beam): the
        same flags parsed with its parser too, sharing one set of values with this view."""
        if not (isinstance(cls, type) and issubclass(cls, PipelineOptions)):
            raise TypeError(f"view_as takes a PipelineOptions subclass, got {cls!r}")
        view = cls.__new__(cls)
        view._parse(self._flags, self._command_line, {}, view=True)
        view._values.update(self._values)
        self._values = view._values
        self._unknown[:] = [flag for flag in self._unknown if flag in view._unknown]
        view._unknown = self._unknown
        return view

    def _resolve_workers(self) -> None:
        """Beam's running mode, and `--workers=0`, in terms of `--workers`/`--worker_mode`."""
        values = self._values
        beam_mode = values.pop("direct_running_mode")
        if beam_mode == "in_memory":
            values["workers"] = 1
        elif beam_mode is not None:
            values["worker_mode"] = _BEAM_RUNNING_MODES[beam_mode]
        if values["workers"] == 0:
            values["workers"] = usable_cores()

    @staticmethod
    def _check(values: Dict[str, Any]) -> None:
        """Raise OptionsError for a value the parser let through but pomset cannot use."""
        names = runner_names()
        if canonical_runner(values["runner"]) not in names:
            raise OptionsError(f"unknown runner {values['runner']!r}; available runners: "
                               f"{', '.join(names)}")

    def set_runner(self, runner: str) -> None:
        """Choose the runner; an unknown name is an error listing the available ones."""
        self._check({"runner": runner})
        self._values["runner"] = canonical_runner(runner)

    @staticmethod
    def _add_core(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--runner", default="local",
                            help="where to run: " + ", ".join(runner_names())
                            + " (Beam's DirectRunner and SparkRunner name them too)")
        parser.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
        parser.add_argument("--collect", default="auto", choices=("auto", "all", "leaves", "none"),
                            help="which PCollections result.collect() can return: all; leaves "
                                 "(those no transform reads) and those marked with "
                                 ".keep(); auto (the default): the same, but only the "
                                 "marked ones when a source never ends; none")
        parser.add_argument("--bundle_size", type=int, default=1000,
                            help="elements per bundle read from a bounded source")
        parser.add_argument("--workers", "--direct_num_workers", dest="workers",
                            type=_at_least("--workers", 0, " (one per core)"),
                            default=0, metavar="N",
                            help="local runner: workers for its stateless steps, and with "
                                 "threads or processes its groupings' key buckets and "
                                 "templates' instances (0, the default: one per core); 1 runs "
                                 "the sequential reference executor")
        parser.add_argument("--worker_mode", default="auto",
                            choices=("auto", "threads", "processes"),
                            help="local runner: auto (the default: worker threads for the steps "
                                 "that release the GIL, batched DoFns and columnar steps; "
                                 "Python-bound ones run inline), threads (every stateless "
                                 "step on worker threads) or forked processes (Python-bound "
                                 "steps)")
        parser.add_argument("--schedule", default="ct", choices=SCHEDULES,
                            help="local runner: which operator a free worker thread serves "
                                 "next (Prasaad et al.): ct (the default: the one with the "
                                 "lowest current throughput), lp (the last in the pipeline "
                                 "with work), qst (the first whose output queue is under its "
                                 "threshold), et (the one whose worklist would take longest); "
                                 "random picks at random, seeded by --schedule_seed, to try "
                                 "interleavings in tests")
        parser.add_argument("--schedule_seed", type=int, default=0, metavar="N",
                            help="local runner: the seed of --schedule=random")
        parser.add_argument("--elastic", action="store_true",
                            help="local runner: let a controller change the instance count of "
                                 "each OPlus step with its measured load (up to its "
                                 "max_parallelism)")
        parser.add_argument("--direct_running_mode", default=None,
                            choices=tuple(_BEAM_RUNNING_MODES),
                            help="Beam's name: in_memory is --workers=1, multi_threading "
                                 "--worker_mode=threads, multi_processing "
                                 "--worker_mode=processes")
        parser.add_argument("--spark_master", default="local[*]",
                            help="spark runner: the master of the SparkSession it creates "
                                 "(ignored when a session pomset did not start is active)")
        parser.add_argument("--spark_conf", action="append", default=[], metavar="KEY=VALUE",
                            type=_spark_conf, help="spark runner: a Spark setting, repeatable")
        parser.add_argument("--spark_ship", default="all", choices=("all", "python", "none"),
                            help="spark runner, a master that is not local: what the run ships "
                                 "to the executors: pomset, the pipeline's local modules and "
                                 "the driver's protobuf and confluent-kafka (all, the "
                                 "default), only the Python sources (python), or nothing "
                                 "(none: the executors' Python has them)")
        parser.add_argument("--spark_log_level", default=None, type=str.upper,
                            choices=("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE",
                                     "ALL"),
                            help="spark runner: show Spark's log from this level on (by "
                                 "default nothing of Spark's is shown)")
        parser.add_argument("--streaming", action="store_true",
                            help="read file sources as a stream of files, the same on both "
                                 "runners (on Spark, run as a Structured Streaming query even "
                                 "when every source is bounded)")
        parser.add_argument("--checkpoint_dir", default=None,
                            help="streaming: where the run checkpoints (its state, offsets "
                                 "and progress); a restart with the same directory resumes it")
        parser.add_argument("--checkpoint_interval", type=float, default=10.0, metavar="SECONDS",
                            help="local runner, streaming: how often the run commits its "
                                 "output and checkpoints (keep it below the Kafka producer's "
                                 "transaction.timeout.ms, 60 s unless producer_config says)")
        parser.add_argument("--on_lost_checkpoint", default="fail",
                            choices=("fail", "restart", "resume_from_mark"),
                            help="streaming, Kafka sinks: when --checkpoint_dir holds no run "
                                 "but Kafka holds this pipeline's output and progress mark "
                                 "(the directory was deleted, or is a new one): refuse to "
                                 "start, naming both (fail, the default); start a new run "
                                 "from the sources' start offsets, writing that output again "
                                 "(restart); or, on the local runner, go on from the source "
                                 "offsets the mark committed, without the lost state "
                                 "(resume_from_mark)")
        parser.add_argument("--kafka_stall_warning", type=_positive("--kafka_stall_warning"),
                            default=10.0, metavar="SECONDS",
                            help="Kafka runs: warn (KafkaStallWarning), and say on the status "
                                 "line, when a Kafka broker has not answered for this long "
                                 "(stopped or cut off without closing its connections; the "
                                 "run waits for it and goes on when it answers)")
        parser.add_argument("--backlog_warning", type=_positive("--backlog_warning"),
                            default=60.0, metavar="SECONDS",
                            help="streaming runs: warn (BacklogWarning) when a source's "
                                 "backlog (Kafka lag, files waiting) has grown for this long: "
                                 "the run reads slower than its input arrives")
        parser.add_argument("--on_data_loss", default="warn", choices=("warn", "fail"),
                            help="Kafka sources: when offsets a run was to read next were "
                                 "deleted by retention, go on from the earliest one left, "
                                 "counting the loss (lost_to_retention) and warning "
                                 "(DataLossWarning) naming topic, partition and offsets (warn, "
                                 "the default); or fail the run with a DataLossError (fail)")
        parser.add_argument("--streaming_until", default="never", choices=("never", "latest"),
                            help="streaming file sources: read new files forever (never), or "
                                 "the files there at the start and then end (latest)")
        parser.add_argument("--max_out_of_orderness", type=float, default=None, metavar="SECONDS",
                            help="streaming file sources: the watermark trails the largest "
                                 "event time read by this much (default: it stays at the "
                                 "start of time until the stream ends)")
        parser.add_argument("--max_files_per_batch", type=_at_least("--max_files_per_batch", 1),
                            default=None, metavar="N",
                            help="streaming file sources: read at most N new files per "
                                 "micro-batch (default: all there are)")
        parser.add_argument("--max_records_per_batch",
                            type=_at_least("--max_records_per_batch", 1), default=None,
                            metavar="N",
                            help="Spark streaming, Kafka sources: read about N records per "
                                 "micro-batch, shared among the partitions by their backlog, "
                                 "at least one from each with records waiting (Spark's "
                                 "maxOffsetsPerTrigger; default: all there are)")
        parser.add_argument("--auto_sort", action="store_true",
                            help="typed pipelines: insert pm.Sort before an OpKeyedOrdered "
                                 "whose input is unordered (it needs order=), with a warning, "
                                 "instead of rejecting the pipeline")
        parser.add_argument("--shuffle_merges", type=int, default=None, metavar="SEED",
                            help="local runner, typed pipelines: merge the outputs of a "
                                 "template's parallel instances in a random interleaving "
                                 "drawn from SEED (to see that the result does not change)")
        parser.add_argument("--save_main_session", action="store_true",
                            help="Beam's flag, accepted so Beam code runs; pomset needs none: "
                                 "its Spark runner ships the pipeline's functions and the "
                                 "main module's own modules itself (--spark_ship)")
        parser.add_argument("--update_compatibility_version", default=None, metavar="VERSION",
                            help="Beam's flag, accepted so Beam code runs; pomset needs none: "
                                 "it has no earlier pipeline encodings to stay compatible with "
                                 "when a streaming job is updated")
        parser.add_argument("--pickle_library", default="default",
                            choices=("default", "pickle", "dill", "cloudpickle"),
                            help="Beam's flag, accepted so Beam code runs; pomset pickles "
                                 "what a run ships its own way, whichever is named")
        parser.add_argument("--auto_unique_labels", action="store_true",
                            help="Beam's: a label used twice gets a random suffix "
                                 "(Map(f)_1a2b3c) instead of pomset's numbered one (Map(f)_2)")
        parser.add_argument("--no_wait_until_finish", action="store_true",
                            help="Beam's: a pipeline's `with` block ends once its run has "
                                 "started, not finished; `pipeline.result.wait_until_finish()` "
                                 "waits for it")
        parser.add_argument("--allow_unsafe_triggers", action="store_true", default=None,
                            help="Beam's flag, accepted so Beam code runs; pomset needs none: "
                                 "it takes every trigger, emits what a trigger left pending "
                                 "when the window closes, and counts (and warns of) the "
                                 "elements that arrive after a trigger has finished. Set to "
                                 "False (options.view_as(TypeOptions).allow_unsafe_triggers = "
                                 "False), a grouping refuses a trigger that may finish, as "
                                 "Beam's does by default")
        parser.add_argument("--pipeline_type_check", dest="pipeline_type_check",
                            action="store_true", default=True,
                            help="check, as the pipeline is built, that each transform's "
                                 "declared input type fits what its input gives (the "
                                 "default), and infer each PCollection's element_type")
        parser.add_argument("--no_pipeline_type_check", dest="pipeline_type_check",
                            action="store_false", help="do not check types as the pipeline "
                                                       "is built")
        parser.add_argument("--runtime_type_check", action="store_true",
                            help="also check, as the pipeline runs, that each element fits "
                                 "the declared input and output types of the functions "
                                 "and DoFns it goes through (a cost per element)")
        parser.add_argument("--performance_runtime_type_check", action="store_true",
                            help="Beam's flag, accepted: the same check as "
                                 "--runtime_type_check")
        parser.add_argument("--type_check_strictness", default="DEFAULT_TO_ANY",
                            choices=("ALL_REQUIRED", "DEFAULT_TO_ANY"),
                            help="ALL_REQUIRED: every transform must declare its output type; "
                                 "DEFAULT_TO_ANY (the default): one that does not gives Any")
        parser.add_argument("--type_check_additional", default="",
                            help="Beam's flag, accepted; pomset checks nothing more with it")
        parser.add_argument("--memory_limit", type=_size("--memory_limit"), default=None,
                            metavar="SIZE",
                            help="local runner: the memory a bounded grouping's state may "
                                 "take before it spills to disk (512MB, 2GB, or bytes; "
                                 "default: half of physical memory)")
        parser.add_argument("--temp_location", default=None, metavar="DIR",
                            help="where a run puts temporary files: the local runner's "
                                 "spilled groupings (default: the system's temporary "
                                 "directory)")
        for flag in ("--project", "--region", "--job_name", "--staging_location",
                     "--service_account_email"):
            parser.add_argument(flag, default=None,
                                help="Beam's Google Cloud flag (GoogleCloudOptions), accepted "
                                     "so Beam code that passes or reads it runs; pomset runs "
                                     "nothing on Google Cloud")
        parser.add_argument("--trigger_interval", type=float, default=1.0, metavar="SECONDS",
                            help="streaming: how often a micro-batch starts on Spark while "
                                 "sources keep going, and how often a stream of files looks "
                                 "for new files")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Override to add pipeline-specific flags."""

    @classmethod
    def from_argv(cls) -> "PipelineOptions":
        """The options on the program's command line, every flag required to be known."""
        return cls(sys.argv[1:])

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"no pipeline option {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            values[name] = value
        else:
            super().__setattr__(name, value)

    def get_all_options(self) -> dict:
        return dict(self._values)

    def __repr__(self) -> str:
        return f"PipelineOptions({self._values})"
