"""The NYC Local Law 144 bias-audit summary of recorded decisions (one row per applicant, ``selected`` 0/1).

For each grouping (sex, race/ethnicity, their intersection) separately, per category: applicants, selected, selection
rate, impact ratio = rate / the most-selected category's rate (among those with at least :data:`MIN_APPLICANTS`
applicants, when any has) with a Katz log-interval, and Fisher's exact test of
no difference from the most-selected category (two-sided), Holm-adjusted across the grouping's categories. Where the
decisions were made in pools with a quota (``strata``: recorded rankings, top k of each pool) selections within a
pool exclude each other, so the test is the exact conditional test stratified by pool and the Katz interval takes
the pool-robust standard error (:mod:`audit.metrics.exact`); with one pool (an unpooled log) these are Fisher's test
and Katz's interval themselves. Missing or
``unknown`` values form the *unknown category*: counted and reported, left out of that grouping's rates only.
Categories under 2 % of the grouping's known applicants are flagged; they are excluded from the impact ratios only
when the auditor gives a justification (and then still printed with their count and rate). A category with fewer
than :data:`MIN_APPLICANTS` applicants, or none selected in the comparison, gets "insufficient evidence" instead of
a ratio.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

UNKNOWN = "unknown"
SMALL_SHARE = 0.02
MIN_APPLICANTS = 30
COLUMNS = ["grouping", "category", "applicants", "selected", "selection_rate", "impact_ratio", "impact_ratio_lo",
           "impact_ratio_hi", "p_value", "p_holm", "share", "small", "excluded", "note"]


def unknown_mask(values: pd.Series) -> pd.Series:
    """True where a demographic value is missing, blank or ``unknown`` (any case)."""
    text = values.astype("string").str.strip()
    return values.isna() | text.isna() | (text == "") | (text.str.lower() == UNKNOWN)


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment of ``p`` (NaN left out and kept NaN)."""
    p = np.asarray(p, dtype=float)
    out = np.full_like(p, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    m, running = len(order), 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        out[j] = running
    return out


def joined(frame: pd.DataFrame, columns: Sequence[str]) -> pd.Series:
    """Each row's values of ``columns`` as text joined with ``_`` (the intersection's category), column-wise."""
    text = [frame[c].astype(str) for c in columns]
    out = text[0]
    for part in text[1:]:
        out = out + "_" + part
    return out


def pooled_counts(known: pd.DataFrame, category: pd.Series, outcome: str, strata: str | None,
                  categories: pd.Index) -> tuple[np.ndarray, np.ndarray]:
    """(members, selected): pools × ``categories`` counts (pools in sorted order; one pool when ``strata`` is
    None), members as integers, selected summed as floats."""
    pools = (pd.factorize(known[strata], sort=True)[0] if strata else np.zeros(len(known), dtype=np.int64))
    column = categories.get_indexer(category)
    shape = (int(pools.max()) + 1 if len(pools) else 0, len(categories))
    pooled = pools >= 0  # a row with no pool is in none (as pandas' crosstab leaves it out)
    cell = (pools * shape[1] + column)[pooled]
    members = np.bincount(cell, minlength=shape[0] * shape[1]).reshape(shape)
    weights = known[outcome].to_numpy(dtype=float)[pooled]
    selected = np.bincount(cell, weights, shape[0] * shape[1]).reshape(shape)
    return members, selected


def ll144_table(decisions: pd.DataFrame, groupings: Mapping[str, Sequence[str]], *, outcome: str = "selected",
                level: float = 0.95, exclude_small: str | None = None, strata: str | None = None) -> pd.DataFrame:
    """The summary for ``groupings`` (name → demographic columns; several columns make the intersection, joined
    with ``_``); one row per (grouping, category) plus an ``unknown`` row per grouping. ``strata``: the column of
    the pools decisions were made in with a quota (None: one pool, Fisher's test)."""
    from audit.metrics.exact import katz_bounds, pair_errors, pair_pvalue

    frames = []
    for name, columns in groupings.items():
        unknown = np.logical_or.reduce([unknown_mask(decisions[c]).to_numpy() for c in columns])
        known = decisions.loc[~unknown]
        category = joined(known, columns)
        counts = known.groupby(category)[outcome].agg(["size", "sum"])
        share = counts["size"] / counts["size"].sum()
        small = share < SMALL_SHARE
        excluded = small & (exclude_small is not None)
        rates = counts["sum"] / counts["size"]
        members, selected = pooled_counts(known, category, outcome, strata, counts.index)
        column = {c: i for i, c in enumerate(counts.index)}
        compared = rates[~excluded]
        enough = compared[counts["size"][~excluded] >= MIN_APPLICANTS]  # a tiny category is never the comparison
        best = (enough if len(enough) else compared).idxmax() if len(compared) else None
        rows = []
        for cat in counts.index:
            n, s = int(counts.at[cat, "size"]), int(counts.at[cat, "sum"])
            row = dict(grouping=name, category=cat, applicants=n, selected=s, selection_rate=s / n,
                       impact_ratio=math.nan, impact_ratio_lo=math.nan, impact_ratio_hi=math.nan, p_value=math.nan,
                       share=float(share[cat]), small=bool(small[cat]), excluded=bool(excluded[cat]), note="")
            bn, bs = int(counts.at[best, "size"]), int(counts.at[best, "sum"])
            if row["excluded"]:
                row["note"] = f"excluded (under 2 %): {exclude_small}"
            elif n < MIN_APPLICANTS or bn < MIN_APPLICANTS or bs == 0:
                row["note"] = "insufficient evidence"
            else:
                row["impact_ratio"] = (s / n) / (bs / bn)
                if cat != best:
                    se_log = pair_errors(members, selected, column[cat], column[best])[1]
                    row["impact_ratio_lo"], row["impact_ratio_hi"] = katz_bounds(row["impact_ratio"], se_log, level)
                    row["p_value"] = pair_pvalue(members, selected, column[cat], column[best])
                if row["small"]:
                    row["note"] = "under 2 % of applicants"
            rows.append(row)
        table = pd.DataFrame(rows)
        table["p_holm"] = holm(table["p_value"])
        unknown_row = dict(grouping=name, category=UNKNOWN, applicants=int(unknown.sum()),
                           selected=int(decisions.loc[unknown, outcome].sum()), note="unknown category: not in rates")
        frames.append(pd.concat([table, pd.DataFrame([unknown_row])], ignore_index=True))
    return pd.concat(frames, ignore_index=True).reindex(columns=COLUMNS)
