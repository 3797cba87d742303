"""Beam's `apache_beam.transforms.periodicsequence`: `PeriodicImpulse` and `PeriodicSequence`,
elements at fixed intervals of real time (`pomset.sdk.periodic_sequence`)."""
from .._beam_names import missing
from ..sdk.periodic_sequence import ImpulseSeqGenDoFn, PeriodicImpulse, PeriodicSequence

__all__ = ["ImpulseSeqGenDoFn", "PeriodicImpulse", "PeriodicSequence"]
__getattr__ = missing(__name__, "apache_beam.transforms.periodicsequence")
