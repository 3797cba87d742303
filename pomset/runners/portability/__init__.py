"""Beam's `apache_beam.runners.portability`: its in-process runner, an alias of the local
runner."""
