"""Beam's `apache_beam.metrics.metric`: the user metrics' entry point and the query filter."""
from ..sdk.user_metrics import (Counter, Distribution, Gauge, MetricResult, Metrics,
                                MetricsFilter)

__all__ = ["Counter", "Distribution", "Gauge", "MetricResult", "Metrics", "MetricsFilter"]
