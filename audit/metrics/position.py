"""Position bias of ranked pools: the share of top-1 picks by shown position, against the 1/n a position-blind
ranker gives.

Reads recorded rankings (imported or listwise runs): one row per system, subtask and pool position (1 = shown
first) with ``top1`` (pools whose first-ranked candidate was shown there), ``pools``, ``top1_share``, its exact
Clopper–Pearson interval, ``expected`` = 1/n and the exact binomial test of ``top1_share`` = 1/n (``p_value``); per
system and subtask, ``uniform_p`` is the chi-square test that every position is picked first equally often. With
the order shuffled per pool, a position effect adds noise but no bias to the group gaps.
"""
from __future__ import annotations

import pandas as pd
from scipy import stats

COLUMNS = ["model", "subtask", "position", "top1", "pools", "top1_share", "ci_low", "ci_high", "expected",
           "p_value", "uniform_p"]


def position_bias(decisions: pd.DataFrame, ci: float = 0.95) -> pd.DataFrame:
    """``decisions``: columns model, subtask, pool, position (0 = shown first), value (rank; 1 = first)."""
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
