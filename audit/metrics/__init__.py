"""The metrics: bias metrics, exact allocation gaps at every quota k, predictive validity and model rankings.

Pure functions over score tables (pandas / NumPy / SciPy, no I/O), after sections 3–5 and Appendix A of the RABBI
paper (../shared/papers/rabbi-allocational-harms.txt). ``MetricSuite`` precomputes a table once for fast quota changes.
"""
from audit.design import PoolDesign
from audit.metrics.allocation import allocation_gaps
from audit.metrics.bias import delta, emd, histograms, jsd, jsd_paper_code, rabbi, rabbi_test
from audit.metrics.bias_table import bias_metrics
from audit.metrics.suite import MetricSuite, metric_table
from audit.metrics.pairwise import drop_unreliable, inconsistent_rates, pair_preferences
from audit.metrics.presets import PRESETS, get_preset
from audit.metrics.shape import score_shape
from audit.metrics.simulate import simulate_gaps
from audit.metrics.validity import model_rankings, ndcg_at, ndcg_table, pearson, validity

__all__ = [
    "PRESETS", "MetricSuite", "PoolDesign", "allocation_gaps", "bias_metrics", "delta", "drop_unreliable", "emd",
    "get_preset", "histograms", "inconsistent_rates", "jsd", "jsd_paper_code", "metric_table", "model_rankings",
    "ndcg_at", "ndcg_table", "pair_preferences", "pearson", "rabbi", "rabbi_test", "score_shape", "simulate_gaps",
    "validity",
]
