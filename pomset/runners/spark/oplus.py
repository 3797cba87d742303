"""`OPlus` in a Spark batch plan, deployed shared-nothing as STRETCH's Corollary 1 says: each
input tuple is duplicated to every key its multi-key function gives (a map), the copies are
split by `stable_hash(key) % parallelism`, and each split runs the operator's windows for its
keys in one `applyInArrow` task, its tuples in timestamp order (the shuffle keeps no order:
tuples of equal timestamps are taken by input, then in the order the task got them)."""
from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional

import pyarrow as pa

from ...runtime.plan import PlanNode, TranslatorTable, kinds
from ...runtime.ordered.vsn import VSNDeployment, keys_of
from ...traces.hashing import stable_hash
from ...windowing import GLOBAL_WINDOW, NO_FIRING, WindowedValue
from . import codec
from .steps import Steps


def register(table: TranslatorTable) -> None:
    """Add the O+ translator to a Spark batch table."""
    table.register(kinds.OPLUS, _translate)


def _translate(node: PlanNode, plan: Any) -> Dict[Optional[str], Any]:
    plan.as_element_rows(node)
    return {None: translate(plan, node)}


def translate(plan: Any, node: Any) -> Any:
    """The pending Python steps of an OPlus step's output."""
    spec, label = node.transform, node.label
    n = max(spec.parallelism, plan.spark.sparkContext.defaultParallelism)
    keyed = None
    for i, source in enumerate(node.inputs):
        keys = spec.key_function(i)

        def split(bundles: Iterator[List[WindowedValue]], i: int = i,
                  keys: Any = keys) -> Iterator[pa.RecordBatch]:
            raw = WindowedValue.raw
            for bundle in bundles:
                copies, splits = [], []
                for wv in bundle:
                    for k in keys_of(label, keys, wv.value):
                        copies.append(raw((i, k, wv.value), wv.ts, GLOBAL_WINDOW, NO_FIRING, 1))
                        splits.append(b"%d" % (stable_hash(k) % n))
                if copies:
                    yield codec.encode(copies, keys=splits)
        df = plan.steps(source).run(split, codec.KEYED, source.producer.label)
        keyed = df if keyed is None else keyed.unionAll(df)
    inputs = len(node.inputs)

    def instance(table: pa.Table) -> Iterator[List[WindowedValue]]:
        rows = sorted(((wv.ts, wv.value) for wv in codec.decode(table)),
                      key=lambda r: (r[0], r[1][0]))
        d = VSNDeployment(spec, label, inputs, parallelism=1)
        for i in range(inputs):
            d.add_keyed(i, [(ts, value, key) for ts, (j, key, value) in rows if j == i])
            d.advance(i, float("inf"))
        raw = WindowedValue.raw
        yield [raw(v, ts, GLOBAL_WINDOW, NO_FIRING, 1) for ts, v in d.run()]
    return Steps(keyed.groupBy("k"), instance, grouped=True)
