"""Bootstrap bands for predictive validity: Pearson r (overall and per group) and NDCG@N with percentile intervals.

A replicate resamples the candidates of every group within each (model, subtask, mode) (see
:mod:`audit.metrics.bootstrap`) and recomputes every metric and both gaps, so the interval of r reflects the candidate
sample behind each point, not only the scatter of the points. The replicate values are kept as arrays aligned with
the metric-table rows (:func:`draws_table`); :func:`validity_bands` and :func:`ndcg_bands` then recompute r and NDCG
for all replicates at once. Pairings (which metric faces which gap) come from :data:`audit.metrics.validity.PAIRINGS`.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from audit.errors import AuditError
from audit.metrics.allocation import row_index
from audit.metrics.bootstrap import percentiles, replicates, row_draws
from audit.metrics.keys import split_keys
from audit.design import PoolDesign
from audit.metrics.pools import pool_size
from audit.metrics.presets import Preset, get_preset
from audit.metrics.schema import KEY
from audit.metrics.validity import BY, PAIRINGS, ndcg_table, validity

INDEX = (*KEY, "group", "k")


def draws_table(scores: pd.DataFrame, *, reference: str, pool: "str | PoolDesign" = "per-group", n_boot: int = 200,
                seed: int = 0, preset: "str | Preset" = "default") -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """(index, draws): ``index`` has one row per (model, subtask, mode, group ≠ reference, k) as in the metric table,
    ``draws[column]`` is (rows, n_boot), the bootstrap replicates of that metric or gap column on each row (JSD NaN
    under the ``paper-exact`` preset, whose estimator is not resampled)."""
    if n_boot < 2:
        raise AuditError(f"bootstrap replicates {n_boot} must be at least 2")
    design, chosen = PoolDesign.parse(pool), get_preset(preset)
    frames, parts = [], {}
    for data in split_keys(scores, reference=reference):
        size = pool_size(design, data)
        frames.append(row_index(data, size))
        for name, rows in row_draws(data, size, replicates(data, design, n_boot=n_boot, seed=seed, bins=chosen.jsd_bins,
                                                           paper_jsd=chosen.paper_jsd)).items():
            parts.setdefault(name, []).append(rows)
    return pd.concat(frames, ignore_index=True), {name: np.concatenate(rows) for name, rows in parts.items()}


def aligned(table: pd.DataFrame, index: pd.DataFrame, draws: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The draws of ``table``'s rows (matched on model, subtask, mode, group, k); NaN rows where none match."""
    keys = [c for c in INDEX if c in table]
    position = (table[keys].astype(str).merge(index[keys].astype(str).assign(_row=np.arange(len(index))),
                                              on=keys, how="left")["_row"].to_numpy())
    found = np.isfinite(position)
    out = {}
    for name, values in draws.items():
        rows = np.full((len(table), values.shape[1]), np.nan)
        rows[found] = values[position[found].astype(int)]
        out[name] = rows
    return out


