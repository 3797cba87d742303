"""The Spark batch plan's extensions: the typed-deployment steps (typed declarations and
template steps, O+, DGS), each module registering its own translators, so that `batch.py`
imports none of them."""
from __future__ import annotations

from typing import Dict

from . import dgs, oplus, templates
from .batch import Translator


def batch_extensions() -> Dict[type, Translator]:
    """The extension translators, by the step type each translates."""
    table: Dict[type, Translator] = {}
    for module in (templates, oplus, dgs):
        module.register(table)
    return table
