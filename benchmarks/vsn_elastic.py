"""O+ by VSN parallelism (STRETCH): reconfiguration time against a shared-nothing baseline
(the paper's Table IV / Fig. 9), and shared input against duplication (Fig. 6).

- **reconfiguration**: a wordcount-shaped O+ holding K keys' windows (each with a counter and
  a list of ten readings) is changed from 1 instance to 2 and back, and from 2 to 4 and back.
  VSN: the time from the barrier (every tuple before the control message's time processed)
  to the new configuration running: the bucket map swapped, instances connected to or
  disconnected from the gates, no state moved. Shared-nothing baseline: the same change when
  each instance owns its state, so the buckets whose owner changes are pickled and unpickled
  into the new owner's state (what moving state between processes or machines costs at
  least). K = 10,000, 100,000 and 300,000 keys (two windows each).
- **shared input vs duplication**: paircount (each tweet's keys are its pairs of nearby words:
  about 2.3 keys a word) and wordcount over the same tweets. VSN: one deployment, its
  instances reading the one input gate and sharing one state. Shared-nothing (Corollary 1):
  each tweet copied to every key, each copy routed to the instance owning the key, each
  instance a deployment of its own fed its copies. Tweets per second at 1 and 2 instances
  (threads), outputs checked equal; with a calibration (independent Python work in 1 and 2
  processes) from the same run: instances are threads, and the operator's functions are
  Python, so neither side gains from a second instance here; the figure is what duplication
  costs.

    .venv/bin/python benchmarks/vsn_elastic.py            # writes its block of BENCHMARKS.md
    .venv/bin/python benchmarks/vsn_elastic.py --profile  # cProfile of VSN paircount
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pickle
import platform
import pstats
import random
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import pomset as pm  # noqa: E402
from pomset.runtime.ordered.vsn import BUCKETS, VSNDeployment  # noqa: E402
from ordered_parallel import calibration  # noqa: E402
from results import write_block  # noqa: E402

BEGIN, END = "<!-- vsn-elastic-results:begin -->", "<!-- vsn-elastic-results:end -->"
WORDS = [f"w{i}" for i in range(200)]


def count(w: Any, value: Any, emit: Any) -> None:
    w.state[0] += 1
    w.state[1].append(value[1] if isinstance(value, tuple) else 0.0)
    if len(w.state[1]) > 10:
        del w.state[1][0]


def report(w: Any, emit: Any) -> None:
    emit((w.key, w.start, w.state[0]))


def op(keys: Any, parallelism: int, most: int = 8) -> pm.OPlus:
    return pm.OPlus(advance=60, size=120, keys=keys, initial=lambda: [0, []], update=count,
                    output=report, parallelism=parallelism, max_parallelism=most)


# --- reconfiguration -----------------------------------------------------------------------------
def loaded(keys: int, n: int) -> VSNDeployment:
    """A deployment at `n` instances whose state holds `keys` keys' windows."""
    d = VSNDeployment(op(lambda v: [v[0]], n), "wc", 1)
    for i in range(10):
        d.add(0, [(1 + i, (k, float(i))) for k in range(keys)])
        d.advance(0, 2 + i)
        d.run()
    return d


def vsn_change(d: VSNDeployment, n: int) -> float:
    """Seconds from the barrier to `n` instances running (no state moves)."""
    d.request(n)
    d.advance(0, d.gate_in.frontier() + 1)
    d.run()
    return d.reconfigurations[-1]["seconds"]


def sn_change(d: VSNDeployment, n: int) -> float:
    """The same change when every instance owns its state: the buckets that change owner
    are pickled by the old owner and unpickled by the new one."""
    old = list(d.owner)
    new = [b % n for b in range(BUCKETS)]
    gc.disable()   # what moving costs, not the collector's passes over the new objects
    started = time.perf_counter()
    for b in range(BUCKETS):
        if old[b] != new[b]:
            bucket = d.buckets[b]
            blob = pickle.dumps((bucket.windows, bucket.ends, bucket.out),
                                protocol=pickle.HIGHEST_PROTOCOL)
            bucket.windows, bucket.ends, bucket.out = pickle.loads(blob)
    elapsed = time.perf_counter() - started
    gc.enable()
    d.request(n)
    d.advance(0, d.gate_in.frontier() + 1)
    d.run()
    return elapsed


def reconfiguration(sizes: List[int]) -> List[Dict[str, Any]]:
    rows = []
    for keys in sizes:
        for a, b in ((1, 2), (2, 4)):
            d = loaded(keys, a)
            vsn = [vsn_change(d, b), vsn_change(d, a)]
            d.close()
            d = loaded(keys, a)
            sn = [sn_change(d, b), sn_change(d, a)]
            d.close()
            rows.append(dict(keys=keys, change=f"{a}→{b}→{a}", vsn_up=vsn[0], vsn_down=vsn[1],
                             sn_up=sn[0], sn_down=sn[1]))
            print(rows[-1], flush=True)
    return rows


