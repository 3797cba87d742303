"""Runners: each executes a pipeline graph; the SDK finds them by name (`pomset.sdk.runners`)."""
