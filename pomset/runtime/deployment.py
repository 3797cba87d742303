"""How a template step runs, on any runner: its items placed in blocks between markers, its
markers derived from the watermark, and its deployment as parallel instances (Theorem 4.3).

Blocks. An item with timestamp t belongs before marker `t // P + 1` (P the period): the last
place the marker promise allows, so a step's trace is a function of its data and not of when
items arrived, and batch, streaming and every runner see the same one. The first marker is
the one closing the block of the step's earliest item; marker i is passed once the input
watermark reaches i * P; at the end of the input, markers run to the block of the last item.
As a source's markers reach every step downstream of it, a step's markers also cover the
range of every typed edge and template step upstream (`ranges`), whatever items reach it.
Items at the end of time (the global window's panes) form a final block, closed by a final
marker. An item whose block was already closed (late data) joins the open block, counted.

Deployment. Stateless steps deal items round-robin to `parallelism` instances; keyed ones
send each key to instance `stable_hash(key) % parallelism`; every instance sees every marker.
Instances' outputs are merged: within a block, any interleaving of their sequences (random,
given an `rng`); all of a block's outputs come before its marker. A host may run the
instances elsewhere (the local runner's worker processes): it replaces them with stand-ins
that take items and markers, and sets `flush`, which runs what they took before each merge. A fused Sort orders each
block's items by the sort key before the instances see them.
"""
from __future__ import annotations

import random
import sys
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from ..sdk.errors import UserCodeError
from ..traces.hashing import stable_hash
from ..traces.templates import OpKeyedOrdered, TemplateStep
from ..traces.types import KeyValueType, Marker, type_name, value_fits
from ..windowing import GLOBAL_WINDOW, NO_FIRING, WindowedValue
from ..windowing.time import GLOBAL_WINDOW_MAX_MICROS
from .elementwise import user_code_error
from .markers import MarkerRange

FINAL = sys.maxsize   # the block closed by the final marker


def block_of(ts: int, period: int) -> int:
    return FINAL if ts >= GLOBAL_WINDOW_MAX_MICROS else ts // period + 1


def time_range(elements: Iterable[Any]) -> MarkerRange:
    """The earliest and latest timestamps of elements before the end of time: the marker
    range a typed edge carries downstream."""
    times = [wv.ts for wv in elements if wv.ts < GLOBAL_WINDOW_MAX_MICROS]
    return MarkerRange(min(times), max(times)) if times else MarkerRange()


def range_blocks(ranges: Iterable[MarkerRange], period: int
                 ) -> Tuple[Optional[int], Optional[int]]:
    """The first and last blocks that marker ranges cover."""
    ranges = list(ranges)
    los = [r.earliest for r in ranges if r.earliest is not None]
    his = [r.latest for r in ranges if r.latest is not None
           and r.latest < GLOBAL_WINDOW_MAX_MICROS]
    return (block_of(min(los), period) if los else None,
            block_of(max(his), period) if his else None)


def as_items(elements: Iterable[WindowedValue]) -> List[Tuple[int, Any]]:
    """Elements as the (timestamp, item) pairs a deployment takes."""
    return [(wv.ts, wv.value) for wv in elements]


def block_range(first: Optional[int], last: Optional[int], period: int) -> MarkerRange:
    """The marker range of the blocks `first` to `last` (Nones where unknown): from the first
    one's start to the last one's end."""
    return MarkerRange(None if first is None else (first - 1) * period,
                       None if last is None else last * period - 1)


def as_elements(outs: List[Tuple[int, Any]]) -> List[WindowedValue]:
    """A deployment's outputs (timestamp, item) as elements: templates emit into the global
    window, with no pane."""
    raw = WindowedValue.raw
    return [raw(item, ts, GLOBAL_WINDOW, NO_FIRING, 1) for ts, item in outs]


def marker_of(block: int, period: int) -> Marker:
    if block == FINAL:
        return Marker(FINAL, GLOBAL_WINDOW_MAX_MICROS + 1, final=True)
    return Marker(block, block * period)


class _Out:
    """An instance's output channel: (timestamp, item) in emission order. `emit` checks what
    the template promises (an ordered operator keeps the key; declared output types)."""

    __slots__ = ("items", "ts", "key", "check_key", "out_type", "label", "make")

    def __init__(self, out_type: KeyValueType, label: str, check_key: bool) -> None:
        self.items: List[Tuple[int, Any]] = []
        self.ts = 0
        self.key: Any = None
        self.check_key = check_key
        self.out_type = out_type
        self.label = label
        self.make = out_type.item

    def emit(self, key: Any, value: Any) -> None:
        t = self.out_type
        if self.check_key and key != self.key:
            raise UserCodeError(
                f"OpKeyedOrdered {self.label!r} emitted key {key!r} while processing key "
                f"{self.key!r}: an ordered operator's outputs keep the input key (Table 1)")
        if not (value_fits(key, t.key) and value_fits(value, t.value)):
            raise UserCodeError(
                f"{self.label!r} emitted ({key!r}, {value!r}), which is not of its output type "
                f"{t!r} (key {type_name(t.key)}, value {type_name(t.value)})")
        self.items.append((self.ts, self.make(key, value)))


