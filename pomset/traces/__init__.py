"""Typed data-trace annotations (a later issue)."""
