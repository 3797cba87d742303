"""Beam's `apache_beam.metrics`: user metrics a DoFn updates (`Metrics.counter`,
`.distribution`, `.gauge`), which `result.metrics().query(MetricsFilter()...)` reports per
step on every runner."""
from ..sdk.user_metrics import Metrics, MetricsFilter

__all__ = ["Metrics", "MetricsFilter"]