# --- shared input vs duplication -----------------------------------------------------------------
def tweets(n: int, seed: int = 1) -> List[Tuple[int, str]]:
    rng = random.Random(seed)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    return [(int(i * 3_600_000_000 / n), " ".join(rng.choices(WORDS, weights,
                                                             k=rng.randint(3, 12))))
            for i in range(n)]


def word_keys(tweet: str) -> set:
    return set(tweet.split())


def pair_keys(tweet: str) -> set:
    ws = tweet.split()
    return {(a, b) for i, a in enumerate(ws) for b in ws[i + 1:i + 3]}


def vsn_run(rows: List[Tuple[int, str]], keys: Any, n: int) -> Tuple[float, list]:
    started = time.perf_counter()
    d = VSNDeployment(op(keys, n), "op", 1)
    d.add(0, rows)
    d.advance(0, float("inf"))
    out = d.run()
    d.close()
    return time.perf_counter() - started, out


def sn_run(rows: List[Tuple[int, str]], keys: Any, n: int) -> Tuple[float, list]:
    """Corollary 1: a map copies each tuple to its keys and routes each copy to the instance
    owning the key; each instance runs alone on its copies."""
    from pomset.traces.hashing import stable_hash
    started = time.perf_counter()
    queues: List[list] = [[] for _ in range(n)]
    for ts, tweet in rows:
        for k in keys(tweet):
            queues[stable_hash(k) % BUCKETS % n].append((ts, tweet, k))
    outs: List[list] = [[] for _ in range(n)]

    def instance(j: int) -> None:
        d = VSNDeployment(op(keys, 1), "op", 1)
        d.add_keyed(0, queues[j])
        d.advance(0, float("inf"))
        outs[j] = d.run()
        d.close()
    threads = [threading.Thread(target=instance, args=(j,)) for j in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    return elapsed, sorted((ts, v) for out in outs for ts, v in out)


def sharing(n_tweets: int, repeats: int) -> List[Dict[str, Any]]:
    rows = tweets(n_tweets)
    out = []
    for name, keys in (("wordcount", word_keys), ("paircount", pair_keys)):
        copies = sum(len(keys(t)) for _, t in rows)
        for n in (1, 2):
            vsn_t, vsn_out = min((vsn_run(rows, keys, n) for _ in range(repeats)),
                                 key=lambda r: r[0])
            sn_t, sn_out = min((sn_run(rows, keys, n) for _ in range(repeats)),
                               key=lambda r: r[0])
            assert sorted(vsn_out) == sn_out, f"{name} at {n}: VSN and SN outputs differ"
            out.append(dict(op=name, instances=n, copies=copies / len(rows),
                            vsn=len(rows) / vsn_t, sn=len(rows) / sn_t, outputs=len(vsn_out)))
            print(out[-1], flush=True)
    return out


def render(reconf: List[Dict[str, Any]], shared: List[Dict[str, Any]], cal: float,
           args: Any) -> str:
    ms = lambda s: f"{s * 1000:.2f} ms"   # noqa: E731
    lines = [f"Measured on {platform.machine()}, "
             f"{os.cpu_count()} cores, Python {platform.python_version()}.", "",
             "**Reconfiguration (Table IV / Fig. 9)**: from the barrier to the new instances "
             "running.", "",
             "| keys in state | change | VSN up | VSN down | shared-nothing up | "
             "shared-nothing down |", "|---|---|---|---|---|---|"]
    for r in reconf:
        lines.append(f"| {r['keys']:,} | {r['change']} | **{ms(r['vsn_up'])}** | "
                     f"**{ms(r['vsn_down'])}** | {ms(r['sn_up'])} | {ms(r['sn_down'])} |")
    lines += ["", f"**Shared input vs duplication (Fig. 6)**: {args.tweets:,} tweets, best of "
              f"{args.repeats}; calibration (independent Python work, 2 processes over 1) "
              f"**{cal:.2f}x**.", "",
              "| operator | keys per tweet | instances | VSN (shared) | shared-nothing "
              "(duplicated) | VSN / SN |", "|---|---|---|---|---|---|"]
    for r in shared:
        lines.append(f"| {r['op']} | {r['copies']:.1f} | {r['instances']} | "
                     f"{r['vsn']:,.0f} tweets/s | {r['sn']:,.0f} tweets/s | "
                     f"**{r['vsn'] / r['sn']:.2f}x** |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,300000")
    ap.add_argument("--tweets", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.profile:
        rows = tweets(args.tweets)
        with tempfile.TemporaryDirectory() as tmp:
            cProfile.runctx("vsn_run(rows, pair_keys, 1)", globals(), {"rows": rows},
                            os.path.join(tmp, "prof"))
            pstats.Stats(os.path.join(tmp, "prof")).sort_stats("tottime").print_stats(12)
        return
    one = calibration(1, 20_000_000)
    two = calibration(2, 20_000_000)
    shared = sharing(args.tweets, args.repeats)
    gc.collect()
    reconf = reconfiguration([int(s) for s in args.sizes.split(",")])
    block = render(reconf, shared, one / two * 2, args)
    print(block)
    if not args.no_write:
        write_block(BEGIN, END, block)


if __name__ == "__main__":
    main()
