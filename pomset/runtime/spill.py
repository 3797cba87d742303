"""A bounded grouping larger than memory: once its state outgrows the run's budget
(`--memory_limit`), the grouping's kernel host becomes a `SpilledHost`, which writes the state
so far and every later element to hash partitions of the key on disk, then runs each
partition through a kernel host of its own when the watermark moves. Every key's elements
are in one partition, in the order they came, so every key gets the panes it gets in memory;
a partition that outgrows the budget in its turn is split again by another hash of the key,
and one key whose state alone outgrows it fails the run (`MemoryLimitError`).

The state's size is estimated, not measured: keys times the size of one key's state (its
window records, trigger state and accumulator, measured once with `deep_size` on a host of
its own), plus, for a grouping that keeps its values (GroupByKey), each bundle's elements
times the size of a sample of its values."""
from __future__ import annotations

import math
import os
import pickle
import shutil
import sys
import tempfile
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..sdk.errors import MemoryLimitError
from ..triggers.kernel import Counters
from ..triggers.reducers import BufferReducer
from ..windowing import MAX_MICROS, MIN_MICROS, WindowedValue
from .kernel_host import KernelHost
from .packing import pack, unpack
from .partitioned import split_save

#: partitions a spilled grouping writes, and at most those a partition split again writes
#: (twice what its state was estimated to take, by the budget)
FANOUT = 16
MAX_FANOUT = 256
#: elements the partitions of a split buffer, all together, before they write them as
#: pickled runs (a partition's run at least `MIN_RUN`)
BUFFERED = FANOUT * 4096
MIN_RUN = 256
#: how many times a partition is split again before the run gives up on it
MAX_DEPTH = 6
#: values of a bundle whose size is measured, and how many bundles go by between samples
SAMPLE = 8
SAMPLE_EVERY = 16

_LEAVES = (str, bytes, int, float, bool, complex, type(None))
_OPAQUE = (type, ModuleType, FunctionType, BuiltinFunctionType, MethodType)
_slots: Dict[type, tuple] = {}


def memory_budget(limit: Optional[int]) -> int:
    """The bytes a grouping's state may take: `limit` (`--memory_limit`), else half of the
    machine's physical memory."""
    if limit is not None:
        return limit
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def deep_size(obj: Any, limit: int = 10_000) -> int:
    """The bytes `obj` and the objects it references take (`sys.getsizeof`, each object once,
    at most `limit` objects; classes, modules and functions, shared by every state, left
    out)."""
    if type(obj) in _LEAVES:
        return sys.getsizeof(obj)
    seen = set()
    stack = [obj]
    total = 0
    while stack and len(seen) < limit:
        o = stack.pop()
        if id(o) in seen or isinstance(o, _OPAQUE):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, _LEAVES):
            continue
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        attrs = getattr(o, "__dict__", None)
        if attrs is not None:
            stack.extend(attrs.values())
        for name in _slots_of(type(o)):
            value = getattr(o, name, None)
            if value is not None:
                stack.append(value)
    return total


def _slots_of(cls: type) -> tuple:
    """The slot names of `cls` and its bases."""
    names = _slots.get(cls)
    if names is None:
        found: List[str] = []
        for c in cls.__mro__:
            slots = c.__dict__.get("__slots__", ())
            found += [slots] if isinstance(slots, str) else list(slots)
        names = _slots[cls] = tuple(n for n in found if n not in ("__dict__", "__weakref__"))
    return names


