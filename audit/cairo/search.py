"""CAIRO prompt selection (section 5.3): for two metrics, the pair of combinations whose model biases correlate best.

For a metric pair (a, b) and combination size m, every combination c of metric a gives a bias vector B_a[:, c]
over the models, likewise c′ for b. Pearson r(c, c′) = z_a[:, c] · z_b[:, c′] with z the bias centred over models
and scaled to unit norm, so all r(c, c′) form one matrix product Z_aᵀ Z_b (computed in row blocks for the maximum).
Reported per m, as in the paper's Figure 6: the best r (CAIRO), the average r over all pairs of combinations (exact:
mean z_a · mean z_b, no product needed), and the original-only r (both metrics on their original prompts).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from audit.cairo.bias import MetricCells, combination_bias, combination_sets, combination_weights
from audit.errors import AuditError

MIN_MODELS = 3
BLOCK = 1024


def unit_columns(bias: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(z, valid): each column centred over models (rows) and scaled to unit norm; constant columns are invalid."""
    centred = bias - bias.mean(axis=0, keepdims=True)
    norm = np.linalg.norm(centred, axis=0)
    valid = norm > 1e-12 * np.maximum(1.0, np.abs(bias).max(axis=0))
    return centred / np.where(valid, norm, 1.0), valid


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson r of two bias vectors over models (NaN when one is constant)."""
    (za, va), (zb, vb) = unit_columns(a[:, None]), unit_columns(b[:, None])
    return float(za[:, 0] @ zb[:, 0]) if va[0] and vb[0] else float("nan")


def best_pair(bias_a: np.ndarray, bias_b: np.ndarray) -> tuple[float, int, int, float]:
    """(best r, its column in ``bias_a``, its column in ``bias_b``, mean r over all valid column pairs)."""
    (za, va), (zb, vb) = unit_columns(bias_a), unit_columns(bias_b)
    cols_a, cols_b = np.flatnonzero(va), np.flatnonzero(vb)
    if not len(cols_a) or not len(cols_b):
        return float("nan"), -1, -1, float("nan")
    za, zb = za[:, cols_a], zb[:, cols_b]
    average = float(za.mean(axis=1) @ zb.mean(axis=1))
    best, at = -np.inf, (0, 0)
    for start in range(0, za.shape[1], BLOCK):
        block = za[:, start : start + BLOCK].T @ zb
        flat = int(block.argmax())
        if block.flat[flat] > best:
            best, at = float(block.flat[flat]), (start + flat // block.shape[1], flat % block.shape[1])
    return best, int(cols_a[at[0]]), int(cols_b[at[1]]), average


@dataclass(frozen=True)
class PairResult:
    """One (dimension, metric pair, m): the correlations and both metrics' best combination."""

    dimension: str
    metric_a: str
    metric_b: str
    m: int
    models: tuple[str, ...]
    best_r: float
    average_r: float
    original_r: float
    sets_a: tuple[str, ...]
    sets_b: tuple[str, ...]
    sources_a: tuple[str, ...]  # who wrote or paraphrased each of sets_a
    sources_b: tuple[str, ...]
    bias_a: dict[str, tuple[float, float]]  # model → (original-only bias, best-combination bias)
    bias_b: dict[str, tuple[float, float]]
    combinations_a: int
    combinations_b: int


