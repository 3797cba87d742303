"""The Yahoo Streaming Benchmark's six queries (Mamouras et al., "Data-Trace Types for
Distributed Stream Processing Systems", Section 6), written with operator templates over
typed edges whose markers come every second of event time.

    python examples/yahoo_streaming.py                              # all queries, local runner
    python examples/yahoo_streaming.py --query=IV --events=200000 --parallelism=2
    python examples/yahoo_streaming.py --check                      # parallelism 1 vs N agree

The input is generated: events (userId, pageId, adId, eventType, eventTime) of users
interacting with ads, eventType one of view/click/purchase, eventTime in ms, slightly out of
order. Ads belong to campaigns and users live in locations; both maps are tables of a small
database (an in-memory sqlite3 database, `--table=sqlite`, standing in for the paper's
Derby; `--table=dict` uses a dict). The queries:

- I: enrich every event with its ad's campaign (one stateless stage).
- II: per ad, running totals of views, clicks and purchases, emitted at every marker for the
  ads that had events in the last second and persisted in a sqlite3 table (one stage).
- III: enrich with the user's location, then per location a summary of the whole history
  (events, views, clicks, purchases), emitted at every marker.
- IV: the original benchmark: filter views, project the ad, look up its campaign; then per
  campaign the number of views in the last 10 s, emitted every second. Written with
  templates only: an OpKeyedUnordered whose state is a ring of the last 10 per-second counts
  (the block aggregate of each marker shifts in), emitting the ring's sum at every marker.
- V: as IV over tumbling 10 s windows: the same ring, emitted at markers on multiples of 10 s.
- VI: enrich with location; per user (keyed by location and user) features from their
  event counts; then per location, every `--kmeans_every` seconds, k-means clustering of the
  location's users (hand-written Lloyd's algorithm, deterministic initialisation and
  arithmetic in user order, so every parallelism gives the same clusters).

Windows are those of the markers: the window emitted at the marker of second m holds the
events with times in [m - 10 s, m); markers run from the first block of a stage's input to
its last, so windows ending after the last event's second are not emitted.
"""
from __future__ import annotations

import argparse
import math
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from collections import Counter
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pomset as pm  # noqa: E402

EPOCH_MS = 1_700_000_000_000
EVENT_TYPES = ("view", "click", "purchase")
QUERIES = ("I", "II", "III", "IV", "V", "VI")
CITIES = ("Amsterdam", "Berlin", "Chicago", "Delhi", "Lagos", "Lima", "London", "Madrid",
          "Mumbai", "Nairobi", "Oslo", "Paris", "Seoul", "Sydney", "Tokyo", "Toronto")
#: per-user event-type weights (view, click, purchase): browsers, clickers, buyers
PROFILES = ((0.90, 0.08, 0.02), (0.60, 0.35, 0.05), (0.50, 0.20, 0.30))
Counts = Tuple[int, int, int]
ZERO: Counts = (0, 0, 0)
ONE: Dict[str, Counts] = {"view": (1, 0, 0), "click": (0, 1, 0), "purchase": (0, 0, 1)}


class Event(NamedTuple):
    """One element of the benchmark's stream; `event_time` in ms since the epoch."""

    user_id: str
    page_id: str
    ad_id: str
    event_type: str
    event_time: int


class World(NamedTuple):
    """The fixed part of the benchmark: campaigns, ads (each in one campaign), users and
    their locations and behaviour profiles."""

    campaigns: List[str]
    ad_campaign: Dict[str, str]
    user_location: Dict[str, str]
    user_profile: Dict[str, int]


# --- the generator ---------------------------------------------------------------------------

