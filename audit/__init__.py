"""Allocational-harm audit of language models: tasks, model backend, result store, metrics."""

__version__ = "0.1.0"
"""The package version, the tool's version where it does not run from a git checkout
(:func:`audit.store.runs.tool_version`)."""
