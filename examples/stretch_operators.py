"""The STRETCH paper's operators as `pm.OPlus` steps: wordcount and paircount over tweets
(per word, or per pair of nearby words, per 120-second window sliding every 60 seconds) and
a ScaleJoin-style band join of two streams of readings (pairs within 1.0 of each other in the
same 30-second window, compared with numpy).

    python examples/stretch_operators.py [--operator=wordcount|paircount|bandjoin]
        [--parallelism=N] [--reconfigure=N] [--runner=local|spark]

On the local runner the operator runs as N instances sharing one state; with --reconfigure
the run changes to that many instances halfway through (no state moves), and the output is
the same. Spark runs it shared-nothing (each tuple copied to its keys, then grouped).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import threading
from typing import Any, Callable, Iterable, List, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402

WORDS = ("stream window state key late early pane join spark beam flink data time shard "
         "merge order").split()
SECONDS = 1_000_000


class StretchOptions(pm.PipelineOptions):
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--operator", default="wordcount",
                            choices=("wordcount", "paircount", "bandjoin"))
        parser.add_argument("--parallelism", type=int, default=2)
        parser.add_argument("--reconfigure", type=int, default=None,
                            help="local runner: change to this many instances halfway")
        parser.add_argument("--events", type=int, default=20_000)


def tweets(n: int, seed: int = 1) -> List[pm.TimestampedValue]:
    """`n` tweets of 3-12 words over about an hour (Zipf-ish word choice)."""
    rng = random.Random(seed)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    return [pm.TimestampedValue(" ".join(rng.choices(WORDS, weights, k=rng.randint(3, 12))),
                                i * 3600 / n) for i in range(n)]


def words(tweet: str) -> Iterable[str]:
    return set(tweet.split())


def pairs(tweet: str, reach: int = 2) -> Iterable[Tuple[str, str]]:
    """The paper's paircount keys: each word with the next `reach` ones."""
    ws = tweet.split()
    return {(a, b) for i, a in enumerate(ws) for b in ws[i + 1:i + 1 + reach]}


def count(w: Any, value: Any, emit: Callable) -> None:
    w.state += 1


def report(w: Any, emit: Callable) -> None:
    emit((w.key, w.start // SECONDS, w.state))


def counter(keys: Callable[[str], Iterable[Any]], parallelism: int) -> pm.OPlus:
    """A+ counting the keys of each tweet per sliding window (the paper's Operator 14)."""
    return pm.OPlus(advance=60, size=120, keys=keys, initial=lambda: 0, update=count,
                    output=report, parallelism=parallelism, max_parallelism=8)


def band_join(parallelism: int, shards: int = 64) -> pm.OPlus:
    """J+ by ScaleJoin (the paper's Operator 10): every reading goes to all `shards` keys of
    its window and is compared there with the other stream's readings that shard kept, and
    each reading is kept by one shard, so the instances split the comparisons evenly."""
    def keys(value: Tuple[str, float]) -> range:
        return range(shards)

    def update(w: Any, value: Tuple[str, float], emit: Callable) -> None:
        import numpy as np
        name, x = value
        other = w.states[1 - w.input]
        if other:
            xs = np.fromiter((r[1] for r in other), float, len(other))
            for i in np.flatnonzero(np.abs(xs - x) <= 1.0):
                left, right = (name, other[i][0]) if w.input == 0 else (other[i][0], name)
                emit((left, right))
        if int(name[1:]) % shards == w.key:
            w.state.append(value)
    return pm.OPlus(advance=30, size=30, keys=keys, update=update, initial=list,
                    parallelism=parallelism, max_parallelism=8)


def readings(n: int, prefix: str, seed: int) -> List[pm.TimestampedValue]:
    rng = random.Random(seed)
    return [pm.TimestampedValue((f"{prefix}{i}", rng.uniform(0, 100)), i * 600 / n)
            for i in range(n)]


def main(argv: List[str] = None) -> None:
    options = StretchOptions(argv if argv is not None else sys.argv[1:])
    p = pm.Pipeline(options=options)
    n = options.events
    if options.operator == "bandjoin":
        left = p | "Left" >> pm.Create(readings(n // 2, "l", 1))
        right = p | "Right" >> pm.Create(readings(n // 2, "r", 2))
        out = (left, right) | "BandJoin" >> band_join(options.parallelism)
        step = "BandJoin"
    else:
        source = p | "Tweets" >> pm.Create(tweets(n))
        keys = words if options.operator == "wordcount" else pairs
        step = options.operator.capitalize()
        if options.reconfigure is not None:
            source = source | pm.Map(_halfway, n)
        out = source | step >> counter(keys, options.parallelism)
    out.keep()
    if options.reconfigure is None:
        result = p.run()
    else:
        run = p.start()
        assert _Halfway.reached.wait(600)
        run.set_parallelism(step, options.reconfigure)
        _Halfway.go.set()
        result = run.wait_until_finish()
    rows = result.collect(out)
    m = result.metrics()[step]
    print(f"{step}: {len(rows)} outputs from {m['received']} inputs on the "
          f"{options.runner} runner, {m.get('instances', options.parallelism)} instances, "
          f"{m.get('reconfigurations', 0)} reconfigurations")
    for wv in sorted(rows, key=lambda wv: (wv.ts, repr(wv.value)))[:5]:
        print(f"  {wv.value}")


class _Halfway:
    """Holds the run halfway through its input until the reconfiguration is asked for."""
    reached = threading.Event()
    go = threading.Event()
    seen = 0


def _halfway(tweet: str, n: int) -> str:
    _Halfway.seen += 1
    if _Halfway.seen == n // 2:
        _Halfway.reached.set()
        _Halfway.go.wait(600)
    return tweet


if __name__ == "__main__":
    main()