def _uuid(rng: random.Random) -> str:
    """A random UUID drawn from `rng` (the reference generator's ids are UUIDs)."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def make_world(campaigns: int = 100, ads_per_campaign: int = 10, users: int = 1000,
               locations: int = 10, seed: int = 7) -> World:
    """Campaigns with their ads, and users with a location and a behaviour profile."""
    rng = random.Random(seed)
    names = [CITIES[i] if i < len(CITIES) else f"City{i:03d}" for i in range(locations)]
    cids = [_uuid(rng) for _ in range(campaigns)]
    ad_campaign = {_uuid(rng): c for c in cids for _ in range(ads_per_campaign)}
    user_ids = [_uuid(rng) for _ in range(users)]
    return World(cids, ad_campaign, {u: rng.choice(names) for u in user_ids},
                 {u: rng.randrange(len(PROFILES)) for u in user_ids})


def generate(n: int, world: World, rate: int = 1000, disorder_ms: int = 500,
             seed: int = 7) -> List[Event]:
    """`n` events at `rate` per second of event time from EPOCH_MS, each up to `disorder_ms`
    earlier than its place in the list (so the stream is out of order); users are picked
    with skewed activity, event types by the user's profile."""
    rng = random.Random(seed)
    ads = list(world.ad_campaign)
    users = list(world.user_location)
    activity = [1.0 / (1 + i % 50) for i in range(len(users))]
    picked = rng.choices(users, weights=activity, k=n)
    out = []
    for i, user in enumerate(picked):
        etype = rng.choices(EVENT_TYPES, weights=PROFILES[world.user_profile[user]])[0]
        t = EPOCH_MS + i * 1000 // rate - rng.randrange(disorder_ms + 1)
        out.append(Event(user, _uuid(rng), rng.choice(ads), etype, t))
    return out


def timestamped(events: Iterable[Any], time_of: Callable[[Any], int]) -> List[pm.TimestampedValue]:
    """The events as Create's input, each at its event time (`time_of` gives ms)."""
    return [pm.TimestampedValue(e, pm.Timestamp(micros=time_of(e) * 1000)) for e in events]


# --- the database ----------------------------------------------------------------------------

class Table:
    """The ad -> campaign and user -> location maps: a sqlite3 database made on first use in
    each process (pickled as its rows), or plain dicts."""

    def __init__(self, world: World, backend: str = "sqlite") -> None:
        """The maps of `world`, looked up in sqlite3 or in dicts."""
        if backend not in ("sqlite", "dict"):
            raise ValueError(f"backend must be sqlite or dict, got {backend!r}")
        self.backend = backend
        self.ads = dict(world.ad_campaign)
        self.users = dict(world.user_location)
        self._db: Optional[sqlite3.Connection] = None
        if backend == "dict":
            self.campaign = self.ads.__getitem__
            self.location = self.users.__getitem__

    def __getstate__(self) -> Dict[str, Any]:
        """The rows and backend, without this process's connection."""
        return {"backend": self.backend, "ads": self.ads, "users": self.users}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        """The same table in another process (its database made on first use)."""
        self.__init__(World([], state["ads"], state["users"], {}), state["backend"])

    def _connect(self) -> sqlite3.Connection:
        """This process's database, made from the rows."""
        if self._db is None:
            db = sqlite3.connect(":memory:", check_same_thread=False)
            db.execute("CREATE TABLE ads (ad_id TEXT PRIMARY KEY, campaign_id TEXT NOT NULL)")
            db.execute("CREATE TABLE users (user_id TEXT PRIMARY KEY, location TEXT NOT NULL)")
            db.executemany("INSERT INTO ads VALUES (?, ?)", self.ads.items())
            db.executemany("INSERT INTO users VALUES (?, ?)", self.users.items())
            db.commit()
            self._db = db
        return self._db

    def campaign(self, ad_id: str) -> str:
        """The campaign an ad belongs to."""
        row = self._connect().execute("SELECT campaign_id FROM ads WHERE ad_id = ?",
                                      (ad_id,)).fetchone()
        if row is None:
            raise KeyError(f"no campaign for ad {ad_id!r}")
        return row[0]

    def location(self, user_id: str) -> str:
        """Where a user is."""
        row = self._connect().execute("SELECT location FROM users WHERE user_id = ?",
                                      (user_id,)).fetchone()
        if row is None:
            raise KeyError(f"no location for user {user_id!r}")
        return row[0]


