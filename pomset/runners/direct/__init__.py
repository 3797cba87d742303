"""Beam's `apache_beam.runners.direct`: its runner classes, aliases of the local runner."""
