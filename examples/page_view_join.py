"""The page-view join as a DGS program (Kallas et al., Sec. 4.1): page views are joined with
the latest metadata of their page, which update events change (an update also reports the
metadata it replaces). A few pages receive most of the views, so splitting by page (keyed
parallelism) leaves most of the work on the workers of the hot pages. As a DGS program, a
page's views are independent of each other and depend only on that page's updates: the plan
can spread one page's views over several workers, each with a copy of its metadata, and join
them only at the page's updates.

    python examples/page_view_join.py [--runner=local|spark] [--workers=N --worker_mode=processes]
        [--events=N]

It checks the program's consistency, prints the plan, runs the pipeline, and checks its
output against the sequential program on the sorted input.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402

PAGES = 4


def trace(pages: int = PAGES) -> pm.TraceType:
    """Tags ("view", page) and ("update", page): a page's updates depend on its views and on
    each other; views are independent of each other and of other pages."""
    tags = {}
    depends = []
    for p in range(pages):
        tags[("view", p)] = tuple
        tags[("update", p)] = str
        depends += [(("update", p), ("view", p)), (("update", p), ("update", p))]
    return pm.TraceType(tags, depends=depends)


def update(meta: Dict[int, str], tag: Tuple[str, int], value: Any,
           emit: Callable[[Any], None]) -> Dict[int, str]:
    """The sequential program: a view (user, url) comes out with its page's metadata; an
    update replaces the metadata and reports the old."""
    kind, page = tag
    if kind == "view":
        user, url = value
        emit(("view", user, url, meta.get(page, "unknown")))
        return meta
    emit(("updated", page, meta.get(page, "unknown")))
    meta[page] = value
    return meta


def _pages(tags: FrozenSet[Any]) -> set:
    return {page for _, page in tags}


def fork(meta: Dict[int, str], left: FrozenSet[Any], right: FrozenSet[Any]
         ) -> Tuple[Dict[int, str], Dict[int, str]]:
    """Each side gets the metadata of the pages it has events of (both, when both have its
    views); a page neither side has stays on the left."""
    mine = _pages(right)
    right_meta = {p: m for p, m in meta.items() if p in mine}
    theirs = _pages(left)
    left_meta = {p: m for p, m in meta.items() if p in theirs or p not in mine}
    return left_meta, right_meta


def join(a: Dict[int, str], b: Dict[int, str]) -> Dict[int, str]:
    """The union: a page on both sides had only views there, so both hold the same."""
    out = dict(a)
    out.update(b)
    return out


class PageViewJoin(pm.DGS):
    """Views with their page's metadata, for `events | PageViewJoin(pages)`."""

    def __init__(self, pages: int = PAGES, **kwargs: Any) -> None:
        super().__init__(init=dict, update=update, fork=fork, join=join, trace=trace(pages),
                         **kwargs)


def generate(n: int, pages: int = PAGES, hot: int = 2, per_update: int = 5_000,
             seed: int = 11) -> List[Tuple[float, Tuple[Any, Any]]]:
    """`n` views a millisecond apart, nine in ten on the `hot` first pages, and an update of
    a random page every `per_update` views."""
    rng = random.Random(seed)
    out: List[Tuple[float, Tuple[Any, Any]]] = []
    for i in range(n):
        page = rng.randrange(hot) if rng.random() < 0.9 else rng.randrange(pages)
        out.append((i / 1000, (("view", page), (f"u{rng.randrange(10_000)}", f"/p{page}/{i}"))))
        if i % per_update == per_update - 1:
            p = rng.randrange(pages)
            out.append((i / 1000 + 0.0005, (("update", p), f"zip-{rng.randrange(10**5):05d}")))
    return out


def sequential(events: List[Tuple[float, Tuple[Any, Any]]]) -> List[Tuple[float, Any]]:
    """The specification: the sequential program over the events sorted by timestamp."""
    state: Dict[int, str] = {}
    outs: List[Any] = []
    result = []
    for ts, (tag, value) in sorted(events, key=lambda e: e[0]):
        state = update(state, tag, value, outs.append)
        result.extend((ts, o) for o in outs)
        outs.clear()
    return result


class JoinOptions(pm.PipelineOptions):
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--events", type=int, default=50_000, help="views to make")
        parser.add_argument("--pages", type=int, default=PAGES)


def main(argv: Optional[List[str]] = None) -> int:
    options = JoinOptions(argv if argv is not None else sys.argv[1:])
    program = PageViewJoin(options.pages, label="PageViewJoin")
    from hypothesis import strategies as st
    pm.dgs.check_consistency(program, max_examples=100, values={
        **{("view", p): st.tuples(st.text(max_size=3), st.text(max_size=3))
           for p in range(options.pages)},
        **{("update", p): st.text(max_size=3) for p in range(options.pages)}})
    print("consistent: C1-C3 hold on generated states and events")
    events = generate(options.events, options.pages)
    rates: Dict[Any, int] = {}
    for _, (tag, _) in events:
        rates[tag] = rates.get(tag, 0) + 1
    leaves = (2 if options.runner != "local" else options.workers
              if options.worker_mode in ("processes", "threads") else 1)
    print(pm.dgs.optimize(program, leaves, rates).describe())
    with pm.Pipeline(options=options) as p:
        out = (p | pm.Create([pm.TimestampedValue(e, ts) for ts, e in events])
               | pm.Typed(program.trace, period=1) | program)
    got = [(float(wv.timestamp), wv.value) for wv in p.result.collect(out)]
    want = [(float(pm.Timestamp.of(ts)), o) for ts, o in sequential(events)]
    ok = sorted(got, key=repr) == sorted(want, key=repr)
    print(f"{len(events):,} events, {len(got):,} joined; equal to the sequential program: "
          f"{'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
