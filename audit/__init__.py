"""Allocational-harm audit of language models: tasks, model backend, result store, metrics."""

__version__ = "0.1.0"
"""The package version, for where the tool does not run from a git checkout (see :func:`audit.store_runs.tool_version`)."""
