"""The audit's answer: one verdict per system × grouping × category at quota k, rolled up per system and overall.

The rule (stated once, :data:`RULE`; the CLI, pages and report quote it):

* **adverse impact** — the impact ratio (selection rate ÷ the most-selected category's) is below ``threshold``
  (four-fifths by default) *and* the permutation test of equal selection rates against the most-selected category
  rejects at α = 1 − ci after Holm's adjustment over the categories of that system and grouping;
* **no evidence of adverse impact at this sample size** — the impact ratio's bootstrap interval lies entirely above
  ``threshold``;
* **inconclusive** — otherwise, with the planner's estimate (:mod:`audit.metrics.planner`) of the candidates per group
  an audit needs for its ΔDP interval to be narrow enough to decide: half-width below the distance between the
  category's selection rate and the threshold (``threshold × top rate``), or below the gap itself when the ratio
  is under the threshold.

A quota k must be below the pool size: at k = pool size every candidate is selected and every ratio is 1 by
construction, so no verdict is defined there.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np
import pandas as pd

from audit.design import PoolDesign, PoolKind
from audit.errors import AuditError
from audit.metrics.impact import FOUR_FIFTHS, key_impact, known_categories
from audit.metrics.inference import adjust, permutation_pvalues, permuted_shares
from audit.metrics.keys import KeyData, split_keys
from audit.metrics.planner import SIZES, gap_half_widths, needed, planned_shares
from audit.metrics.pools import pool_size
from audit.metrics.schema import KEY, is_pairwise

ADVERSE = "adverse impact"
NO_EVIDENCE = "no evidence of adverse impact at this sample size"
INCONCLUSIVE = "inconclusive"
#: strongest first: the order of roll-ups
STRENGTH = (ADVERSE, INCONCLUSIVE, NO_EVIDENCE)
_SHORT = ("adverse", "inconclusive", "no_evidence")
RULE = ("Adverse impact: impact ratio below {threshold:g} and the permutation test of equal selection rates "
        "(against the most-selected category, Holm-adjusted over the categories of one system and grouping) rejects "
        "at α = {alpha:g}. No evidence of adverse impact at this sample size: the ratio's {level:.0%} bootstrap "
        "interval lies above {threshold:g}. Otherwise inconclusive, with the candidates per group an audit needs to "
        "decide (planner estimate).")
COLUMNS = (*KEY, "grouping", "category", "k", "candidates", "selection_rate", "impact_ratio", "impact_ratio_lo",
           "impact_ratio_hi", "p_adj", "verdict", "needed_per_group", "more_per_group")


def rule_text(threshold: float = FOUR_FIFTHS, ci: float = 0.95) -> str:
    """The verdict rule in words, with this audit's threshold and confidence level."""
    return RULE.format(threshold=threshold, alpha=round(1 - ci, 6), level=ci)


def classify(ratio: float, ratio_lo: float, p_adj: float, *, threshold: float = FOUR_FIFTHS,
             alpha: float = 0.05) -> str:
    """The verdict of one category (see the module's rule); NaN p-values (the most-selected category) never
    reject."""
    if ratio < threshold and np.isfinite(p_adj) and p_adj <= alpha:
        return ADVERSE
    if np.isfinite(ratio_lo) and ratio_lo > threshold:
        return NO_EVIDENCE
    return INCONCLUSIVE


def decision_target(rate: float, top_rate: float, ratio: float, threshold: float) -> float:
    """The ΔDP half-width at which the interval would decide: the distance from the rate to ``threshold × top``
    (ratio at or above the threshold) or the gap to the top rate (ratio below it), kept within (0.005, 0.5)."""
    distance = abs(rate - threshold * top_rate) if ratio >= threshold else abs(top_rate - rate)
    return float(np.clip(distance, 0.005, 0.5))


