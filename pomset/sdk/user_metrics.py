"""Beam's user metrics: counters, distributions and gauges that a DoFn updates while it runs
(`Metrics.counter(namespace, name).inc()`), reported per step by `result.metrics().query()` on
every runner.

Each step's runner keeps a `MetricsContainer`; while the step's user code runs it is the
thread's current container, which a metric's update goes to (an update outside any step, at
construction, changes nothing, as in Beam). A container's `snapshot` is plain data that
`merge_snapshots` folds: what a runner ships from its workers (tasks, processes, threads) to
the driver and sums per step."""
from __future__ import annotations

import threading
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple, Union

from ..windowing import now_micros

Snapshot = Dict[str, Dict[Tuple[str, str], Any]]
#: the key of a step's user metrics (a snapshot) among the counts a runner reports for it
USER = "user"
KINDS = ("counters", "distributions", "gauges")

_state = threading.local()


def enter(container: Optional["MetricsContainer"]) -> Optional["MetricsContainer"]:
    """Make `container` the thread's current one; returns the one it replaces."""
    prev = getattr(_state, "container", None)
    _state.container = container
    return prev


def _current() -> Optional["MetricsContainer"]:
    return getattr(_state, "container", None)


class MetricsContainer:
    """One step's metrics as its runner saw them: counter totals, distributions as [sum,
    count, min, max], gauges as (value, time in µs)."""

    __slots__ = ("counters", "distributions", "gauges")

    def __init__(self) -> None:
        self.counters: Dict[Tuple[str, str], int] = {}
        self.distributions: Dict[Tuple[str, str], List[Any]] = {}
        self.gauges: Dict[Tuple[str, str], Tuple[Any, int]] = {}

    def __bool__(self) -> bool:
        return bool(self.counters or self.distributions or self.gauges)

    def snapshot(self) -> Snapshot:
        return {"counters": dict(self.counters),
                "distributions": {k: tuple(v) for k, v in self.distributions.items()},
                "gauges": dict(self.gauges)}

    def take(self) -> Snapshot:
        """The snapshot, leaving the container empty (what a worker ships once)."""
        out = self.snapshot()
        self.counters, self.distributions, self.gauges = {}, {}, {}
        return out

    @classmethod
    def of(cls, snapshot: Optional[Snapshot]) -> "MetricsContainer":
        """A container holding `snapshot` (what a checkpoint saved)."""
        out = cls()
        out.absorb(snapshot)
        return out

    def absorb(self, snapshot: Optional[Snapshot]) -> None:
        """Fold in another container's snapshot of the same step."""
        if snapshot:
            merged = merge_snapshots(self.snapshot(), snapshot)
            self.counters = merged["counters"]
            self.distributions = {k: list(v) for k, v in merged["distributions"].items()}
            self.gauges = merged["gauges"]


def merge_snapshots(a: Optional[Snapshot], b: Optional[Snapshot]) -> Snapshot:
    """Two snapshots of one step as one: counters and distributions add up, a gauge keeps its
    latest value."""
    out: Snapshot = {kind: dict((a or {}).get(kind, {})) for kind in KINDS}
    for key, n in (b or {}).get("counters", {}).items():
        out["counters"][key] = out["counters"].get(key, 0) + n
    for key, d in (b or {}).get("distributions", {}).items():
        mine = out["distributions"].get(key)
        out["distributions"][key] = d if mine is None else (
            mine[0] + d[0], mine[1] + d[1], min(mine[2], d[2]), max(mine[3], d[3]))
    for key, g in (b or {}).get("gauges", {}).items():
        mine = out["gauges"].get(key)
        if mine is None or g[1] >= mine[1]:
            out["gauges"][key] = g
    return out


def _namespace(namespace: Any) -> str:
    if isinstance(namespace, str) and namespace:
        return namespace
    if isinstance(namespace, type):
        return f"{namespace.__module__}.{namespace.__qualname__}"
    raise TypeError(f"a metric's namespace must be a non-empty str or a class, got {namespace!r}")


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a metric's name must be a non-empty str, got {name!r}")
    return name


class MetricName(NamedTuple):
    namespace: str
    name: str


class Counter:
    """A count a step adds to (`inc`) or takes from (`dec`)."""

    def __init__(self, namespace: Any, name: str) -> None:
        self.metric_name = MetricName(_namespace(namespace), _name(name))

    def inc(self, n: int = 1) -> None:
        c = _current()
        if c is not None:
            key = self.metric_name
            c.counters[key] = c.counters.get(key, 0) + n

    def dec(self, n: int = 1) -> None:
        self.inc(-n)


