"""pomset: the Dataflow Model in Python — what, where, when and how — on local and Spark runners.

Everything a pipeline author imports is here: `import pomset as pm`.
"""
from .sdk.combinefn import CombineFn, Count, Max, Mean, Min, Sum, Top, ToList
from .sdk.core import (CoGroupByKey, CombineGlobally, CombinePerKey, CombineValues, Create,
                       Distinct, Filter, FlatMap, Flatten, GroupByKey, Keys, KvSwap, Map, ParDo,
                       Partition, Source, Values, WindowInto, WithTimestamps)
from .sdk.dofn import DeadLetter, DoFn, TaggedOutput
from .sdk.errors import (BacklogWarning, CheckpointError, CheckpointWarning, CorruptInputError,
                         DataLossError, DataLossWarning,
                         KafkaStallWarning, KafkaUnreachableError, LateDataWarning,
                         MemoryLimitError, OptionsError,
                         OptionsWarning, PipelineConstructionError, TimeUnitWarning,
                         UserCodeError)
from .sdk.options import PipelineOptions
from .sdk.pipeline import Pipeline
from .sdk.ptransform import PTransform
from .sdk.expressions import Expr, col, lit
from .sdk.relational import GroupBy, Select, WithColumns
from .sdk.schema import Row
from .sdk.pvalue import AsDict, AsIter, AsList, AsSingleton, DoOutputsTuple, PCollection
from .sdk.test_stream import TestStream
from .triggers import (AccumulationMode, AfterAll, AfterAny, AfterCount, AfterEach,
                       AfterProcessingTime, AfterWatermark, Always, AtCount, AtPeriod,
                       AtWatermark, DefaultTrigger, Never, OrFinally, Repeat, Repeatedly,
                       RepeatUntil, SequenceOf, Trigger, TriggerContext, WindowingStrategy)
from .windowing import (MAX_TIMESTAMP, MIN_TIMESTAMP, BoundedWindow, FixedWindows, GlobalWindow,
                        GlobalWindows, IntervalWindow, PaneInfo, PaneTiming, Sessions,
                        SlidingWindows, Timestamp, TimestampCombiner, TimestampedValue,
                        WindowedValue, WindowFn)

__version__ = "0.1.0"

__all__ = [
    "CombineFn", "Count", "Max", "Mean", "Min", "Sum", "Top", "ToList",
    "CoGroupByKey", "CombineGlobally", "CombinePerKey", "CombineValues", "Create", "Distinct",
    "Filter", "FlatMap", "Flatten", "GroupByKey", "Keys", "KvSwap", "Map", "ParDo", "Partition",
    "Source", "Values", "WindowInto", "WithTimestamps",
    "DeadLetter", "DoFn", "TaggedOutput",
    "BacklogWarning", "CheckpointError", "CheckpointWarning", "CorruptInputError",
    "DataLossError", "DataLossWarning",
    "KafkaStallWarning", "KafkaUnreachableError", "LateDataWarning", "MemoryLimitError",
    "OptionsError",
    "OptionsWarning", "TimeUnitWarning",
    "PipelineConstructionError",
    "UserCodeError",
    "PipelineOptions", "Pipeline", "PTransform", "Row", "GroupBy", "Select", "WithColumns",
    "Expr", "col", "lit",
    "AsDict", "AsIter", "AsList", "AsSingleton", "DoOutputsTuple", "PCollection",
    "TestStream",
    "AccumulationMode", "AfterAll", "AfterAny", "AfterCount", "AfterEach", "AfterProcessingTime",
    "AfterWatermark", "Always", "AtCount", "AtPeriod", "AtWatermark", "DefaultTrigger", "Never",
    "OrFinally", "Repeat", "Repeatedly", "RepeatUntil", "SequenceOf", "Trigger", "TriggerContext",
    "WindowingStrategy",
    "MAX_TIMESTAMP", "MIN_TIMESTAMP", "BoundedWindow", "FixedWindows", "GlobalWindow",
    "GlobalWindows", "IntervalWindow", "PaneInfo", "PaneTiming", "Sessions", "SlidingWindows",
    "Timestamp", "TimestampCombiner", "TimestampedValue", "WindowedValue", "WindowFn",
]

# --- IO (pomset.sdk.io) ---
from .sdk.io import (ReadFromCsv, ReadFromJson, ReadFromKafka, ReadFromParquet,  # noqa: E402
                     ReadFromText, WriteToCsv, WriteToJson, WriteToKafka, WriteToParquet,
                     WriteToText)

__all__ += [
    "ReadFromCsv", "ReadFromJson", "ReadFromParquet", "ReadFromText",
    "WriteToCsv", "WriteToJson", "WriteToParquet", "WriteToText",
    "ReadFromKafka", "WriteToKafka",
]

