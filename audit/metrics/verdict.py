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

import numpy as np
import pandas as pd

from audit.design import PoolDesign
from audit.errors import AuditError
from audit.metrics.impact import FOUR_FIFTHS, impact_ratios
from audit.metrics.inference import adjust, gap_pvalues
from audit.metrics.keys import split_keys
from audit.metrics.planner import needed, plan_curves
from audit.metrics.pools import pool_size
from audit.metrics.schema import KEY

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
    size = min(pool_size(design, data) for data in split_keys(scores, reference=str(scores["group"].iloc[0])))
    if not 1 <= k < size:
        raise AuditError(f"quota k={k} is not below the pool size {size} of grouping {grouping!r} (pool design "
                         f"{design}): at k = pool size everyone is selected; choose k in 1 … {size - 1}")
    return size


def _pvalues(pooled: pd.DataFrame, impact: pd.DataFrame, pool: "str | PoolDesign", k: int, n_perm: int,
             seed: int) -> pd.Series:
    """Permutation p-values of each category against its system's most-selected category at k (NaN for it)."""
    out = pd.Series(np.nan, index=impact.index)
    for key, part in impact.groupby(list(KEY), sort=False, observed=True):
        top = str(part.loc[part["selection_rate"].idxmax(), "category"])
        rows = pooled[np.logical_and.reduce([pooled[c].astype(str) == str(v) for c, v in zip(KEY, key)])]
        p = gap_pvalues(rows, reference=top, pool=pool, n_perm=n_perm, seed=seed)
        p = p[p["k"] == k].set_index("group")["dp_gap_p"]
        out.loc[part.index] = part["category"].map(p).to_numpy(dtype=float)
    return out


def _needed(pooled: pd.DataFrame, table: pd.DataFrame, pool: "str | PoolDesign", k: int, threshold: float,
            level: float, n_boot: int, seed: int) -> pd.Series:
    """Candidates per group the planner estimates for each inconclusive row (NaN elsewhere, or when the pool design
    cannot be resized)."""
    out = pd.Series(np.nan, index=table.index)
    todo = table[table["verdict"] == INCONCLUSIVE]
    if todo.empty or PoolDesign.parse(pool).kind == "observed":
        return out
    for key, part in todo.groupby(list(KEY), sort=False, observed=True):
        rows = pooled[np.logical_and.reduce([pooled[c].astype(str) == str(v) for c, v in zip(KEY, key)])]
        if str(key[-1]).startswith("pairwise"):
            continue
        whole = table[np.logical_and.reduce([table[c].astype(str) == str(v) for c, v in zip(KEY, key)])]
        top = whole.loc[whole["selection_rate"].idxmax()]
        curves = plan_curves(rows, reference=str(top["category"]), pool=pool, n_boot=n_boot, level=level, seed=seed)
        widest = curves[curves["k"] == k].groupby("n")["half_width"].max()  # as plan_at reads it, once per system
        for index, row in part.iterrows():
            target = decision_target(row["selection_rate"], top["selection_rate"], row["impact_ratio"], threshold)
            out.loc[index] = needed(widest.index, widest.to_numpy(), target)[0]
    return out


def verdicts(scores: pd.DataFrame, *, grouping: str, k: int, pool: "str | PoolDesign" = "per-group",
             threshold: float = FOUR_FIFTHS, ci: float = 0.95, n_boot: int = 1000, n_perm: int = 1000,
             plan_boot: int = 100, seed: int = 0) -> pd.DataFrame:
    """One row per system (model, task, subtask, mode) × category at quota ``k`` (columns :data:`COLUMNS`) of
    pointwise ``scores`` whose groups are already the categories of ``grouping`` (see
    :meth:`audit.design.AuditDesign.category`): impact ratio and its bootstrap interval, Holm-adjusted permutation
    p-value, verdict, and for inconclusive rows the planner's candidates per group needed (``needed_per_group``)
    and how many more than the system's smallest category has now (``more_per_group``)."""
    if not 0 < threshold <= 1:
        raise AuditError(f"threshold {threshold} must lie in (0, 1]")
    if not 0 < ci < 1:
        raise AuditError(f"confidence level {ci} must lie strictly between 0 and 1")
    if scores.empty:
        raise AuditError("no pointwise scores to judge")
    check_k(scores, k, pool, grouping)
    part = impact_ratios(scores, ks=k, pool=pool, grouping=grouping, ci=ci, n_boot=n_boot, seed=seed)
    part["p"] = _pvalues(scores, part, pool, k, n_perm, seed)
    part["p_adj"] = np.nan
    for _, index in part.groupby(list(KEY), sort=False, observed=True).groups.items():
        part.loc[index, "p_adj"] = adjust(part.loc[index, "p"].to_numpy(), "holm")
    part["verdict"] = [classify(r, lo, p, threshold=threshold, alpha=1 - ci) for r, lo, p in
                       zip(part["impact_ratio"], part["impact_ratio_lo"], part["p_adj"])]
    part["needed_per_group"] = _needed(scores, part, pool, k, threshold, ci, plan_boot, seed)
    smallest = part.groupby(list(KEY), observed=True)["candidates"].transform("min")
    part["more_per_group"] = (part["needed_per_group"] - smallest).clip(lower=0)
    return part[list(COLUMNS)].reset_index(drop=True)


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
