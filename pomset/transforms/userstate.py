"""Beam's `apache_beam.transforms.userstate`: the state and timer specs of stateful DoFns and
the `on_timer` decorator (`pomset.sdk.userstate`)."""
from .._beam_names import missing
from ..sdk.userstate import (BagStateSpec, CombiningValueStateSpec, OrderedListStateSpec,
                             ReadModifyWriteStateSpec, SetStateSpec, StateSpec, TimerSpec,
                             get_dofn_specs, is_stateful_dofn, on_timer, validate_stateful_dofn)

__all__ = ["BagStateSpec", "CombiningValueStateSpec", "OrderedListStateSpec",
           "ReadModifyWriteStateSpec", "SetStateSpec", "StateSpec", "TimerSpec",
           "get_dofn_specs", "is_stateful_dofn", "on_timer", "validate_stateful_dofn"]
__getattr__ = missing(__name__, "apache_beam.transforms.userstate")
