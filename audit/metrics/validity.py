"""Predictive validity of bias metrics and their use for model selection (paper sections 5.1–5.2).

Each bias metric is compared with the allocation gap it should predict (paper section 4.4): for ΔDP, δ, JSD, EMD
and RABBI on all candidates (A, B); for ΔEO, the same four on qualified candidates only (A′, B′: the metric table's
``*_qualified`` columns). JSD and EMD are non-directional, so they are compared with |gap|. Inputs are metric tables
from :func:`audit.metrics.metric_table`.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from audit.errors import AuditError

#: gap -> (gap column, [(metric, metric column, compare with |gap|)])
PAIRINGS = {
    "dp": ("dp_gap", [("delta", "delta", False), ("jsd", "jsd", True), ("emd", "emd", True),
                      ("rabbi", "rabbi", False)]),
    "eo": ("eo_gap", [("delta", "delta_qualified", False), ("jsd", "jsd_qualified", True),
                      ("emd", "emd_qualified", True), ("rabbi", "rabbi_qualified", False)]),
}
BY = ("mode", "k")


def _check(table: pd.DataFrame, by: Sequence[str]) -> None:
    if not isinstance(table, pd.DataFrame) or table.empty:
        raise AuditError("metric table is empty")
    needed = {"model", "subtask", "group", *by} | {c for gap, pairs in PAIRINGS.values() for _, c, _ in pairs} | {
        gap for gap, _ in PAIRINGS.values()}
    missing = sorted(needed - set(table.columns))
    if missing:
        raise AuditError(f"metric table is missing column(s): {', '.join(missing)}")


def pearson(x, y) -> tuple[float, float, int]:
    """(r, two-sided p-value, n) over the pairs where both are finite; NaN r and p when n < 3 or one is constant.

    As ``scipy.stats.pearsonr`` computes them: p = 2·(1 − I_{(1 + |r|)/2}(n/2 − 1, n/2 − 1)), r's beta law under
    independence."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan"), int(x.size)
    from scipy.special import betaincc  # here, not above: importing the metrics loads no SciPy

    r = float(np.clip(np.vecdot(_unit(x), _unit(y)), -1.0, 1.0))
    return r, float(2 * betaincc(x.size / 2 - 1, x.size / 2 - 1, (abs(r) + 1) / 2)), int(x.size)


def _unit(values: np.ndarray) -> np.ndarray:
    """``values`` centred and scaled to unit length (rescaled first against overflow, as SciPy does)."""
    centred = values - values.mean()
    top = np.abs(centred).max()
    return centred / (top * np.linalg.norm(centred / top, ord=2, axis=-1))


def validity(table: pd.DataFrame, *, by: Sequence[str] = BY) -> pd.DataFrame:
    """Pearson r (with p-value and n) of each metric with ΔDP and ΔEO over all (model, subtask, group) points
    (``scope`` = ``overall``, the paper's Table 1) and within each group across models and subtasks (``scope`` =
    the group, Figure 6), separately for each combination of ``by`` (default mode and k).

    Columns: *by, scope, gap, metric, column, r, pvalue, n.
    """
    _check(table, by)
    rows = []
    for level, part in table.groupby(list(by), sort=True):
        scopes = [("overall", part)] + list(part.groupby("group", sort=True))
        for scope, points in scopes:
            for gap, (gap_column, pairs) in PAIRINGS.items():
                for metric, column, absolute in pairs:
                    target = points[gap_column].abs() if absolute else points[gap_column]
                    r, p, n = pearson(points[column], target)
                    rows.append((*level, scope, gap, metric, column, r, p, n))
    return pd.DataFrame(rows, columns=[*by, "scope", "gap", "metric", "column", "r", "pvalue", "n"])