def check_k(scores: pd.DataFrame, k: int, pool: "str | PoolDesign", grouping: str) -> int:
    """The smallest pool size of ``scores`` (groups: the categories of ``grouping``); an AuditError naming it when
    k is not in 1 … pool size − 1."""
    design = PoolDesign.parse(pool)
    return _check_quotas(split_keys(scores, reference=str(scores["group"].iloc[0])), [k], design, grouping)[1]


def _check_quotas(keys: list[KeyData], ks: "int | Iterable[int]", design: PoolDesign, grouping: str
                  ) -> tuple[list[int], int]:
    """(the quotas sorted, the smallest pool size); an AuditError naming the size for a k not in 1 … size − 1."""
    quotas = sorted({int(k) for k in ([ks] if isinstance(ks, (int, np.integer)) else ks)})
    size = min(pool_size(design, data) for data in keys)
    for k in quotas:
        if not 1 <= k < size:
            raise AuditError(f"quota k={k} is not below the pool size {size} of grouping {grouping!r} (pool design "
                             f"{design}): at k = pool size everyone is selected; choose k in 1 … {size - 1}")
    if not quotas:
        raise AuditError("no quota k given")
    return quotas, size


def verdicts(scores: pd.DataFrame, *, grouping: str, k: "int | Iterable[int]", pool: "str | PoolDesign" = "per-group",
             threshold: float = FOUR_FIFTHS, ci: float = 0.95, n_boot: int = 1000, n_perm: int = 1000,
             plan_boot: int = 100, seed: int = 0) -> pd.DataFrame:
    """One row per system (model, task, subtask, mode) × category × quota in ``k`` (columns :data:`COLUMNS`) of
    pointwise ``scores`` whose groups are already the categories of ``grouping`` (see
    :meth:`audit.design.AuditDesign.category`): impact ratio and its bootstrap interval, Holm-adjusted permutation
    p-value, verdict, and for inconclusive rows the planner's candidates per group needed (``needed_per_group``)
    and how many more than the system's smallest category has now (``more_per_group``).

    The permutations and the planner's draws of a system are made once and serve every k and every most-selected
    category: a verdict at each k costs about what one does."""
    if not 0 < threshold <= 1:
        raise AuditError(f"threshold {threshold} must lie in (0, 1]")
    if not 0 < ci < 1:
        raise AuditError(f"confidence level {ci} must lie strictly between 0 and 1")
    if scores.empty:
        raise AuditError("no pointwise scores to judge")
    design = PoolDesign.parse(pool)
    keys = split_keys(scores, reference=str(scores["group"].iloc[0]))
    quotas = _check_quotas(keys, k, design, grouping)[0]
    frames = [_judged(data, design, quotas, grouping=grouping, threshold=threshold, ci=ci, n_boot=n_boot,
                      n_perm=n_perm, plan_boot=plan_boot, seed=seed) for data in keys]
    return pd.concat(frames, ignore_index=True)[list(COLUMNS)]


def _judged(data: KeyData, design: PoolDesign, quotas: list[int], *, grouping: str, threshold: float, ci: float,
            n_boot: int, n_perm: int, plan_boot: int, seed: int) -> pd.DataFrame:
    """The verdict rows of one system: its impact rows (category by category, each at every quota) with p-values,
    verdicts and the candidates needed."""
    part = key_impact(data, design, quotas, grouping=grouping, ci=ci, n_boot=n_boot, seed=seed)
    shape, columns = (len(data.groups), len(quotas)), np.arange(len(quotas))
    rate, ratio = (part[name].to_numpy().reshape(shape) for name in ("selection_rate", "impact_ratio"))
    top = np.where(known_categories(data.groups)[:, None], rate, -np.inf).argmax(axis=0)  # most selected, per k
    null = permuted_shares(data, design, n_perm=n_perm, seed=seed)[0][:, :, np.asarray(quotas) - 1]
    p = permutation_pvalues({"dp": rate - rate[top, columns]}, {"dp": null - null[:, top, columns][:, None]})["dp_p"]
    p[top, columns] = np.nan
    p_adj = np.stack([adjust(p[:, j], "holm") for j in columns], axis=1)
    verdict = np.array([[classify(r, lo, q, threshold=threshold, alpha=1 - ci) for r, lo, q in zip(*row)] for row in
                        zip(ratio, part["impact_ratio_lo"].to_numpy().reshape(shape), p_adj)])
    needed_n = _needed(data, design, quotas, verdict == INCONCLUSIVE, rate, ratio, top, threshold=threshold,
                       level=ci, plan_boot=plan_boot, seed=seed)
    part["p_adj"], part["verdict"], part["needed_per_group"] = p_adj.ravel(), verdict.ravel(), needed_n.ravel()
    part["more_per_group"] = (part["needed_per_group"] - part["candidates"].min()).clip(lower=0)
    return part