class TotalsStore:
    """Query II's persisted running totals: a sqlite3 file, one row per ad (its latest
    totals and the second they are as of), opened on first use in each process."""

    def __init__(self, path: str) -> None:
        """A store in the sqlite3 file at `path`."""
        self.path = path
        self._db: Optional[sqlite3.Connection] = None

    def __getstate__(self) -> Dict[str, Any]:
        """The path, without this process's connection."""
        return {"path": self.path}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        """The same store in another process."""
        self.__init__(state["path"])

    def _connect(self) -> sqlite3.Connection:
        """This process's connection, in autocommit mode, the table made if missing."""
        if self._db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                 check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")
            db.execute("CREATE TABLE IF NOT EXISTS ad_totals (ad_id TEXT PRIMARY KEY, "
                       "second INTEGER, views INTEGER, clicks INTEGER, purchases INTEGER)")
            self._db = db
        return self._db

    def save(self, ad_id: str, second: int, totals: Counts) -> None:
        """Persist an ad's running totals as of `second`."""
        self._connect().execute("INSERT OR REPLACE INTO ad_totals VALUES (?, ?, ?, ?, ?)",
                                (ad_id, second) + tuple(totals))

    def rows(self) -> List[Tuple[Any, ...]]:
        """Everything persisted, by ad."""
        return self._connect().execute("SELECT * FROM ad_totals ORDER BY ad_id").fetchall()


# --- shared pieces of the operators ----------------------------------------------------------

def add3(a: Counts, b: Counts) -> Counts:
    """The counts monoid's combine: element-wise sum."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def count_event(key: Any, event_type: str) -> Counts:
    """The counts monoid's `in_` for an item whose value is an event type."""
    return ONE[event_type]


def zero() -> Counts:
    """The counts monoid's identity."""
    return ZERO


def untouched() -> Tuple[Counts, bool]:
    """A key's first state: no totals yet, unchanged."""
    return (ZERO, False)


def add_block(state: Tuple[Counts, bool], block: Counts) -> Tuple[Counts, bool]:
    """Running totals plus the last block's counts, and whether the block had any."""
    return (add3(state[0], block), block != ZERO)


def second_of(marker: pm.Marker) -> int:
    """The second (since the epoch) a 1-second marker stands for."""
    return marker.micros // 1_000_000


def one(key: Any, value: Any) -> int:
    """A view counts 1."""
    return 1


def plus(a: int, b: int) -> int:
    """Integer addition (the count monoid's combine)."""
    return a + b


def nothing() -> int:
    """The count monoid's identity."""
    return 0


def ring_of(size: int) -> Callable[[], Tuple[int, ...]]:
    """An initial ring of `size` zero per-second counts."""
    empty = (0,) * size

    def initial_state() -> Tuple[int, ...]:
        """A campaign's ring before its first view."""
        return empty
    return initial_state


def shift_in(ring: Tuple[int, ...], count: int) -> Tuple[int, ...]:
    """The ring one second on: the oldest second out, the last block's count in."""
    return ring[1:] + (count,)


def windowed_counts(every: int) -> Callable[..., None]:
    """on_marker for IV and V: the views in the ring's window, at markers on multiples of
    `every` seconds, when there are any."""

    def on_marker(ring: Tuple[int, ...], campaign: str, marker: pm.Marker,
                  emit: Callable[[Any, Any], None]) -> None:
        """Emit (campaign, (window end second, views in the window))."""
        second = second_of(marker)
        if second % every == 0:
            total = sum(ring)
            if total:
                emit(campaign, (second, total))
    return on_marker


# --- the queries -----------------------------------------------------------------------------

