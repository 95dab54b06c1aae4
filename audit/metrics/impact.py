"""Impact ratios (NYC Local Law 144 bias-audit summary; EEOC four-fifths rule) from the suite's exact selection rates.

For a grouping of the task's groups into categories (race, gender, or the intersection itself), the candidates are
pooled into the categories and pools hold one candidate per category (``per-group``) or are drawn at random, as the
dashboard's groupings do. Then, at quota k:

    selection rate(C) = φ(C, k)  (the expected share of C's pool members selected, :mod:`audit.metrics.allocation`)
    impact ratio(C)   = φ(C, k) / max_D φ(D, k)      flagged when below 0.8 (the four-fifths rule)

Categories with an ``unknown`` part (the LL144 unknown category of imported decision logs) keep their selection
rate but get no impact ratio and are never the most-selected category.

Confidence intervals: the selection rates' are percentile bootstrap intervals of the same replicates as the suite's
gap bounds; the ratio's is the verdict's one interval (:func:`pairwise_bounds`): the pairwise ratio against the
observed most-selected category, pool-robust Katz for recorded pools, percentile bootstrap of the pair otherwise.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np
import pandas as pd

from audit.errors import AuditError
from audit.metrics.allocation import check_quotas, shares
from audit.metrics.bootstrap import percentile_bounds, percentiles, pool_share_draws, share_draws
from audit.metrics.exact import katz_bounds, pair_errors
from audit.metrics.keys import KeyData, selection_keys
from audit.metrics.ll144 import MIN_APPLICANTS, UNKNOWN
from audit.design import PoolDesign, PoolKind
from audit.metrics.pools import pool_size, quota_counts
from audit.metrics.schema import KEY

FOUR_FIFTHS = 0.8
COLUMNS = (*KEY, "grouping", "category", "k", "candidates", "selection_rate", "impact_ratio", "four_fifths")
CI_COLUMNS = ("selection_rate_lo", "selection_rate_hi", "impact_ratio_lo", "impact_ratio_hi")


def known_categories(categories: Iterable[str]) -> np.ndarray:
    """False for the LL144 unknown category (a code with an ``unknown`` part): it keeps its selection rate but gets
    no impact ratio and is never the most-selected category (all True when every category is unknown)."""
    known = np.array([UNKNOWN not in str(c).split("_") for c in categories])
    return known if known.any() else np.ones_like(known)


def distinct_candidates(data: KeyData) -> np.ndarray:
    """Per group of ``data``: how many distinct candidates it has (a candidate in several pools counts once)."""
    if np.bincount(data.candidate_code, minlength=1).max() <= 1:  # every candidate once (no hashing needed)
        return np.bincount(data.group, minlength=len(data.groups))
    pairs = pd.unique(data.group.astype(np.int64) * data.candidate_names.size + data.candidate_code)
    return np.bincount(pairs // data.candidate_names.size, minlength=len(data.groups))


def impact_ratios(scores: pd.DataFrame, *, ks: Iterable[int] | int, pool: "str | PoolDesign" = "per-group",
                  grouping: str, ci: float | None = None, n_boot: int = 1000, seed: int = 0,
                  keys: list[KeyData] | None = None) -> pd.DataFrame:
    """One row per (model, subtask, mode, category, k) of ``scores`` whose groups are the categories of
    ``grouping`` (already coarsened, see :meth:`audit.design.AuditDesign.category`): distinct candidates, selection
    rate, impact ratio against the most-selected category and the four-fifths flag (ratio < 0.8); with ``ci`` also
    the bootstrap bounds ``selection_rate_lo/hi`` and ``impact_ratio_lo/hi``. ``keys``: ``scores`` already split
    (:func:`audit.metrics.keys.split_keys`), when the caller holds them."""
    design = PoolDesign.parse(pool)
    if scores.empty:
        raise AuditError("no scores to compute impact ratios from")
    keys = keys if keys is not None else selection_keys(scores)
    return pd.concat([key_impact(data, design, check_quotas(ks, pool_size(design, data), data, design),
                                 grouping=grouping, ci=ci, n_boot=n_boot, seed=seed) for data in keys],
                     ignore_index=True)


def key_impact(data: KeyData, design: PoolDesign, quotas: list[int], *, grouping: str, ci: float | None,
               n_boot: int, seed: int) -> pd.DataFrame:
    """The rows of :func:`impact_ratios` for one key, category by category, each at every quota in turn. Recorded
    pools are read as their decisions summed per pool at every quota (:func:`audit.metrics.pools.quota_counts`,
    once): the rate is selected ÷ members over all pools, a bootstrap replicate the same sums with its pool weights,
    the ratio's standard error a sum over the pools."""
    observed = design.kind == PoolKind.OBSERVED
    if observed:
        members, selected = quota_counts(data, quotas)
        with np.errstate(invalid="ignore", divide="ignore"):
            phi = selected.sum(axis=0) / members.sum(axis=0)[:, None]
    else:
        phi = shares(data, design)[0][:, np.asarray(quotas) - 1]
    known = known_categories(data.groups)
    candidates = distinct_candidates(data)
    top = most_selected(phi, comparable(data, known, candidates))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(known[:, None], phi / phi[top, np.arange(len(quotas))], np.nan)
    columns = {"selection_rate": phi, "impact_ratio": ratio}
    if ci is not None:
        draws = (share_draws(data, design, n_boot=n_boot, seed=seed)[0][:, :, np.asarray(quotas) - 1]
                 if not observed else pool_share_draws(data, members, selected, n_boot=n_boot, seed=seed))
        with warnings.catch_warnings():  # the unknown category's rates may be NaN in every replicate
            warnings.simplefilter("ignore", RuntimeWarning)
            columns.update(percentile_bounds("selection_rate", draws, ci))
        upper = ratio_level(ci, int(known.sum()))
        bounds = (recorded_bounds(data, members, selected, phi, top, ci, upper) if observed
                  else bootstrap_bounds(draws, top, ci, upper))
        columns.update({"impact_ratio_lo": bounds[0], "impact_ratio_hi": bounds[1]})
    frame = pd.DataFrame({**dict(zip(KEY, data.key)), "grouping": grouping,
                          "category": np.repeat(data.groups, len(quotas)),
                          "candidates": np.repeat(candidates, len(quotas)),
                          "k": np.tile(quotas, len(data.groups)),
                          **{name: values.ravel() for name, values in columns.items()},
                          "four_fifths": ratio.ravel() < FOUR_FIFTHS})  # one construction: inserts copy per column
    return frame[[*COLUMNS, *(CI_COLUMNS if ci is not None else ())]]


