"""Position bias of ranked pools: the share of top-1 picks by shown position, against the 1/n a position-blind
ranker gives.

Reads recorded rankings (imported or listwise runs): one row per system, subtask and pool position (1 = shown
first) with ``top1`` (pools whose first-ranked candidate was shown there), ``pools``, ``top1_share``, its exact
Clopper–Pearson interval, ``expected`` = 1/n and the exact binomial test of ``top1_share`` = 1/n (``p_value``); per
system and subtask, ``uniform_p`` is the chi-square test that every position is picked first equally often. With
the order shuffled per pool, a position effect adds noise but no bias to the group gaps; :func:`position_vs_group`
flags a system whose position effect is larger than its group effect (the gaps then mostly measure the shuffle).
"""
from __future__ import annotations

import pandas as pd

COLUMNS = ["model", "subtask", "position", "top1", "pools", "top1_share", "ci_low", "ci_high", "expected",
           "p_value", "uniform_p"]
EFFECT_COLUMNS = ["model", "subtask", "pools", "position_spread", "group_spread", "position_chi2", "group_chi2",
                  "position_over_group"]
#: what the shuffle of the shown order does to the group gaps, said wherever position bias is shown
UNBIASED_NOTE = ("The shown order is shuffled per ranking, so a position effect adds noise but no bias to the group "
                 "gaps: the gaps are net of position.")
#: the words of the flag of :func:`position_vs_group`
LARGER = "position effect larger than group effect"


def position_bias(decisions: pd.DataFrame, ci: float = 0.95) -> pd.DataFrame:
    """``decisions``: columns model, subtask, pool, position (0 = shown first), value (rank; 1 = first)."""
    from scipy import stats  # imported on use: ≈0.5 s, and every command's parser imports this module

    rows = []
    for (model, subtask), part in decisions.groupby(["model", "subtask"], sort=True):
        sizes = part.groupby("pool")["position"].transform("size")
        size = int(sizes.max())
        pools = int(part["pool"].nunique())
        firsts = part[part["value"] == 1]["position"].value_counts().reindex(range(size), fill_value=0)
        uniform = float(stats.chisquare(firsts.to_numpy()).pvalue) if pools else float("nan")
        for position, count in firsts.items():
            test = stats.binomtest(int(count), pools, 1 / size)
            interval = test.proportion_ci(ci, method="exact")
            rows.append((model, subtask, int(position) + 1, int(count), pools, count / pools, interval.low,
                         interval.high, 1 / size, float(test.pvalue), uniform))
    return pd.DataFrame(rows, columns=COLUMNS)


def _top1_counts(part: pd.DataFrame, column: str) -> pd.Series:
    """Pools whose first-ranked candidate has each value of ``column`` (every value seen in ``part``, 0 if none)."""
    levels = sorted(part[column].unique())
    return part.loc[part["value"] == 1, column].value_counts().reindex(levels, fill_value=0)


def _spread_and_chi2(counts: pd.Series, pools: int) -> tuple[float, float]:
    """(max − min share of top-1 picks, chi-square statistic against equal shares) of one system's counts."""
    from scipy import stats  # imported on use (see position_bias)

    shares = counts / pools
    return float(shares.max() - shares.min()), float(stats.chisquare(counts.to_numpy()).statistic)


def position_vs_group(decisions: pd.DataFrame) -> pd.DataFrame:
    """Per system and subtask, the spread (max − min) and chi-square statistic of the top-1 shares across shown
    positions and across groups, and ``position_over_group``: the position effect is larger than the group effect
    (larger chi-square, same pools and degrees of freedom with one candidate per group) and not chance (the uniform
    test rejects at 5 %). ``decisions``: as :func:`position_bias`, plus ``grp``."""
    from scipy import stats  # imported on use (see position_bias)

    rows = []
    for (model, subtask), part in decisions.groupby(["model", "subtask"], sort=True):
        pools = int(part["pool"].nunique())
        position_spread, position_chi2 = _spread_and_chi2(_top1_counts(part, "position"), pools)
        group_spread, group_chi2 = _spread_and_chi2(_top1_counts(part, "grp"), pools)
        rejects = float(stats.chi2.sf(position_chi2, part["position"].nunique() - 1)) < 0.05
        rows.append((model, subtask, pools, position_spread, group_spread, position_chi2, group_chi2,
                     bool(rejects and position_chi2 > group_chi2)))
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)
