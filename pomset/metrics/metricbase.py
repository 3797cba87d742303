"""Beam's `apache_beam.metrics.metricbase`: the metric kinds and a metric's name."""
from ..sdk.user_metrics import Counter, Distribution, Gauge, MetricName

__all__ = ["Counter", "Distribution", "Gauge", "MetricName"]