class _Instance:
    """One instance of a template: its state for the keys routed to it."""

    def __init__(self, template: Any, out: _Out, label: str) -> None:
        self.t = template
        self.out = out
        self.label = label
        self.states: Dict[Any, Any] = {}

    def item(self, ts: int, key: Any, value: Any, element: Any) -> None:
        raise NotImplementedError

    def marker(self, m: Marker) -> None:
        """Nothing per instance (stateless): the step runs its on_marker once."""


class _Stateless(_Instance):
    def item(self, ts: int, key: Any, value: Any, element: Any) -> None:
        self.out.ts = ts
        try:
            self.t.on_item(key, value, self.out.emit)
        except UserCodeError:
            raise
        except Exception as e:
            raise user_code_error(self.label, element, e) from e


class _KeyedOrdered(_Instance):
    def item(self, ts: int, key: Any, value: Any, element: Any) -> None:
        out, states, t = self.out, self.states, self.t
        out.ts, out.key = ts, key
        try:
            state = states[key] if key in states else t.initial_state()
            states[key] = t.on_item(state, key, value, out.emit)
        except UserCodeError:
            raise
        except Exception as e:
            raise user_code_error(self.label, element, e) from e

    def marker(self, m: Marker) -> None:
        out, states, on_marker = self.out, self.states, self.t.on_marker
        out.ts = m.micros - 1
        for key, state in states.items():
            out.key = key
            try:
                states[key] = on_marker(state, key, m, out.emit)
            except UserCodeError:
                raise
            except Exception as e:
                raise user_code_error(self.label, f"key {key!r} at {m!r}", e) from e


class _KeyedUnordered(_Instance):
    """The paper's Table 3, per key: [aggregate since the last marker, state at it]. A key's
    state starts at initial_state() when its first item comes (Table 3 instead advances a
    shared start state by update_state(s, id()) at every marker; for the usual update
    functions that is the same, and this way the result does not depend on where a
    deployment's markers start)."""

    def item(self, ts: int, key: Any, value: Any, element: Any) -> None:
        t, out = self.t, self.out
        out.ts = ts
        try:
            rec = self.states.get(key)
            if rec is None:
                rec = self.states[key] = [t.id(), t.initial_state()]
            t.on_item(rec[1], key, value, out.emit)
            rec[0] = t.combine(rec[0], t.in_(key, value))
        except UserCodeError:
            raise
        except Exception as e:
            raise user_code_error(self.label, element, e) from e

    def marker(self, m: Marker) -> None:
        t, out = self.t, self.out
        out.ts = m.micros - 1
        for key, rec in self.states.items():
            try:
                rec[1] = t.update_state(rec[1], rec[0])
                rec[0] = t.id()
                t.on_marker(rec[1], key, m, out.emit)
            except UserCodeError:
                raise
            except Exception as e:
                raise user_code_error(self.label, f"key {key!r} at {m!r}", e) from e