class StateGauge:
    """The estimated bytes of a grouping's state in memory (see the module docstring), checked
    against `budget` after each bundle."""

    def __init__(self, budget: int, new_host: Callable[[], KernelHost]) -> None:
        self.budget = budget
        self.new_host = new_host
        self.per_key: Optional[int] = None   # measured on the first bundle
        self.buffers = False
        #: the values' bytes, for a grouping that keeps them
        self.values = 0.0
        self.per_value = 0.0
        self._bundles = 0

    def over(self, host: Any, bundle: Sequence[WindowedValue]) -> bool:
        """Whether `host`'s state, having taken `bundle`, is over the budget."""
        if not bundle:
            return False
        if self.per_key is None:
            self._measure_key(bundle)
        if self.buffers:
            if self._bundles % SAMPLE_EVERY == 0:
                sample = bundle[::max(1, len(bundle) // SAMPLE)]
                size = 8 + sum(deep_size(_value(wv)) for wv in sample) / len(sample)
                self.per_value += (size - self.per_value) / (self._bundles // SAMPLE_EVERY + 1)
            self._bundles += 1
            self.values += len(bundle) * self.per_value
        return self.estimate(host.key_count()) > self.budget

    def estimate(self, keys: int) -> int:
        """The bytes of `keys` keys' states and the values counted."""
        return int(keys * (self.per_key or 0) + self.values)

    def share(self) -> "StateGauge":
        """A gauge for a part of this state, knowing what this one measured."""
        mine = StateGauge(self.budget, self.new_host)
        mine.per_key, mine.buffers = self.per_key, self.buffers
        mine.per_value, mine._bundles = self.per_value, 1
        return mine

    def _measure_key(self, bundle: Sequence[WindowedValue]) -> None:
        """What one more key's state adds to a host of its own (a second key's, where the
        bundle has two: what keys share is counted once): its record, trigger state, value
        or accumulator, wake-ups and holds."""
        scratch = self.new_host()
        self.buffers = isinstance(scratch.kernel.reducer, BufferReducer)
        first = bundle[0]
        other = next((wv for wv in bundle[1:100] if _key(wv) != _key(first)), None)
        held = (scratch.store.states, scratch.timers.queues, scratch.timers.holds)
        before = deep_size(held)
        scratch.elements((first,), [])
        if other is not None:
            before = deep_size(held)
            scratch.elements((other,), [])
        self.per_key = max(0, deep_size(held) - before)


def _key(wv: WindowedValue) -> Any:
    kv = wv.value
    return kv[0] if type(kv) is tuple and len(kv) == 2 else None


def _value(wv: WindowedValue) -> Any:
    kv = wv.value
    return kv[1] if type(kv) is tuple and len(kv) == 2 else kv


class _Partition:
    """A partition's files: its runs of elements (pickles one after another) and, where keys
    kept a state from an earlier step, that state as a host's save. A partition split again
    (`pieces`, by the key's hash at `depth` + 1) keeps no files of its own."""

    def __init__(self, directory: str, name: str, depth: int, run: int) -> None:
        self.name = name
        self.depth = depth
        self.run = run   # elements per run written
        self.pieces: Optional[List["_Partition"]] = None
        self.runs_path = os.path.join(directory, name + ".runs")
        self.save_path = os.path.join(directory, name + ".save")
        self.buffer: List[WindowedValue] = []
        self.partials = False   # whether the buffer holds partial accumulators
        self.saved = False
        self.values = 0.0   # the saved state's values' bytes, as the gauge estimated them
        self.hold = MAX_MICROS
        self.read = 0   # bytes of runs read so far

    def runs(self) -> Iterator[Tuple[bool, List[WindowedValue]]]:
        """(whether partials, elements) for each run written, in order."""
        if not os.path.exists(self.runs_path):
            return
        with open(self.runs_path, "rb") as f:
            while True:
                try:
                    partials, run = pickle.load(f)
                except EOFError:
                    return
                self.read = f.tell()
                yield partials, unpack(run)

    def remove(self) -> None:
        for path in (self.runs_path, self.save_path):
            if os.path.exists(path):
                os.remove(path)
        self.saved = False


class SpilledHost:
    """`KernelHost`'s interface over a grouping's state on disk, from `saved` (the host's
    save when it outgrew the budget) on: elements go to the partition of their key; when the
    watermark moves, each partition runs through a host of its own (`new_host`), its panes
    and late elements handed to `flush` partition by partition. Processing-time firings wait
    for the watermark's next move. `close` removes the files."""

    def __init__(self, saved: Dict[str, Any], new_host: Callable[[], KernelHost],
                 gauge: StateGauge, directory: Optional[str], label: str,
                 flush: Callable[[list, list], None]) -> None:
        self.new_host = new_host
        self.gauge = gauge
        self.label = label
        self.flush = flush
        try:
            if directory is not None:
                os.makedirs(directory, exist_ok=True)
            self.dir = tempfile.mkdtemp(prefix="pomset-spill-", dir=directory)
        except OSError as e:
            raise OSError(e.errno, f"transform {label!r}: its state outgrew the memory budget "
                                   f"and cannot spill to --temp_location={directory!r}: "
                                   f"{e.strerror}") from e
        q = saved["queues"]
        self.wm, self.pt, self.settled_wm, self.step = q["wm"], q["pt"], q["settled_wm"], q["step"]
        self.ran_wm = self.wm   # the watermark the partitions' states were left at
        self.counts: Counters = saved["counters"]
        self.spilled_bytes = 0
        self.splits = 0   # partitions split again
        try:
            self.parts = self._split(saved, 0, "p")
        except BaseException:
            self.close()
            raise

    @property
    def counters(self) -> Counters:
        return self.counts

    @property
    def input_watermark(self) -> int:
        return self.wm

    def key_count(self) -> int:
        return 0

    # --- a step ------------------------------------------------------------------------------
    def elements(self, bundle: Sequence[WindowedValue], out: list) -> None:
        """Elements to their keys' partitions (written a run at a time)."""
        self._distribute(bundle, self.parts, False)

    def partials(self, bundle: Sequence[WindowedValue], out: list) -> None:
        """Partial accumulators (`KernelHost.partials`) to their keys' partitions."""
        self._distribute(bundle, self.parts, True)

    def processing_time(self, pt: int, out: list) -> None:
        if pt > self.pt:
            self.pt = pt

    def watermark(self, wm: int, out: list) -> None:
        """The watermark moved: every partition runs through its own host to `wm`."""
        if wm <= self.wm:
            return
        self.wm = wm
        for part in self.parts:
            self._run(part)
        self.ran_wm = wm
        if wm == MAX_MICROS:
            self.close()

    def end_step(self) -> None:
        self.settled_wm = self.wm
        self.step += 1

    def hold(self) -> int:
        if self.ran_wm == MIN_MICROS:
            return MIN_MICROS   # nothing has run: no partition's hold is known
        return min(part.hold for part in self.parts)

    def next_processing_timer(self) -> Optional[int]:
        return None

    def take_late(self) -> List[WindowedValue]:
        return []

    def close(self) -> None:
        """Remove the partitions' files."""
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- internals -----------------------------------------------------------------------------
    def _split(self, saved: Optional[Dict[str, Any]], depth: int, name: str,
               n: int = FANOUT) -> List[_Partition]:
        """`n` partitions, `saved`'s states written to theirs by the key's hash at `depth`,
        each given its share of the values' bytes the gauge counted."""
        run = max(MIN_RUN, BUFFERED // n)
        parts = [_Partition(self.dir, f"{name}{i:x}", depth, run) for i in range(n)]
        if saved is None or not saved["states"]:
            return parts
        keys = len(saved["states"])
        values = self.gauge.values if depth == 0 else saved.get("values", 0.0)
        saved = dict(saved, counters=Counters())
        for part, mine in zip(parts, split_save(saved, n, _part_of(depth, n))):
            if mine["states"]:
                part.values = values * len(mine["states"]) / keys
                self._write_save(part, mine)
        return parts

    def _write_save(self, part: _Partition, saved: Dict[str, Any]) -> None:
        with open(part.save_path, "wb") as f:
            pickle.dump(saved, f, protocol=pickle.HIGHEST_PROTOCOL)
            self.spilled_bytes += f.tell()
        part.saved = True

    def _distribute(self, bundle: Sequence[WindowedValue], parts: List[_Partition],
                    partials: bool) -> None:
        """Each element (a partial accumulator if `partials`) to the partition of its key
        (`_part_of`), down through the partitions split again."""
        n, depth = len(parts), parts[0].depth
        groups: List[List[WindowedValue]] = [[] for _ in range(n)]
        for wv in bundle:
            kv = wv.value
            key = kv[0] if type(kv) is tuple and len(kv) == 2 else None
            try:
                groups[(hash((depth, key)) if depth else hash(key)) % n].append(wv)
            except TypeError:   # an unhashable key: its host's kernel says so
                groups[0].append(wv)
        for part, mine in zip(parts, groups):
            if not mine:
                continue
            if part.pieces is not None:
                self._distribute(mine, part.pieces, partials)
                continue
            if part.partials is not partials:
                self._write_run(part)
                part.partials = partials
            part.buffer += mine
            if len(part.buffer) >= part.run:
                self._write_run(part)

    def _write_run(self, part: _Partition) -> None:
        if part.buffer:
            with open(part.runs_path, "ab") as f:
                start = f.tell()
                pickle.dump((part.partials, pack(part.buffer)), f,
                            protocol=pickle.HIGHEST_PROTOCOL)
                self.spilled_bytes += f.tell() - start
            part.buffer = []

    def _host(self, part: _Partition) -> KernelHost:
        """A host with the partition's saved state, at the clocks its elements came at."""
        host = self.new_host()
        if part.saved:
            with open(part.save_path, "rb") as f:
                host.load(pickle.load(f))
        k = host.kernel.k
        k.wm = k.settled_wm = self.ran_wm
        k.step, k.pt = self.step, self.pt
        return host

    def _run(self, part: _Partition) -> None:
        """The partition's elements and saved state through a host of its own, to the
        watermark; split again by the key if its state outgrows the budget."""
        if part.pieces is not None:
            for piece in part.pieces:
                self._run(piece)
            part.hold = min(piece.hold for piece in part.pieces)
            return
        self._write_run(part)
        if not part.saved and not os.path.exists(part.runs_path):
            part.hold = MAX_MICROS
            return
        host = self._host(part)
        gauge = self.gauge.share()
        gauge.values = part.values
        out: list = []
        host.processing_time(self.pt, out)
        runs = part.runs()
        for partials, run in runs:
            (host.partials if partials else host.elements)(run, out)
            if gauge.over(host, run):
                runs.close()
                keys, first = host.key_count(), next(iter(host.store.states), None)
                host = out = run = None   # its memory goes before the pieces run
                self._outgrown(part, keys, first, gauge)
                return
        host.watermark(self.wm, out)
        self.flush(out, host.take_late())
        c = host.counters
        self.counts.late += c.late
        self.counts.dropped_expired += c.dropped_expired
        self.counts.dropped_closed += c.dropped_closed
        part.hold = host.hold()
        part.remove()
        if host.store.states:
            saved = host.save()
            saved["counters"] = Counters()
            part.values = gauge.values
            self._write_save(part, saved)

    def _outgrown(self, part: _Partition, keys: int, first: Any, gauge: StateGauge) -> None:
        """A partition over the budget (its host held `keys` keys, `first` the first): split
        again by the key, each piece run in turn; one key alone over it (or a partition split
        `MAX_DEPTH` times) fails the run."""
        depth = part.depth
        if keys <= 1 or depth >= MAX_DEPTH:
            what = (f"the state of key {first!r}" if keys <= 1
                    else f"a partition of {keys} keys, split {depth} times,")
            raise MemoryLimitError(
                f"transform {self.label!r}: {what} alone outgrew the memory budget of "
                f"{gauge.budget} bytes (--memory_limit), taking about {gauge.estimate(keys)} "
                f"bytes when the run stopped; a grouping spills its keys to disk, not one "
                f"key's values: raise --memory_limit, or spread the key (add a sub-key, "
                f"combine before grouping)")
        saved = None
        if part.saved:
            with open(part.save_path, "rb") as f:
                saved = pickle.load(f)
            saved["values"] = part.values
        self.splits += 1
        saved_bytes = os.path.getsize(part.save_path) if part.saved else 0
        read = (saved_bytes + part.read) / (saved_bytes + os.path.getsize(part.runs_path))
        n = min(MAX_FANOUT, max(FANOUT, math.ceil(2 * gauge.estimate(keys) / read
                                                  / gauge.budget)))
        pieces = self._split(saved, depth + 1, part.name + "-", n)
        for partials, run in part.runs():
            self._distribute(run, pieces, partials)
        part.remove()
        part.pieces = pieces
        self._run(part)


def _part_of(depth: int, n: int) -> Callable[[Any], int]:
    """A key's partition of `n` at `depth` of splitting: its hash, salted by the depth below
    the top."""
    if depth == 0:
        return lambda key: hash(key) % n
    return lambda key: hash((depth, key)) % n
