"""Scoring runs: a task scored by a model through the cache into the store (the run itself, the Ray executor,
listwise rankings, fitting prompts to the context window)."""