def model_rankings(table: pd.DataFrame, *, by: Sequence[str] = BY) -> pd.DataFrame:
    """Per subtask, each model's root mean square over groups, RMS(v) = √(mean_A v(A, B)²), of each metric and of the
    true gap (``metric`` = ``true``), and its fairness rank: ascending RMS (least biased first), ties broken by model
    name. Columns: *by, subtask, gap, metric, model, rms, rank (NA where the metric is missing)."""
    _check(table, by)
    frames = []
    for gap, (gap_column, pairs) in PAIRINGS.items():
        for metric, column in [("true", gap_column)] + [(m, c) for m, c, _ in pairs]:
            rms = (table.assign(_sq=table[column] ** 2)
                   .groupby([*by, "subtask", "model"], sort=True)["_sq"].mean(numeric_only=True) ** 0.5)
            frame = rms.rename("rms").reset_index()
            frame.insert(len(by) + 1, "gap", gap)
            frame.insert(len(by) + 2, "metric", metric)
            frames.append(frame)
    out = pd.concat(frames, ignore_index=True).sort_values([*by, "subtask", "gap", "metric", "rms", "model"],
                                                           na_position="last")
    ranked = out["rms"].notna()
    out["rank"] = pd.Series(out[ranked].groupby([*by, "subtask", "gap", "metric"]).cumcount() + 1, dtype="Int64")
    return out.reset_index(drop=True)


def ndcg_at(ranking: Sequence, ideal: Sequence, n: int) -> float:
    """NDCG@n of a model ranking τ against the ideal ranking σ (both best first), Järvelin & Kekäläinen 2002:

        NDCG@n(τ) = DCG@n(τ) / DCG@n(σ),   DCG@n(τ) = Σ_{i=1}^{n} rel(τ(i)) / log2(i + 1),
        rel(M) = σ_max − σ⁻¹(M)

    where σ⁻¹(M) ∈ {1, …, σ_max} is M's ideal rank and σ_max the number of models: the paper's "reverse ideal rank",
    so the ideal best model has relevance σ_max − 1 and the ideal worst 0. n beyond the list length counts the whole
    list. NaN when DCG@n(σ) = 0 (a single model).
    """
    ranking, ideal = list(ranking), list(ideal)
    if sorted(map(str, ranking)) != sorted(map(str, ideal)) or len(set(ideal)) != len(ideal):
        raise AuditError(f"rankings must order the same models: {ranking} vs {ideal}")
    if n < 1:
        raise AuditError(f"NDCG cutoff n={n} must be at least 1")
    relevance = {model: len(ideal) - position for position, model in enumerate(ideal, start=1)}
    discount = 1 / np.log2(np.arange(2, min(n, len(ideal)) + 2))
    best = float(np.dot([relevance[m] for m in ideal[:n]], discount))
    return float(np.dot([relevance[m] for m in ranking[:n]], discount) / best) if best > 0 else float("nan")


def ndcg_table(table: pd.DataFrame, *, by: Sequence[str] = BY) -> pd.DataFrame:
    """Average over subtasks of NDCG@N (N = 1 … number of models) of each metric's model ranking against the
    true-gap ranking (the paper's Figure 4). Columns: *by, gap, metric, n, ndcg, subtasks."""
    ranks = model_rankings(table, by=by).dropna(subset=["rank"])
    rows = []
    for (*level, subtask, gap), part in ranks.groupby([*by, "subtask", "gap"], sort=True):
        orders = {metric: list(rows_["model"]) for metric, rows_ in part.groupby("metric", sort=True)}
        ideal = orders.pop("true", None)  # None where no model has a finite true gap (e.g. a bootstrap replicate)
        for metric, order in orders.items():
            if ideal is not None and len(order) == len(ideal):
                rows += [(*level, subtask, gap, metric, n, ndcg_at(order, ideal, n)) for n in range(1, len(ideal) + 1)]
    frame = pd.DataFrame(rows, columns=[*by, "subtask", "gap", "metric", "n", "ndcg"])
    return (frame.groupby([*by, "gap", "metric", "n"], sort=True)
            .agg(ndcg=("ndcg", "mean"), subtasks=("subtask", "nunique")).reset_index())