class EnrichCampaign(pm.OpStateless):
    """Query I: each event with its ad's campaign appended."""

    def __init__(self, table: Table, parallelism: int) -> None:
        """Look campaigns up in `table`."""
        super().__init__(out=pm.U(pm.Unit, tuple), parallelism=parallelism)
        self.table = table

    def on_item(self, key: Any, event: Event, emit: Callable[[Any, Any], None]) -> None:
        """(userId, pageId, adId, eventType, eventTime, campaignId)."""
        emit(None, tuple(event) + (self.table.campaign(event.ad_id),))


class PersistTotals(pm.OpKeyedUnordered):
    """Query II: per ad, running totals of views, clicks and purchases; at a marker, those
    of the ads with events in the closed block are persisted and emitted."""

    def __init__(self, store: TotalsStore, parallelism: int) -> None:
        """Persist into `store`."""
        super().__init__(out=pm.U(str, tuple), parallelism=parallelism)
        self.store = store

    def in_(self, ad: str, event: Event) -> Counts:
        """The event's counts."""
        return ONE[event.event_type]

    id = staticmethod(zero)
    combine = staticmethod(add3)
    initial_state = staticmethod(untouched)
    update_state = staticmethod(add_block)

    def on_marker(self, state: Tuple[Counts, bool], ad: str, marker: pm.Marker,
                  emit: Callable[[Any, Any], None]) -> None:
        """Persist and emit (ad, (second, views, clicks, purchases)) if the ad changed."""
        totals, changed = state
        if changed:
            second = second_of(marker)
            self.store.save(ad, second, totals)
            emit(ad, (second,) + totals)


class Locate(pm.OpStateless):
    """Queries III and VI: each event's user looked up in the location table; the item is
    keyed by `key(location, event)` with value `value(event)`."""

    def __init__(self, table: Table, key: Callable[[str, Event], Any],
                 value: Callable[[Event], Any], out: pm.U, parallelism: int) -> None:
        """Look locations up in `table`; key and value the output with `key` and `value`."""
        super().__init__(out=out, parallelism=parallelism)
        self.table, self.key, self.value = table, key, value

    def on_item(self, key: Any, event: Event, emit: Callable[[Any, Any], None]) -> None:
        """Emit the located event."""
        emit(self.key(self.table.location(event.user_id), event), self.value(event))


def location_only(location: str, event: Event) -> str:
    """Key by location (query III)."""
    return location


def location_and_user(location: str, event: Event) -> Tuple[str, str]:
    """Key by (location, user) (query VI: the user's location travels with its key)."""
    return (location, event.user_id)


def event_type_of(event: Event) -> str:
    """An event's type, all the later stages need of it."""
    return event.event_type


def location_summary(totals: Counts, location: str, marker: pm.Marker,
                     emit: Callable[[Any, Any], None]) -> None:
    """Query III at a marker: (location, (second, events, views, clicks, purchases))."""
    emit(location, (second_of(marker), sum(totals)) + totals)


class ViewsToCampaigns(pm.OpStateless):
    """Query IV/V stage 1: filter views, project the ad, look up its campaign."""

    def __init__(self, table: Table, parallelism: int) -> None:
        """Look campaigns up in `table`."""
        super().__init__(out=pm.U(str, str), parallelism=parallelism)
        self.table = table

    def on_item(self, key: Any, event: Event, emit: Callable[[Any, Any], None]) -> None:
        """Emit (campaign, ad) for a view."""
        if event.event_type == "view":
            ad = event.ad_id
            emit(self.table.campaign(ad), ad)


def features(totals: Counts) -> Tuple[float, float, float]:
    """A user's features: log activity, click rate and purchase rate."""
    n = sum(totals)
    return (math.log1p(n), totals[1] / n, totals[2] / n)


def changed_features(state: Tuple[Counts, bool], key: Tuple[str, str], marker: pm.Marker,
                     emit: Callable[[Any, Any], None]) -> None:
    """Query VI stage 2 at a marker: (location, (user, features)) for a user with new events."""
    totals, changed = state
    if changed:
        location, user = key
        emit(location, (user, features(totals)))


