"""The Spark plans' extensions: the typed-deployment steps (typed declarations and template
steps, O+, DGS) and, on a streaming query, Kafka sources, each module registering its own
translators, so that `batch.py` and `streaming.py` import none of them."""
from __future__ import annotations

from ...runtime.plan import TranslatorTable
from . import batch, dgs, oplus, templates


def batch_table() -> TranslatorTable:
    """The Spark batch translators by plan kind: the core's and every extension's."""
    table = batch.core_table()
    for module in (templates, oplus, dgs):
        module.register(table)
    return table


def streaming_table() -> TranslatorTable:
    """The Spark streaming translators by plan kind: the core's, Kafka sources' and the
    template steps'. O+ and DGS steps register none: a streaming query does not run them
    (`runner.py` refuses them, naming why)."""
    # imported here: a batch run needs none of the streaming modules
    from . import stream_kafka, stream_templates, streaming
    table = streaming.core_table()
    for module in (stream_kafka, stream_templates):
        module.register(table)
    return table
