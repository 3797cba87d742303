"""A grouping's kernel split into buckets by key (Prasaad et al., Sec. 4: partitioned stateful
operators), each bucket its own `KernelHost` with its own states, wake-ups and holds, so that
several workers can run one grouping at once.

`PartitionedHost` is the driver's side, with `KernelHost`'s interface: it splits each call's
work by bucket, gives it to `Lanes` (whatever runs the buckets: threads over a hybrid queue,
processes that each own some buckets) and merges the panes they return. Only buckets with
work get a call: a bucket with no elements and no wake-up due learns the clocks it missed
(watermark, processing time, step) with its next call, which fires nothing it would not have
fired then, since it had nothing due.

The panes come as the one host's would: per key in the same order, and across keys those of
a bundle's elements in element order, those of wake-ups in time order; panes of different
keys due at the same instant come bucket by bucket (the one host gives them in the order
their wake-ups were asked for).
"""
from __future__ import annotations

import heapq
from operator import itemgetter
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple

from ..triggers.definitions import EVENT_TIME, PROCESSING_TIME
from ..triggers.kernel import Counters, TimeView
from ..windowing import MAX_MICROS, MIN_MICROS, WindowedValue
from .kernel_host import KernelHost
from .timers import slotted, unslotted

ELEMENTS, PARTIALS, PROCESSING, WATERMARK, SAVE, LOAD = range(6)

#: (step, settled_wm, wm, pt, op, payload): the driver's clocks, then what to do
Job = Tuple[int, int, int, int, int, Any]
#: (panes as (order key, pane) pairs, hold, next processing-time and event-time wake-ups,
#: counters as (late, dropped_expired, dropped_closed), keys with a state); a SAVE's reply
#: is the bucket's save
Reply = Tuple[list, int, Optional[int], Optional[int], Tuple[int, int, int], int]


def bucket_of(key: Any, buckets: int) -> int:
    """The bucket of a key: by its hash, the same in every worker a run forks."""
    return hash(key) % buckets


class _Tagged(list):
    """The panes a bucket emits, each with the key that orders it: the index of the element
    that caused it, or the instant of the wake-up that fired it (`KernelHost.firing`)."""

    __slots__ = ("host",)

    def append(self, pane: Any) -> None:
        list.append(self, (self.host.firing, pane))


class Bucket:
    """One bucket's host, on whichever worker runs it."""

    def __init__(self, host: KernelHost) -> None:
        self.host = host

    def serve(self, job: Job) -> Any:
        step, settled_wm, wm, pt, op, payload = job
        host = self.host
        k = host.kernel.k
        if k.step != step:
            k.step, k.settled_wm = step, settled_wm
        if wm > k.wm:
            k.wm = wm
        if pt > k.pt:
            k.pt = pt
        if op == SAVE:
            return host.save()
        if op == LOAD:
            host.load(payload)
            return self._reply([])
        out = _Tagged()
        out.host = host
        if op == ELEMENTS or op == PARTIALS:
            indices, elements = payload
            add = host.elements if op == ELEMENTS else host.partials
            add(self._indexed(indices, elements), out)
        elif op == PROCESSING:
            host.processing_time(payload, out)
        else:
            host.watermark(payload, out)
        return self._reply(out)

    def _indexed(self, indices: Sequence[int], elements: Sequence[WindowedValue]) -> Any:
        host = self.host
        for i, wv in zip(indices, elements):
            host.firing = i
            yield wv

    def _reply(self, out: list) -> Reply:
        host = self.host
        c = host.counters
        return (list(out), host.hold(), host.next_wake_up(PROCESSING_TIME),
                host.next_wake_up(EVENT_TIME), (c.late, c.dropped_expired, c.dropped_closed),
                host.key_count())


class Lanes(Protocol):
    """Runs buckets' jobs: `run` takes (bucket, job) pairs, at most one per bucket, and
    returns their replies in the same order, raising the first bucket's error if any failed."""

    def run(self, jobs: List[Tuple[int, Job]]) -> List[Any]:
        ...