class Deployment:
    """A template step deployed as `parallelism` instances, fed elements and watermarks by
    its host (a local-runner stage, a Spark task). `receive`, `advance` and `finish` return
    the outputs as (timestamp, item) in the merged order; `hint` gives it the marker range of
    the steps upstream. `stage_markers` False leaves the
    stateless on_marker to another host (Spark runs it once, on the driver); `sort` is the
    order of a Sort fused into this step."""

    def __init__(self, step: TemplateStep, label: str, parallelism: Optional[int] = None,
                 rng: Optional[random.Random] = None, stage_markers: bool = True,
                 sort: Optional[Callable[[Any], Any]] = None) -> None:
        self.step = step
        self.label = label
        self.period = step.period
        self.in_type: KeyValueType = step.input_trace.type
        self.out_type: KeyValueType = step.output_trace.type
        self.sort = sort or step.sort
        self.rng = rng
        self.n = parallelism or step.parallelism
        t = step.template
        kind = {"stateless": _Stateless, "keyed_ordered": _KeyedOrdered,
                "keyed_unordered": _KeyedUnordered}[step.kind()]
        self.keyed = kind is not _Stateless
        ordered = isinstance(t, OpKeyedOrdered)
        self.instances = [kind(t, _Out(self.out_type, label, ordered), label)
                          for _ in range(self.n)]
        self.stage_out = _Out(self.out_type, label, False)
        self.on_marker = t.on_marker if not self.keyed and stage_markers else None
        self.pending: Dict[int, list] = {}   # block -> [(ts, key, value, element)]
        self.open: Optional[int] = None      # the block items go to now; None before the first
        self.last = None                     # the last regular block that had an item
        self.wm = -(2 ** 63)
        self.turn = 0
        self.late = 0
        self.first: Optional[int] = None   # the first marker's block
        self.end: Optional[int] = None     # the last marker passed when the input ended
        self.first_hint: Optional[int] = None
        self.last_hint: Optional[int] = None
        self.check = self._checker()
        # where the instances run elsewhere (worker processes), what sends them the items and
        # markers handed to them so far and puts their outputs in their channels
        self.flush: Optional[Callable[[], None]] = None

    # --- input ----------------------------------------------------------------------------
    def _checker(self) -> Callable[[Any], Tuple[Any, Any]]:
        """The (key, value) of an input item, checked against the input type (only its
        shape when the type admits any key and value)."""
        t, label = self.in_type, self.label
        key_type, value_type = t.key, t.value

        def pair(element: Any) -> Tuple[Any, Any]:
            if not t.keyed:
                return None, element
            if type(element) is not tuple or len(element) != 2:
                raise UserCodeError(f"{label!r}: its input is {t!r}, so items are (key, "
                                    f"value) pairs; got {element!r}")
            return element
        if key_type is Any and value_type is Any:
            return pair

        def check(element: Any) -> Tuple[Any, Any]:
            key, value = pair(element)
            if not (value_fits(key, key_type) and value_fits(value, value_type)):
                raise UserCodeError(f"{label!r}: input item {element!r} is not of type {t!r}")
            return key, value
        return check

    def receive(self, elements: List[Tuple[int, Any]]) -> List[Tuple[int, Any]]:
        """Take elements (timestamp µs, value): the open block's are processed now (unless a
        fused Sort must see the whole block), later blocks' wait for their markers."""
        period, pending, check, is_open = self.period, self.pending, self.check, self.open
        at_once = self.sort is None   # a fused Sort must see the whole block first
        now: list = []
        last = self.last
        for ts, element in elements:
            key, value = check(element)
            b = block_of(ts, period)
            if is_open is not None and b < is_open:
                self.late += 1
                b = is_open
            if b != FINAL and (last is None or b > last):
                last = b
            if b == is_open and at_once:
                now.append((ts, key, value, element))
            else:
                pending.setdefault(b, []).append((ts, key, value, element))
        self.last = last
        self._process(now)
        out = self._merge()
        if self.open is None:
            out += self.advance(self.wm)
        return out

    def map_all(self, elements: List[Tuple[int, Any]]) -> List[Tuple[int, Any]]:
        """A stateless step's outputs for elements at hand all at once (a batch task): its
        instances do not depend on blocks, so they need not wait for markers."""
        check = self.check
        items = []
        for ts, element in elements:
            key, value = check(element)
            items.append((ts, key, value, element))
        self._process(items)
        return self._merge()

    def markers_between(self, first: int, last: int, final: bool) -> List[Tuple[int, Any]]:
        """Pass markers `first`..`last` (and the final one) with no items: the stateless
        on_marker of a step whose instances run elsewhere (Spark's tasks)."""
        out: list = []
        for block in range(first, last + 1):
            out += self._close(block)
        return out + (self._close(FINAL) if final else [])

    def _process(self, items: list) -> None:
        if not items:
            return
        instances, n = self.instances, self.n
        if n == 1:
            inst = instances[0]
            for ts, key, value, element in items:
                inst.item(ts, key, value, element)
        elif self.keyed:
            for ts, key, value, element in items:
                instances[stable_hash(key) % n].item(ts, key, value, element)
        else:
            turn = self.turn
            for ts, key, value, element in items:
                instances[turn].item(ts, key, value, element)
                turn = (turn + 1) % n
            self.turn = turn

    # --- markers --------------------------------------------------------------------------
    def advance(self, wm: int) -> List[Tuple[int, Any]]:
        """The input watermark moved to `wm`: pass every marker it reaches."""
        self.wm = max(self.wm, wm)
        out: list = []
        period = self.period
        if self.open is None:
            starts = [b for b in (min(self.pending, default=None), self.first_hint)
                      if b is not None]
            if not starts:
                return out
            first = min(starts)
            if first != FINAL and (first - 1) * period > self.wm:
                return out   # an earlier item may still come
            if first == FINAL:
                return out   # only items at the end of time: they wait for the end
            self.open = self.first = first
            if self.sort is None:
                self._process(self._take(first))
        while self.open != FINAL and self.open * period <= self.wm:
            out += self._close(self.open)
            self.open += 1
            if self.sort is None:
                self._process(self._take(self.open))
        return out + self._merge()

    def hint(self, ranges: List[MarkerRange]) -> None:
        """The marker ranges of the edges upstream (`Fusion.range_sources`): this step's
        markers start no later than the earliest's block and, when the input ends, run at
        least to the latest's, as the markers of a source reach every step downstream of it."""
        self.first_hint, self.last_hint = range_blocks(ranges, self.period)

    def span(self) -> MarkerRange:
        """This step's marker range, for steps after it."""
        return block_range(self.first, self.end if self.end is not None else self.last,
                           self.period)

    def finish(self, last: Optional[int] = None) -> List[Tuple[int, Any]]:
        """The input ended: markers up to the block of the last item, or later to `last`
        (the last block over all of the step's instances, when a host runs them apart) or
        to the upstream range's end, then the final marker if items wait at the end of
        time."""
        ends = [b for b in (self.last, last, self.last_hint) if b is not None]
        end = self.end = max(ends) if ends else None
        out: list = []
        if end is not None:
            out += self.advance(end * self.period)
        if FINAL in self.pending:
            if self.open is None:
                self.open = FINAL
            elif self.open != FINAL:
                self.pending.setdefault(FINAL, []).extend(self._take(self.open))
                self.open = FINAL
            out += self._close(FINAL)
        return out

    def _take(self, block: int) -> list:
        return self.pending.pop(block, [])

    def _close(self, block: int) -> List[Tuple[int, Any]]:
        """The open block's last items (all of them, sorted, with a fused Sort), then its
        marker to every instance, then the merged outputs."""
        items = self._take(block)
        if items:
            if self.sort is not None:
                items = self._sorted(items)
            self._process(items)
        m = marker_of(block, self.period)
        for inst in self.instances:
            inst.marker(m)
        out = self._merge()
        if self.on_marker is not None:
            self.stage_out.ts = m.micros - 1
            try:
                self.on_marker(m, self.stage_out.emit)
            except UserCodeError:
                raise
            except Exception as e:
                raise user_code_error(self.label, repr(m), e) from e
            out += self.stage_out.items
            self.stage_out.items = []
        return out

    def _sorted(self, items: list) -> list:
        """A block's items by the Sort's order; items the order ties are ordered by their keys'
        and values' repr and their timestamps, so the result never depends on arrival."""
        keyed = []
        for item in items:
            try:
                keyed.append((self.sort(item[2]), item))
            except Exception as e:
                raise user_code_error(self.label, item[3], e) from e
        keyed.sort(key=lambda x: x[0])
        out, i = [], 0
        while i < len(keyed):
            j = i + 1
            while j < len(keyed) and keyed[j][0] == keyed[i][0]:
                j += 1
            run = [x[1] for x in keyed[i:j]]
            if len(run) > 1:
                run.sort(key=lambda it: (repr(it[1]), repr(it[2]), it[0]))
            out += run
            i = j
        return out

    def _merge(self) -> List[Tuple[int, Any]]:
        """The instances' outputs so far as one sequence: each instance's in order, the
        instances interleaved (at random, with an rng)."""
        if self.flush is not None:
            self.flush()
        chans = [inst.out.items for inst in self.instances if inst.out.items]
        for inst in self.instances:
            inst.out.items = []
        if len(chans) <= 1 or self.rng is None:
            return [x for ch in chans for x in ch]
        picks = [i for i, ch in enumerate(chans) for _ in ch]
        self.rng.shuffle(picks)
        pos = [0] * len(chans)
        out = []
        for i in picks:
            out.append(chans[i][pos[i]])
            pos[i] += 1
        return out

    # --- state ----------------------------------------------------------------------------
    def hold(self) -> Optional[int]:
        """The earliest timestamp of an item still waiting (the output watermark holds there)."""
        if not self.pending:
            return None
        # items of block b have timestamps of at least (b - 1) * P, so the earliest is in the
        # lowest block (which also holds late items and a fused Sort's open block)
        return min(it[0] for it in self.pending[min(self.pending)])

    def snapshot(self) -> Dict[str, Any]:
        return {"pending": self.pending, "open": self.open, "last": self.last, "wm": self.wm,
                "turn": self.turn, "late": self.late, "end": self.end, "first": self.first,
                "states": [inst.states for inst in self.instances]}

    def restore(self, data: Dict[str, Any]) -> None:
        for name in ("pending", "open", "last", "wm", "turn", "late", "end", "first"):
            setattr(self, name, data[name])
        for inst, states in zip(self.instances, data["states"]):
            inst.states = states
