"""Beam's `apache_beam.transforms.trigger` (`beam.trigger`) names: triggers and accumulation
modes (`AfterCount` is Beam's `AfterCount`, `AfterAny` its `AfterAny`, and so on)."""
from ._beam_names import missing
from .triggers import (AccumulationMode, AfterAll, AfterAny, AfterCount, AfterEach,
                       AfterProcessingTime, AfterSynchronizedProcessingTime, AfterWatermark,
                       Always, DataLossReason, DefaultTrigger, Never, OrFinally, Repeatedly,
                       Trigger)

#: Beam's name for the trigger base class
TriggerFn = Trigger
#: Beam's name for Never (Beam has no public one; its code uses this)
_Never = Never
#: Beam's name for the continuation of a processing-time trigger
_AfterSynchronizedProcessingTime = AfterSynchronizedProcessingTime

__all__ = ["AccumulationMode", "AfterAll", "AfterAny", "AfterCount", "AfterEach",
           "AfterProcessingTime", "AfterSynchronizedProcessingTime", "AfterWatermark", "Always",
           "DataLossReason", "DefaultTrigger", "Never", "OrFinally", "Repeatedly", "Trigger",
           "TriggerFn", "_AfterSynchronizedProcessingTime", "_Never"]
__getattr__ = missing(__name__, "apache_beam.transforms.trigger")
