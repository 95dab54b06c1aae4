"""Shape of each score distribution: skewness and kurtosis per (model, task, subtask, mode, group) (the RABBI paper's
Figure 13, which explains why δ and EMD track the gaps on essays but not on resumes)."""
from __future__ import annotations

import pandas as pd

from audit.errors import AuditError

BY = ["model", "task", "subtask", "mode", "group"]


def score_shape(scores: pd.DataFrame) -> pd.DataFrame:
    """Columns model, task, subtask, mode, group, n, skewness, kurtosis, one row per group's scores.

    Skewness is the Fisher–Pearson coefficient g₁ = m₃ / m₂^{3/2} and kurtosis the excess kurtosis g₂ = m₄ / m₂² − 3
    (moment estimators, as ``scipy.stats.skew`` / ``kurtosis`` compute them; 0 and 0 for a normal distribution). Both
    are NaN for a group whose scores are all equal.
    """
    missing = [c for c in [*BY, "score"] if c not in scores]
    if missing:
        raise AuditError(f"score table is missing column(s): {', '.join(missing)}")
    if scores.empty:
        raise AuditError("score table has no rows")
    from scipy import stats  # imported on use: slow to import, and no page's cold start needs it

    grouped = scores.groupby(BY, sort=True, observed=True)["score"]
    out = grouped.agg(n="size", skewness=lambda s: stats.skew(s.to_numpy(dtype=float)),
                      kurtosis=lambda s: stats.kurtosis(s.to_numpy(dtype=float)))
    return out.reset_index()