def pearson_draws(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each column of x and y (points, replicates) over the rows where both are finite; NaN when fewer
    than 3 or one side is constant."""
    keep = np.isfinite(x) & np.isfinite(y)
    n = keep.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = np.where(keep, x - np.where(keep, x, 0).sum(axis=0) / n, 0)
        dy = np.where(keep, y - np.where(keep, y, 0).sum(axis=0) / n, 0)
        r = (dx * dy).sum(axis=0) / np.sqrt((dx ** 2).sum(axis=0) * (dy ** 2).sum(axis=0))
    return np.where(n >= 3, np.clip(r, -1, 1), np.nan)


def _quantiles(values: np.ndarray, level: float) -> tuple[float, float]:
    if not np.isfinite(values).any():
        return float("nan"), float("nan")
    low, high = percentiles(values, level)
    return float(low), float(high)


def validity_bands(table: pd.DataFrame, index: pd.DataFrame, draws: dict[str, np.ndarray], *, level: float = 0.95,
                   by: Sequence[str] = BY) -> pd.DataFrame:
    """:func:`audit.metrics.validity` of ``table`` with ``r_lo``/``r_hi``: the percentile bootstrap interval of each r
    (overall and per group), recomputed from the candidate-level replicates ``draws`` of :func:`draws_table`."""
    out = validity(table, by=by)
    rows = aligned(table, index, draws)
    pairs = {(gap, metric): (gap_column, column, absolute)
             for gap, (gap_column, pairings) in PAIRINGS.items() for metric, column, absolute in pairings}
    levels = table.groupby(list(by), sort=True).indices
    scoped = table.groupby([*by, "group"], sort=True).indices
    empty = np.full((len(table), next(iter(rows.values())).shape[1] if rows else 1), np.nan)
    bounds = []
    for record in out.itertuples(index=False):
        level_key = tuple(getattr(record, b) for b in by)
        points = levels[level_key if len(by) > 1 else level_key[0]] if record.scope == "overall" else (
            scoped[(*level_key, record.scope)])
        gap_column, column, absolute = pairs[(record.gap, record.metric)]
        x, y = rows.get(column, empty)[points], rows.get(gap_column, empty)[points]
        bounds.append(_quantiles(pearson_draws(x, np.abs(y) if absolute else y), level))
    out["r_lo"], out["r_hi"] = (np.array([b[i] for b in bounds]) if bounds else np.array([]) for i in (0, 1))
    return out


def _rms(values: np.ndarray, model: np.ndarray, models: int) -> np.ndarray:
    """(models, replicates): √ of the NaN-skipping mean square of each model's rows of ``values`` (rows, replicates)."""
    member = (model[None, :] == np.arange(models)[:, None]).astype(float)
    finite = np.isfinite(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt(member @ np.where(finite, values ** 2, 0) / (member @ finite))


def _subtask_ndcg(rows: dict[str, np.ndarray], points: np.ndarray, model: np.ndarray, models: int
                  ) -> dict[tuple[str, str], np.ndarray]:
    """{(gap, metric): (models, replicates)} NDCG@1..models of one subtask's replicate rankings (NaN where a ranking
    is incomplete), models ranked by ascending RMS with ties by name, relevance = models − ideal rank."""
    discount = 1 / np.log2(np.arange(2, models + 2))
    ideal = np.cumsum((models - 1 - np.arange(models)) * discount)
    out = {}
    for gap, (gap_column, pairs) in PAIRINGS.items():
        true = _rms(rows[gap_column][points], model, models)
        relevance = models - 1 - np.argsort(np.argsort(true, axis=0, kind="stable"), axis=0, kind="stable")
        for metric, column, _ in pairs:
            if column not in rows:
                continue
            rms = _rms(rows[column][points], model, models)
            gained = np.take_along_axis(relevance, np.argsort(rms, axis=0, kind="stable"), axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                ndcg = np.cumsum(gained * discount[:, None], axis=0) / ideal[:, None]
            ndcg[:, ~(np.isfinite(true).all(axis=0) & np.isfinite(rms).all(axis=0))] = np.nan
            out[(gap, metric)] = ndcg
    return out


def ndcg_bands(table: pd.DataFrame, index: pd.DataFrame, draws: dict[str, np.ndarray], *, level: float = 0.95,
               by: Sequence[str] = BY) -> pd.DataFrame:
    """:func:`audit.metrics.ndcg_table` of ``table`` with ``ndcg_lo``/``ndcg_hi``: every replicate's metric table
    re-ranked and re-scored at once, NDCG@N averaged over subtasks per replicate, then the percentile interval."""
    out = ndcg_table(table, by=by)
    rows = aligned(table, index, draws)
    if out.empty or not rows:
        return out.assign(ndcg_lo=np.nan, ndcg_hi=np.nan)
    scores: dict[tuple, list[np.ndarray]] = {}
    names = table["model"].astype(str).to_numpy()
    for key, points in table.groupby([*by, "subtask"], sort=True).indices.items():
        models, model = np.unique(names[points], return_inverse=True)
        for (gap, metric), ndcg in _subtask_ndcg(rows, points, model, models.size).items():
            for n in range(models.size):
                scores.setdefault((*key[:-1], gap, metric, n + 1), []).append(ndcg[n])
    bands = []
    for key, per_subtask in scores.items():
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(np.stack(per_subtask), axis=0)
        bands.append((*key, *_quantiles(mean, level)))
    keys = [*by, "gap", "metric", "n"]
    return out.merge(pd.DataFrame(bands, columns=[*keys, "ndcg_lo", "ndcg_hi"]), on=keys, how="left")