def comparable(data: KeyData, known: np.ndarray, candidates: np.ndarray | None = None) -> np.ndarray:
    """The categories that may be the comparator: the ``known`` ones, and of those only the ones with at least
    :data:`audit.metrics.ll144.MIN_APPLICANTS` candidates when any has that many (a tiny category's rate is too
    noisy to compare every other category with). ``candidates``: :func:`distinct_candidates` of ``data``, when the
    caller holds them."""
    candidates = distinct_candidates(data) if candidates is None else candidates
    enough = known & (candidates >= MIN_APPLICANTS)
    return enough if enough.any() else known


def ratio_level(ci: float, compared: int) -> float:
    """The level of a ratio interval's *upper* bound: ``ci`` shared (Bonferroni) over the G − 1 comparisons of the
    ``compared`` categories with the comparator. The comparator is chosen from the data: with close categories it
    is the winner of near ties, its rate biased up and every ratio against it biased down, so the upper bounds fall
    short (8 groups: 92 % coverage at a plain 95 %, 99 % shared; the lower bound, which decides "no evidence",
    keeps the plain level and its misses stay under 2.5 %)."""
    return 1 - (1 - ci) / max(compared - 1, 1)


def most_selected(rate: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Per quota (column of ``rate``, groups × quotas): the index of the most-selected known category."""
    indices = np.flatnonzero(known)
    return indices[rate[indices].argmax(axis=0)]


def bootstrap_bounds(draws: np.ndarray, top: np.ndarray, ci: float, upper: float) -> np.ndarray:
    """(2, groups, quotas): percentile interval of each category's ratio to the comparator ``top`` over the pair's
    own bootstrap ``draws`` (n_boot, groups, quotas) of the selection rates, the lower bound at level ``ci`` and the
    upper at ``upper`` (:func:`ratio_level`); NaN for the comparator itself."""
    columns = np.arange(draws.shape[2])
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the comparator's own (constant) draws, unknown categories
        ratios = draws / draws[:, top, columns][:, None]
        bounds = np.stack([percentiles(ratios, ci)[0], percentiles(ratios, upper)[1]])
    bounds[:, top, columns] = np.nan
    return bounds


def recorded_bounds(data: KeyData, members: np.ndarray, selected: np.ndarray, rate: np.ndarray, top: np.ndarray,
                    ci: float, upper: float) -> np.ndarray:
    """(2, groups, quotas): Katz log interval of each category's ratio to the comparator ``top``, with the
    pool-robust standard error of recorded pools (:func:`audit.metrics.exact.pair_errors`) from each pool's
    ``members`` (pools, groups) and ``selected`` (pools, groups, quotas); NaN for the comparator, the unknown
    category and a category that shares no pool with the comparator."""
    known = known_categories(data.groups)
    bounds = np.full((2, *rate.shape), np.nan)
    for g, j in np.ndindex(*rate.shape):
        shared = ((members[:, g] > 0) & (members[:, top[j]] > 0)).any()
        if g != top[j] and known[g] and np.isfinite(rate[g, j]) and shared:
            se_log = pair_errors(members, selected[:, :, j], g, top[j])[1]
            bounds[:, g, j] = katz_bounds(rate[g, j] / rate[top[j], j], se_log, ci, upper)
    return bounds