# --- typed data-trace annotations (pomset.traces) ---
from .traces import (DGS, Hash, Marker, Merge, O, OPlus, OpKeyedOrdered,  # noqa: E402
                     OpKeyedUnordered, OpStateless, RoundRobin, Sort, SortInserted, TraceType, Typed, U, Unit)
from . import dgs  # noqa: E402

__all__ += [
    "DGS", "dgs", "Hash", "Marker", "Merge", "O", "OPlus", "OpKeyedOrdered", "OpKeyedUnordered", "OpStateless",
    "RoundRobin", "Sort", "SortInserted", "TraceType", "Typed", "U", "Unit",
]

# --- testing: assert_that, matchers, TestPipeline (pomset.testing, Beam's names) ---
from . import testing  # noqa: E402

__all__ += ["testing"]

# --- Beam's names: its shorthand transforms, Duration, and its modules (beam.window, ...) ---
from .sdk.shorthands import FlatMapTuple, Latest, MapTuple, Reshuffle, WithKeys  # noqa: E402
from .windowing import Duration  # noqa: E402
from . import (coders, combiners, io, metrics, options, pvalue, transforms,  # noqa: E402
               trigger, utils, window)
from .metrics import Metrics, MetricsFilter  # noqa: E402

__all__ += ["Duration", "FlatMapTuple", "Latest", "MapTuple", "Metrics", "MetricsFilter",
            "Reshuffle", "WithKeys", "coders", "combiners", "io", "metrics", "options",
            "pvalue", "transforms", "trigger", "utils", "window"]

#: Beam names pomset lacks, and what to know about each
_MISSING = {
    "Sample": "Beam's Sample combiners are in pomset.combiners (combiners.Sample), as in Beam",
}


from ._beam_names import missing as _missing  # noqa: E402
_missing_beam_name = _missing("pomset", "apache_beam")


def __getattr__(name: str):
    if name in _MISSING:
        raise AttributeError(f"pomset has no {name!r}: {_MISSING[name]}")
    return _missing_beam_name(name)

# --- Beam's transforms.util names (pomset.transforms.util) ---
from .sdk.batching import BatchElements, GroupIntoBatches, SortAndBatchElements  # noqa: E402
from .sdk.log_elements import LogElements  # noqa: E402
from .sdk.regex import Regex  # noqa: E402
from .sdk.reify import Reify  # noqa: E402
from .sdk.secret import GroupByEncryptedKey, Secret  # noqa: E402
from .sdk.tostring import ToString  # noqa: E402
from .sdk.wait_on import WaitOn  # noqa: E402

__all__ += ["BatchElements", "GroupByEncryptedKey", "GroupIntoBatches", "LogElements", "Regex", "Reify", "Secret",
            "SortAndBatchElements", "ToString", "WaitOn"]

# --- stateful DoFns: state cells and timers, per key and window (Beam's userstate) ---
from .sdk.userstate import (BagStateSpec, CombiningValueStateSpec, OrderedListStateSpec,  # noqa: E402
                            ReadModifyWriteStateSpec, SetStateSpec, TimeDomain, TimerSpec,
                            on_timer)

__all__ += ["BagStateSpec", "CombiningValueStateSpec", "OrderedListStateSpec",
            "ReadModifyWriteStateSpec", "SetStateSpec", "TimeDomain", "TimerSpec", "on_timer"]

# --- the pane timeline of a run (matplotlib) ---
from .sdk.plot import plot_panes  # noqa: E402

__all__ += ["plot_panes"]

# --- Beam's pipeline surface: Impulse, PartitionFn, and the `core` and `pipeline` modules ---
from .sdk.core import Impulse, PartitionFn  # noqa: E402
from . import core, pipeline  # noqa: E402

__all__ += ["Impulse", "PartitionFn", "core", "pipeline"]

# --- Beam's @ptransform_fn and its type hints (beam.typehints) ---
from .sdk.ptransform import ptransform_fn  # noqa: E402
from . import typehints  # noqa: E402

__all__ += ["ptransform_fn", "typehints"]

# --- approximate statistics: distinct counts and quantiles (Beam's transforms.stats) ---
from .sdk.approximate_quantiles import ApproximateQuantiles  # noqa: E402
from .sdk.approximate_unique import ApproximateUnique  # noqa: E402

__all__ += ["ApproximateQuantiles", "ApproximateUnique"]

# --- Beam's transforms of several inputs and outputs: FlattenWith, Tee ---
from .sdk.core import FlattenWith, Tee  # noqa: E402

__all__ += ["FlattenWith", "Tee"]

# --- Beam's trigger and WindowFn protocols: may_lose_data's reasons, continuations ---
from .triggers import AfterSynchronizedProcessingTime, DataLossReason  # noqa: E402
from .windowing import NonMergingWindowFn  # noqa: E402

__all__ += ["AfterSynchronizedProcessingTime", "DataLossReason", "NonMergingWindowFn"]
