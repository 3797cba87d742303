"""When in processing time panes are emitted, how they relate, and the GroupAlsoByWindow kernel."""
from .accumulation import AccumulationMode
from .data_loss import DataLossReason
from .definitions import (EVENT_TIME, PROCESSING_TIME, AfterAll, AfterAny, AfterCount, AfterEach,
                          AfterProcessingTime, AfterSynchronizedProcessingTime, AfterWatermark,
                          Always, AtCount, AtPeriod, AtWatermark, DefaultTrigger, Never,
                          OrFinally, Repeat, Repeatedly, RepeatUntil, SequenceOf, Trigger,
                          TriggerContext)
from .strategy import WindowingStrategy

__all__ = [
    "AccumulationMode", "DataLossReason", "EVENT_TIME", "PROCESSING_TIME", "AfterAll",
    "AfterAny", "AfterCount", "AfterEach", "AfterProcessingTime",
    "AfterSynchronizedProcessingTime", "AfterWatermark", "Always", "AtCount", "AtPeriod",
    "AtWatermark", "DefaultTrigger", "Never", "OrFinally", "Repeat", "Repeatedly", "RepeatUntil",
    "SequenceOf", "Trigger", "TriggerContext", "WindowingStrategy",
]