class PartitionedHost:
    """`KernelHost`'s interface over `buckets` buckets run by `lanes`."""

    def __init__(self, buckets: int, lanes: Lanes) -> None:
        self.buckets = buckets
        self.lanes = lanes
        k = TimeView()
        self.wm, self.pt, self.settled_wm, self.step = k.wm, k.pt, k.settled_wm, k.step
        self.out_wm = MIN_MICROS
        self.holds = [MAX_MICROS] * buckets
        self.next_pt: List[Optional[int]] = [None] * buckets
        self.next_et: List[Optional[int]] = [None] * buckets
        self.counts: List[Tuple[int, int, int]] = [(0, 0, 0)] * buckets
        self.keys = [0] * buckets

    @property
    def counters(self) -> Counters:
        c = Counters()
        c.late, c.dropped_expired, c.dropped_closed = (sum(x) for x in zip(*self.counts))
        return c

    @property
    def input_watermark(self) -> int:
        return self.wm

    # --- a step ------------------------------------------------------------------------------
    def elements(self, bundle: Sequence[WindowedValue], out: list) -> None:
        self._add(ELEMENTS, bundle, out)

    def partials(self, bundle: Sequence[WindowedValue], out: list) -> None:
        self._add(PARTIALS, bundle, out)

    def processing_time(self, pt: int, out: list) -> None:
        if pt > self.pt:
            self.pt = pt
        due = [b for b, t in enumerate(self.next_pt) if t is not None and t <= self.pt]
        if due:
            self._run([(b, self._job(PROCESSING, self.pt)) for b in due], out)

    def watermark(self, wm: int, out: list) -> None:
        before = self.wm
        if wm > self.wm:
            self.wm = wm
        due = [b for b, t in enumerate(self.next_et) if t is not None and t <= self.wm]
        if due:
            self._run([(b, self._job(WATERMARK, self.wm, wm=before)) for b in due], out)

    def end_step(self) -> None:
        self.settled_wm = self.wm
        self.step += 1

    def hold(self) -> int:
        return min(self.holds)

    def next_processing_timer(self) -> Optional[int]:
        due = [t for t in self.next_pt if t is not None]
        return min(due) if due else None

    # --- state ---------------------------------------------------------------------------------
    def save(self) -> Dict[str, Any]:
        """The buckets' saves merged into one host's (`KernelHost.save`): a checkpoint restores
        at any number of buckets, or into one host."""
        saves = self.lanes.run([(b, self._job(SAVE, None)) for b in range(self.buckets)])
        states: Dict[Any, Any] = {}
        timers: Dict[str, list] = {EVENT_TIME: [], PROCESSING_TIME: []}
        holds: list = []
        for saved in saves:
            states.update(saved["states"])
            for domain, slots in saved["queues"]["timers"].items():
                timers[domain] += unslotted(slots)
            holds += saved["queues"]["holds"]
        queues = dict(wm=self.wm, pt=self.pt, settled_wm=self.settled_wm, step=self.step,
                      out_wm=self.out_wm, timers={d: slotted(w) for d, w in timers.items()},
                      holds=holds)
        return dict(states=states, queues=queues, counters=self.counters)

    def load(self, saved: Dict[str, Any]) -> None:
        q = saved["queues"]
        self.wm, self.pt, self.settled_wm, self.step = q["wm"], q["pt"], q["settled_wm"], q["step"]
        self.out_wm = q["out_wm"]
        parts = split_save(saved, self.buckets, lambda key: bucket_of(key, self.buckets))
        self._apply(list(enumerate(self.lanes.run(
            [(b, self._job(LOAD, part)) for b, part in enumerate(parts)]))))

    def key_count(self) -> int:
        """The keys the buckets held a state for at their last reply."""
        return sum(self.keys)

    # --- internals -----------------------------------------------------------------------------
    def _job(self, op: int, payload: Any, wm: Optional[int] = None) -> Job:
        return (self.step, self.settled_wm, self.wm if wm is None else wm, self.pt, op, payload)

    def _add(self, op: int, bundle: Sequence[WindowedValue], out: list) -> None:
        n = self.buckets
        parts: Dict[int, Tuple[list, list]] = {}
        for i, wv in enumerate(bundle):
            kv = wv.value
            b = 0   # not a (key, value) pair, or an unhashable key: the kernel says so
            if type(kv) is tuple and len(kv) == 2:
                try:
                    b = hash(kv[0]) % n
                except TypeError:
                    pass
            part = parts.get(b)
            if part is None:
                part = parts[b] = ([], [])
            part[0].append(i)
            part[1].append(wv)
        self._run([(b, self._job(op, parts[b])) for b in sorted(parts)], out)

    def _run(self, jobs: List[Tuple[int, Job]], out: list) -> None:
        replies = self.lanes.run(jobs)
        self._apply([(b, r) for (b, _), r in zip(jobs, replies)])
        panes = [r[0] for r in replies if r[0]]
        if len(panes) == 1:
            out += map(itemgetter(1), panes[0])
        elif panes:
            out += map(itemgetter(1), heapq.merge(*panes, key=itemgetter(0)))

    def _apply(self, replies: List[Tuple[int, Reply]]) -> None:
        for b, (_, hold, next_pt, next_et, counts, keys) in replies:
            self.holds[b], self.next_pt[b], self.next_et[b] = hold, next_pt, next_et
            self.counts[b], self.keys[b] = counts, keys


def split_save(saved: Dict[str, Any], parts: int,
               part_of: Callable[[Any], int]) -> List[Dict[str, Any]]:
    """One host's save (`KernelHost.save`) split into `parts` saves by `part_of` each key:
    each part's states, wake-ups and holds, the clocks in every part, the counters in the
    first."""
    q = saved["queues"]
    out = [dict(states={}, counters=Counters(),
                queues=dict(q, timers={d: [] for d in q["timers"]}, holds=[]))
           for _ in range(parts)]
    out[0]["counters"] = saved["counters"]
    for key, ks in saved["states"].items():
        out[part_of(key)]["states"][key] = ks
    for domain, slots in q["timers"].items():
        for time, by_window in unslotted(slots):
            split: Dict[int, list] = {}
            for window, keys in by_window:
                for b, mine in _by_part(keys, 1, part_of).items():
                    split.setdefault(b, []).append((window, mine))
            for b, mine in split.items():
                out[b]["queues"]["timers"][domain].append((time, mine))
    for part in out:
        part["queues"]["timers"] = {d: slotted(w) for d, w in part["queues"]["timers"].items()}
    for time, entries in q["holds"]:
        for b, mine in _by_part(entries, 2, part_of).items():
            out[b]["queues"]["holds"].append((time, mine))
    return out


def _by_part(flat: list, stride: int, part_of: Callable[[Any], int]) -> Dict[int, list]:
    """Flat saved entries (keys, or key, window pairs) split by their key's part."""
    out: Dict[int, list] = {}
    for i in range(0, len(flat), stride):
        out.setdefault(part_of(flat[i]), []).extend(flat[i:i + stride])
    return out


def new_buckets(factory: Callable[[], KernelHost], buckets: int) -> List[Bucket]:
    """`buckets` buckets, each with a host of its own."""
    return [Bucket(factory()) for _ in range(buckets)]
