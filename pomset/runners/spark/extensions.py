"""The Spark batch plan's extensions: the typed-deployment steps (typed declarations and
template steps, O+, DGS), each module registering its own translators, so that `batch.py`
imports none of them."""
from __future__ import annotations

from ...runtime.plan import TranslatorTable
from . import batch, dgs, oplus, templates


def batch_table() -> TranslatorTable:
    """The Spark batch translators by plan kind: the core's and every extension's."""
    table = batch.core_table()
    for module in (templates, oplus, dgs):
        module.register(table)
    return table