def search_pair(cells_a: MetricCells, cells_b: MetricCells, m: int) -> PairResult:
    """CAIRO for one metric pair and combination size m, over the models both metrics scored."""
    models = tuple(sorted(set(cells_a.models) & set(cells_b.models)))
    if len(models) < MIN_MODELS:
        raise AuditError(f"{cells_a.dimension}: Pearson r across models needs ≥ {MIN_MODELS} models scored on both "
                         f"{cells_a.metric} and {cells_b.metric}, found {list(models)}")
    cells_a, cells_b = cells_a.restricted(models), cells_b.restricted(models)
    w_a, w_b = (combination_weights(len(c.sets) - 1, m) for c in (cells_a, cells_b))
    bias_a, bias_b = combination_bias(cells_a, w_a), combination_bias(cells_b, w_b)
    orig_a, orig_b = (combination_bias(c, combination_weights(len(c.sets) - 1, 1))[:, 0] for c in (cells_a, cells_b))
    best, col_a, col_b, average = best_pair(bias_a, bias_b)
    found = col_a >= 0
    sets_a = tuple(combination_sets(cells_a, w_a[col_a])) if found else ()
    sets_b = tuple(combination_sets(cells_b, w_b[col_b])) if found else ()
    return PairResult(
        cells_a.dimension, cells_a.metric, cells_b.metric, m, models, best, average, pearson(orig_a, orig_b),
        sets_a, sets_b, tuple(cells_a.sources[cells_a.sets.index(s)] for s in sets_a),
        tuple(cells_b.sources[cells_b.sets.index(s)] for s in sets_b),
        {mo: (float(o), float(b[col_a]) if found else float("nan")) for mo, o, b in zip(models, orig_a, bias_a)},
        {mo: (float(o), float(b[col_b]) if found else float("nan")) for mo, o, b in zip(models, orig_b, bias_b)},
        len(w_a), len(w_b))


def search_all(cells: dict[tuple[str, str], MetricCells], max_m: int) -> list[PairResult]:
    """:func:`search_pair` for every dimension, metric pair (alphabetical) and m = 1 … ``max_m``."""
    if max_m < 1:
        raise AuditError(f"--max-m must be at least 1, got {max_m}")
    results = []
    for dimension in sorted({d for d, _ in cells}):
        metrics = sorted(metric for d, metric in cells if d == dimension)
        for a, b in combinations(metrics, 2):
            results.extend(search_pair(cells[(dimension, a)], cells[(dimension, b)], m) for m in range(1, max_m + 1))
    if not results:
        raise AuditError("no bias dimension has scored continuations from two metrics: nothing to correlate")
    return results


def correlation_table(results: list[PairResult]) -> pd.DataFrame:
    """One row per (dimension, metric pair, m): best, average and original-only r, and the best sets."""
    return pd.DataFrame([{
        "dimension": r.dimension, "metric_a": r.metric_a, "metric_b": r.metric_b, "m": r.m,
        "models": len(r.models), "combinations_a": r.combinations_a, "combinations_b": r.combinations_b,
        "best_r": r.best_r, "average_r": r.average_r, "original_r": r.original_r,
        "best_sets_a": list(r.sets_a), "best_sets_b": list(r.sets_b)} for r in results])


def source_table(result: PairResult) -> pd.DataFrame:
    """How many of each metric's best-combination sets each source contributed (the paper's Figure 7)."""
    rows = [{"metric": metric, "source": source, "set": name}
            for metric, sets, sources in ((result.metric_a, result.sets_a, result.sources_a),
                                          (result.metric_b, result.sets_b, result.sources_b))
            for name, source in zip(sets, sources)]
    frame = pd.DataFrame(rows, columns=["metric", "source", "set"])
    return frame.groupby(["metric", "source"], as_index=False).agg(sets=("set", "size"),
                                                                    names=("set", lambda s: ", ".join(s)))


def ranking_table(result: PairResult) -> pd.DataFrame:
    """Each model's bias per metric with and without CAIRO, normalised by the metric's largest bias (Figure 8),
    and its rank (1 = most biased)."""
    rows = []
    for metric, biases in ((result.metric_a, result.bias_a), (result.metric_b, result.bias_b)):
        for variant, index in (("original prompts", 0), (f"CAIRO (m = {result.m})", 1)):
            values = pd.Series({model: pair[index] for model, pair in biases.items()})
            top = values.abs().max()
            for model, value in values.items():
                rows.append({"metric": metric, "prompts": variant, "model": model, "bias": value,
                             "normalised_bias": value / top if top > 0 else 0.0,
                             "rank": int(values.rank(ascending=False, method="min")[model])})
    return pd.DataFrame(rows)