class Distribution:
    """Numbers a step reports (`update`), summarized as sum, count, min and max."""

    def __init__(self, namespace: Any, name: str) -> None:
        self.metric_name = MetricName(_namespace(namespace), _name(name))

    def update(self, value: Union[int, float]) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"Distribution {self.metric_name.name!r} takes numbers, got "
                            f"{value!r}")
        c = _current()
        if c is None:
            return
        d = c.distributions.get(self.metric_name)
        if d is None:
            c.distributions[self.metric_name] = [value, 1, value, value]
        else:
            d[0] += value
            d[1] += 1
            if value < d[2]:
                d[2] = value
            if value > d[3]:
                d[3] = value


class Gauge:
    """A value a step sets (`set`); the latest one set is reported."""

    def __init__(self, namespace: Any, name: str) -> None:
        self.metric_name = MetricName(_namespace(namespace), _name(name))

    def set(self, value: Any) -> None:
        c = _current()
        if c is not None:
            c.gauges[self.metric_name] = (value, now_micros())


class Metrics:
    """Beam's entry point for user metrics, used inside DoFns (in `__init__`, `setup` or
    `process`): the namespace is a str or a class (named by its module and qualified name)."""

    @staticmethod
    def get_namespace(namespace: Any) -> str:
        return _namespace(namespace)

    @staticmethod
    def counter(namespace: Any, name: str) -> Counter:
        return Counter(namespace, name)

    @staticmethod
    def distribution(namespace: Any, name: str) -> Distribution:
        return Distribution(namespace, name)

    @staticmethod
    def gauge(namespace: Any, name: str) -> Gauge:
        return Gauge(namespace, name)


# --- what result.metrics().query() answers ------------------------------------------------------

class MetricKey(NamedTuple):
    step: str
    metric: MetricName


class DistributionResult(NamedTuple):
    sum: Union[int, float]
    count: int
    min: Union[int, float]
    max: Union[int, float]

    @property
    def mean(self) -> Optional[float]:
        return self.sum / self.count if self.count else None


class GaugeResult(NamedTuple):
    value: Any
    timestamp: int   # µs since the epoch, when it was set


class MetricResult(NamedTuple):
    """One metric of one step; `committed` and `attempted` are the same in pomset: each runner
    counts a retried task's updates once (Spark's accumulators in actions, the local runner's
    own bookkeeping)."""
    key: MetricKey
    committed: Any
    attempted: Any

    @property
    def result(self) -> Any:
        return self.committed


class MetricsFilter:
    """Which metrics `query` returns: by name, namespace and step (a step matches where its
    label, split at '/', contains the filter's step as consecutive parts), as in Beam."""

    def __init__(self) -> None:
        self.names: set = set()
        self.namespaces: set = set()
        self.steps: set = set()

    def with_name(self, name: str) -> "MetricsFilter":
        return self.with_names([name])

    def with_names(self, names: Iterable[str]) -> "MetricsFilter":
        self.names.update(names)
        return self

    def with_namespace(self, namespace: Any) -> "MetricsFilter":
        return self.with_namespaces([namespace])

    def with_namespaces(self, namespaces: Iterable[Any]) -> "MetricsFilter":
        self.namespaces.update(_namespace(n) for n in namespaces)
        return self

    def with_step(self, step: str) -> "MetricsFilter":
        return self.with_steps([step])

    def with_steps(self, steps: Iterable[str]) -> "MetricsFilter":
        self.steps.update(steps)
        return self

    def matches(self, step: str, name: MetricName) -> bool:
        return ((not self.names or name.name in self.names)
                and (not self.namespaces or name.namespace in self.namespaces)
                and (not self.steps or any(_sub_path(step, s) for s in self.steps)))


def _sub_path(step: str, scope: str) -> bool:
    parts, want = step.split("/"), scope.split("/")
    return any(parts[i:i + len(want)] == want for i in range(len(parts) - len(want) + 1))


def query(user: Dict[str, Snapshot], filter: Optional[MetricsFilter] = None
          ) -> Dict[str, List[MetricResult]]:
    """Each step's metrics as Beam's `MetricResults.query` gives them: lists of counters,
    distributions and gauges, each a `MetricResult`."""
    out: Dict[str, List[MetricResult]] = {kind: [] for kind in KINDS}
    for step, snap in user.items():
        for kind in KINDS:
            for key, value in snap.get(kind, {}).items():
                name = MetricName(*key)
                if filter is not None and not filter.matches(step, name):
                    continue
                if kind == "distributions":
                    value = DistributionResult(*value)
                elif kind == "gauges":
                    value = GaugeResult(*value)
                out[kind].append(MetricResult(MetricKey(step, name), value, value))
    return out
