"""Allocational-harm audit of language models: tasks, model backend, result store, metrics."""