def _needed(data: KeyData, design: PoolDesign, quotas: list[int], todo: np.ndarray, rate: np.ndarray,
            ratio: np.ndarray, top: np.ndarray, *, threshold: float, level: float, plan_boot: int,
            seed: int) -> np.ndarray:
    """(categories, quotas): the candidates per group the planner estimates for each ``todo`` (inconclusive) cell;
    NaN elsewhere, for pairwise scores and when the pool design cannot be resized (observed pools)."""
    out = np.full(todo.shape, np.nan)
    if not todo.any() or design.kind == PoolKind.OBSERVED or is_pairwise(data.key[-1]):
        return out
    if plan_boot < 10:
        raise AuditError(f"bootstrap replicates {plan_boot} must be at least 10")
    grid = sorted({*SIZES, int(np.bincount(data.group).min())})
    draws = planned_shares(data, design, sizes=grid, n_boot=plan_boot, seed=seed)
    widths: dict[int, list] = {}  # per most-selected category: each size's half-widths (groups, L)
    for j in np.flatnonzero(todo.any(axis=0)):
        reference = int(top[j])
        if reference not in widths:
            widths[reference] = [gap_half_widths(phi, reference, level) for phi in draws]
        at_k = np.array([np.full(len(data.groups), np.nan) if np.isscalar(w) else w[:, quotas[j] - 1]
                         for w in widths[reference]])
        at_k[:, reference] = np.nan
        with warnings.catch_warnings():  # a size whose pools do not fit has no width (as the planner reads it)
            warnings.simplefilter("ignore", RuntimeWarning)
            widest = np.nanmax(at_k, axis=1)
        for g in np.flatnonzero(todo[:, j]):
            target = decision_target(rate[g, j], rate[reference, j], ratio[g, j], threshold)
            out[g, j] = needed(grid, widest, target)[0]
    return out


def rollup(table: pd.DataFrame, by: list[str] | tuple[str, ...] = KEY) -> pd.DataFrame:
    """The strongest verdict of each ``by`` group (adverse > inconclusive > no evidence), with counts of each and
    the categories that carry it; rows sorted strongest first. ``by=[]`` rolls the whole audit into one row."""
    rank = {name: i for i, name in enumerate(STRENGTH)}
    keyed = table.assign(_rank=table["verdict"].map(rank), _all=0)
    columns = list(by) or ["_all"]
    rows = []
    for key, part in keyed.groupby(columns, sort=False, observed=True):
        strongest = STRENGTH[int(part["_rank"].min())]
        carriers = part[part["verdict"] == strongest]
        rows.append({**dict(zip(columns, key if isinstance(key, tuple) else (key,))), "verdict": strongest,
                     **{f"n_{short}": int((part["verdict"] == name).sum()) for short, name in zip(_SHORT, STRENGTH)},
                     "categories": ", ".join(f"{g}: {c}" for g, c in zip(carriers["grouping"], carriers.get("name", carriers["category"]))),
                     "_rank": int(part["_rank"].min())})
    out = pd.DataFrame(rows).sort_values("_rank", kind="stable").drop(columns="_rank")
    return out.drop(columns=["_all"], errors="ignore").reset_index(drop=True)
