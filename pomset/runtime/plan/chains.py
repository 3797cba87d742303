"""Fused element-wise chains: maximal runs of element-wise nodes, each the one consumer of
the one before's only output, that a runner may run as one step on each bundle."""
from __future__ import annotations

from typing import Any, Iterable, List, Sequence, Tuple

from .kinds import ELEMENTWISE


def fused_chains(nodes: Sequence[Any], recorded: Iterable[Any] = ()) -> List[Tuple[Any, ...]]:
    """Every element-wise node in exactly one chain, in graph order, each chain in the order
    its elements pass. A node continues the chain of its producer when it is element-wise,
    reads one main input and no side inputs, and that input is the producer's only output,
    read by nothing else and not recorded (`recorded`: the PCollections a run keeps)."""
    kept = {id(pc) for pc in recorded}
    by_graph = {id(n.graph): n for n in nodes}
    chains: List[List[Any]] = []
    chain_of = {}
    for n in nodes:
        if n.kind != ELEMENTWISE:
            continue
        up = _fusible_producer(n, by_graph, kept)
        if up is not None and id(up) in chain_of:
            chain = chain_of[id(up)]
            chain.append(n)
        else:
            chain = [n]
            chains.append(chain)
        chain_of[id(n)] = chain
    return [tuple(c) for c in chains]


def _fusible_producer(n: Any, by_graph: dict, kept: set) -> Any:
    """The element-wise producer whose chain `n` continues, if any."""
    if len(n.inputs) != 1 or n.side_inputs:
        return None
    (pc,) = n.inputs
    producer = pc.producer
    up = by_graph.get(id(producer)) if producer is not None else None
    if (up is None or up.kind != ELEMENTWISE or len(up.outputs) != 1 or id(pc) in kept
            or len(pc.consumers) != 1):
        return None
    return up
