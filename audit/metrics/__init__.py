"""The metrics: bias metrics, exact allocation gaps at every quota k, predictive validity and model rankings.

Pure functions over score tables (pandas / NumPy / SciPy, no I/O), after sections 3–5 and Appendix A of the RABBI
paper (../shared/papers/rabbi-allocational-harms.txt). ``MetricSuite`` precomputes a table once for fast quota changes.

The names below are imported on first use (PEP 562): importing one module of the package (e.g. ``audit.metrics.ll144``
for a decision log's import) loads neither SciPy nor the other formulas. The names of :mod:`.validity` are bound
now: its function ``validity`` shares the module's name, and a later import of the module would bind the module.
"""
from __future__ import annotations

import importlib
from typing import Any

from audit.metrics.validity import model_rankings, ndcg_at, ndcg_table, pearson, validity

#: each public name → the module of :mod:`audit.metrics` (or ``audit.design``) that defines it
_WHERE = {
    "PoolDesign": "audit.design", "allocation_gaps": ".allocation", "bias_metrics": ".bias_table",
    "MetricSuite": ".suite", "metric_table": ".suite", "PRESETS": ".presets", "get_preset": ".presets",
    "score_shape": ".shape", "simulate_gaps": ".simulate",
    **dict.fromkeys(("delta", "emd", "histograms", "jsd", "jsd_paper_code", "rabbi", "rabbi_test"), ".bias"),
    **dict.fromkeys(("drop_unreliable", "inconsistent_rates", "pair_preferences"), ".pairwise"),
}
__all__ = [
    "PRESETS", "MetricSuite", "PoolDesign", "allocation_gaps", "bias_metrics", "delta", "drop_unreliable", "emd",
    "get_preset", "histograms", "inconsistent_rates", "jsd", "jsd_paper_code", "metric_table", "model_rankings",
    "ndcg_at", "ndcg_table", "pair_preferences", "pearson", "rabbi", "rabbi_test", "score_shape", "simulate_gaps",
    "validity",
]


def __getattr__(name: str) -> Any:
    """The public name ``name``, its module imported now."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
