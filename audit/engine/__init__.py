"""The audit engine: the selection, the lazy :class:`audit.engine.audit.Audit` and what is computed through it (the
metric pass, position bias, the study plan, monitoring, policies): the only path from store tables to a number."""