def as_batch(location: str, user_features: Tuple[str, Tuple[float, ...]]) -> tuple:
    """A (user, features) item as a batch of one."""
    return (user_features,)


def no_users() -> tuple:
    """The empty batch of users."""
    return ()


def concat(a: tuple, b: tuple) -> tuple:
    """Two batches of users as one (their order is dropped by `latest_features`)."""
    return a + b


def no_features() -> Dict[str, Tuple[float, ...]]:
    """A location's users before its first: none."""
    return {}


def latest_features(state: Dict[str, Tuple[float, ...]],
                    batch: tuple) -> Dict[str, Tuple[float, ...]]:
    """Each user's latest features: the block's replace the older (the larger wins should a
    user come twice in a block, so the order of the batch does not matter)."""
    new = dict(state)
    fresh: Dict[str, Tuple[float, ...]] = {}
    for user, feats in batch:
        fresh[user] = max(fresh[user], feats) if user in fresh else feats
    new.update(fresh)
    return new


def kmeans(points: Sequence[Tuple[float, ...]], k: int,
           iterations: int = 20) -> List[Tuple[Tuple[float, ...], int]]:
    """Lloyd's k-means: initial centroids evenly spaced through the sorted distinct points;
    ties go to the lower centroid; an empty cluster keeps its centroid. Deterministic for a
    given sequence of points. Returns (centroid, size) per cluster."""
    distinct = sorted(set(points))
    k = min(k, len(distinct))
    if k == 0:
        return []
    centroids = [distinct[i * len(distinct) // k] for i in range(k)]

    def assign() -> List[int]:
        """The index of each point's nearest centroid."""
        out = []
        for p in points:
            best, best_d = 0, math.inf
            for j, c in enumerate(centroids):
                d = sum((x - y) * (x - y) for x, y in zip(p, c))
                if d < best_d:
                    best, best_d = j, d
            out.append(best)
        return out

    for _ in range(iterations):
        labels = assign()
        sums = [[0.0] * len(points[0]) for _ in range(k)]
        sizes = [0] * k
        for p, j in zip(points, labels):
            sizes[j] += 1
            for d, x in enumerate(p):
                sums[j][d] += x
        new = [tuple(s / sizes[j] for s in sums[j]) if sizes[j] else centroids[j]
               for j in range(k)]
        if new == centroids:
            break
        centroids = new
    labels = assign()
    return [(c, labels.count(j)) for j, c in enumerate(centroids)]


class ClusterUsers(pm.OpKeyedUnordered):
    """Query VI stage 3: per location, the latest features of its users; every `every`
    seconds, k-means over them (in user order), emitted as (location, (second, clusters))."""

    def __init__(self, k: int, every: int, parallelism: int) -> None:
        """`k` clusters every `every` seconds."""
        super().__init__(out=pm.U(str, tuple), parallelism=parallelism)
        self.k, self.every = k, every

    in_ = staticmethod(as_batch)
    id = staticmethod(no_users)
    combine = staticmethod(concat)
    initial_state = staticmethod(no_features)
    update_state = staticmethod(latest_features)

    def on_marker(self, users: Dict[str, Tuple[float, ...]], location: str,
                  marker: pm.Marker, emit: Callable[[Any, Any], None]) -> None:
        """Cluster the location's users on the period's markers."""
        second = second_of(marker)
        if second % self.every == 0 and users:
            clusters = kmeans([users[u] for u in sorted(users)], self.k)
            emit(location, (second, len(users),
                            tuple((tuple(round(x, 6) for x in c), n) for c, n in clusters)))


def events_in(p: pm.Pipeline, events: List[Event], key: Optional[Callable[[Event], Any]] = None,
              ) -> pm.PCollection:
    """The events as a typed edge, markers every second: bare events (U(Unit, Event)) or
    keyed by `key` (U(str, Event))."""
    if key is None:
        return (p | "Events" >> pm.Create(timestamped(events, lambda e: e.event_time))
                | pm.Typed(pm.U(pm.Unit, Event), period=1))
    pairs = [(key(e), e) for e in events]
    return (p | "Events" >> pm.Create(timestamped(pairs, lambda kv: kv[1].event_time))
            | pm.Typed(pm.U(str, Event), period=1))


def ad_of(event: Event) -> str:
    """An event's ad (query II's key)."""
    return event.ad_id


def query_i(src: pm.PCollection, table: Table, par: int) -> pm.PCollection:
    """Query I: stateless enrichment with the campaign table."""
    return src | "I: enrich" >> EnrichCampaign(table, par)


def query_ii(src: pm.PCollection, store: TotalsStore, par: int) -> pm.PCollection:
    """Query II (input keyed by ad): per-ad running totals, persisted at every marker."""
    return src | "II: totals" >> PersistTotals(store, par)


def query_iii(src: pm.PCollection, table: Table, par: int) -> pm.PCollection:
    """Query III: locate, then per location a summary of the whole history."""
    located = src | "III: locate" >> Locate(table, location_only, event_type_of,
                                            pm.U(str, str), par)
    return located | "III: summary" >> pm.OpKeyedUnordered(
        in_=count_event, id=zero, combine=add3, initial_state=zero, update_state=add3,
        on_marker=location_summary, out=pm.U(str, tuple), parallelism=par)


def campaign_windows(src: pm.PCollection, table: Table, par: int, name: str, size: int,
                     every: int) -> pm.PCollection:
    """Views per campaign over the last `size` seconds, at markers on multiples of `every`."""
    views = src | f"{name}: views to campaigns" >> ViewsToCampaigns(table, par)
    return views | f"{name}: count" >> pm.OpKeyedUnordered(
        in_=one, id=nothing, combine=plus, initial_state=ring_of(size), update_state=shift_in,
        on_marker=windowed_counts(every), out=pm.U(str, tuple), parallelism=par)


def query_iv(src: pm.PCollection, table: Table, par: int) -> pm.PCollection:
    """Query IV: views per campaign in the last 10 s, every second."""
    return campaign_windows(src, table, par, "IV", 10, 1)


def query_v(src: pm.PCollection, table: Table, par: int) -> pm.PCollection:
    """Query V: views per campaign in tumbling 10 s windows."""
    return campaign_windows(src, table, par, "V", 10, 10)


def query_vi(src: pm.PCollection, table: Table, par: int, k: int = 3,
             every: int = 10) -> pm.PCollection:
    """Query VI: locate, per-user features, per-location k-means every `every` seconds."""
    located = src | "VI: locate" >> Locate(table, location_and_user, event_type_of,
                                           pm.U(tuple, str), par)
    users = located | "VI: features" >> pm.OpKeyedUnordered(
        in_=count_event, id=zero, combine=add3, initial_state=untouched,
        update_state=add_block, on_marker=changed_features, out=pm.U(str, tuple),
        parallelism=par)
    return users | "VI: k-means" >> ClusterUsers(k, every, par)


# --- plain-Python answers --------------------------------------------------------------------

def expected_campaign_windows(events: Iterable[Event], ad_campaign: Dict[str, str],
                              size: int = 10, every: int = 1) -> Counter:
    """What IV (every=1) or V (every=size) emit, computed directly: for each campaign and
    each marker second m on a multiple of `every`, up to the last view's block, the views
    with times in [m - size, m), when there are any. As Counter of (campaign, (m, views))."""
    views = [(ad_campaign[e.ad_id], e.event_time // 1000 + 1) for e in events
             if e.event_type == "view"]
    if not views:
        return Counter()
    last = max(b for _, b in views)
    counts: Counter = Counter()
    for campaign, block in views:
        for m in range(block, min(block + size - 1, last) + 1):
            if m % every == 0:
                counts[(campaign, m)] += 1
    return Counter({(c, (m, n)): 1 for (c, m), n in counts.items()})


# --- running -------------------------------------------------------------------------------

class YahooOptions(pm.PipelineOptions):
    """The example's flags, besides the runner's."""

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add the benchmark's flags."""
        parser.add_argument("--query", default="all", help="I..VI, several comma-separated, or all")
        parser.add_argument("--events", type=int, default=50_000)
        parser.add_argument("--parallelism", type=int, default=4,
                            help="instances of every template")
        parser.add_argument("--check", action="store_true",
                            help="run each query at parallelism 1 and at --parallelism (with "
                                 "shuffled merges) and require identical outputs")
        parser.add_argument("--campaigns", type=int, default=100)
        parser.add_argument("--ads_per_campaign", type=int, default=10)
        parser.add_argument("--users", type=int, default=1000)
        parser.add_argument("--locations", type=int, default=10)
        parser.add_argument("--rate", type=int, default=1000,
                            help="events per second of event time")
        parser.add_argument("--disorder_ms", type=int, default=500,
                            help="events come up to this much later than their time")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--table", default="sqlite", choices=("sqlite", "dict"))
        parser.add_argument("--k", type=int, default=3, help="query VI: clusters per location")
        parser.add_argument("--kmeans_every", type=int, default=10,
                            help="query VI: seconds between clusterings")
        parser.add_argument("--store_dir", default=None,
                            help="query II: where its sqlite3 files go (default: a temp dir)")


def parse_queries(text: str) -> List[str]:
    """The queries named by --query."""
    if text.strip().lower() == "all":
        return list(QUERIES)
    names = [q.strip().upper() for q in text.split(",") if q.strip()]
    bad = [q for q in names if q not in QUERIES]
    if bad or not names:
        raise pm.OptionsError(f"--query takes I, II, III, IV, V, VI (comma-separated) or all, "
                              f"got {text!r}")
    return names


class Run(NamedTuple):
    """One query's run: its outputs as a Counter of (value, timestamp µs) and its time."""

    outputs: Counter
    seconds: float
    extra: Dict[str, Any]


def run_query(query: str, options: YahooOptions, events: List[Event], world: World,
              table: Table, par: int, store_path: str) -> Run:
    """Build and run one query at parallelism `par`; its outputs and wall time."""
    started = time.perf_counter()
    p = pm.Pipeline(options=options)
    extra: Dict[str, Any] = {}
    if query == "II":
        for stale in (store_path, store_path + "-wal", store_path + "-shm"):
            if os.path.exists(stale):
                os.remove(stale)
        store = TotalsStore(store_path)
        out = query_ii(events_in(p, events, ad_of), store, par)
    else:
        src = events_in(p, events)
        build = {"I": query_i, "III": query_iii, "IV": query_iv, "V": query_v}.get(query)
        if build is not None:
            out = build(src, table, par)
        else:
            out = query_vi(src, table, par, options.k, options.kmeans_every)
    result = p.run()
    outputs = Counter((wv.value, wv.ts) for wv in result.collect(out))
    seconds = time.perf_counter() - started
    if query == "II":
        extra["persisted"] = TotalsStore(store_path).rows()
    return Run(outputs, seconds, extra)


def summary(query: str, run: Run, events: List[Event], world: World) -> str:
    """A few lines on what a query produced."""
    values = [v for (v, _), n in run.outputs.items() for _ in range(n)]
    total = len(values)
    head = f"Query {query}: {len(events):,} events -> {total:,} outputs in {run.seconds:.2f} s"
    if query == "I":
        campaigns = Counter(v[5] for v in values)
        c, n = campaigns.most_common(1)[0]
        return f"{head}; events enriched with {len(campaigns)} campaigns (most: {c[:8]} {n:,})"
    if query == "II":
        rows = run.extra["persisted"]
        views = sum(r[2] for r in rows)
        return (f"{head}; {len(rows):,} ads persisted, their totals: {views:,} views, "
                f"{sum(r[3] for r in rows):,} clicks, {sum(r[4] for r in rows):,} purchases")
    if query == "III":
        last = {}
        for loc, (second, n, v, c, pu) in sorted(values, key=lambda kv: kv[1][0]):
            last[loc] = (second, n, v, c, pu)
        top = sorted(last.items(), key=lambda kv: -kv[1][1])[:3]
        return head + "; final summaries: " + ", ".join(
            f"{loc} {n:,} events ({v:,} views, {c:,} clicks, {pu:,} purchases)"
            for loc, (_, n, v, c, pu) in top) + (", ..." if len(last) > 3 else "")
    if query in ("IV", "V"):
        if not values:
            return head
        seconds = sorted({v[1][0] for v in values})
        best = max(values, key=lambda kv: (kv[1][1], kv[0]))
        return (f"{head}; {len(seconds)} window ends, {len({v[0] for v in values})} campaigns; "
                f"most: campaign {best[0][:8]} {best[1][1]} views in the 10 s before "
                f"{best[1][0] - EPOCH_MS // 1000} s")
    rounds = sorted({v[1][0] for v in values})
    if not values:
        return head
    loc, (second, users, clusters) = max(values, key=lambda kv: (kv[1][0], kv[0]))
    shown = "; ".join(f"{n} users at ({', '.join(f'{x:.2f}' for x in c)})" for c, n in clusters)
    return (f"{head}; {len(rounds)} clustering rounds; {loc} at {second - EPOCH_MS // 1000} s, "
            f"{users} users: {shown}")


def main(argv: Optional[List[str]] = None) -> int:
    """Generate the events, run the chosen queries, print summaries (and the check)."""
    argv = sys.argv[1:] if argv is None else argv
    options = YahooOptions(argv)
    queries = parse_queries(options.query)
    world = make_world(options.campaigns, options.ads_per_campaign, options.users,
                       options.locations, options.seed)
    events = generate(options.events, world, options.rate, options.disorder_ms, options.seed)
    table = Table(world, options.table)
    store_dir = options.store_dir or tempfile.mkdtemp(prefix="yahoo-store-")
    span = (max(e.event_time for e in events) - min(e.event_time for e in events)) / 1000
    print(f"{len(events):,} events over {span:.0f} s of event time: {len(world.campaigns)} "
          f"campaigns, {len(world.ad_campaign):,} ads, {len(world.user_location):,} users in "
          f"{options.locations} locations; table: {options.table}; runner: {options.runner}")
    par = options.parallelism
    failed = []
    for q in queries:
        if options.check:
            one_run = run_query(q, options, events, world, table, 1,
                                os.path.join(store_dir, f"{q}-p1.sqlite"))
            shuffled = YahooOptions(argv, shuffle_merges=options.shuffle_merges
                                    if options.shuffle_merges is not None else options.seed)
            n_run = run_query(q, shuffled, events, world, table, par,
                              os.path.join(store_dir, f"{q}-p{par}.sqlite"))
            same = one_run.outputs == n_run.outputs
            if q == "II":
                same = same and one_run.extra["persisted"] == n_run.extra["persisted"]
            print(summary(q, n_run, events, world))
            print(f"  parallelism 1 and {par} give identical outputs: {'yes' if same else 'NO'} "
                  f"({sum(one_run.outputs.values()):,} outputs; {one_run.seconds:.2f} s at 1, "
                  f"{n_run.seconds:.2f} s at {par})")
            if not same:
                failed.append(q)
        else:
            run = run_query(q, options, events, world, table, par,
                            os.path.join(store_dir, f"{q}-p{par}.sqlite"))
            print(summary(q, run, events, world))
    if failed:
        print(f"outputs differ between parallelism 1 and {par}: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
