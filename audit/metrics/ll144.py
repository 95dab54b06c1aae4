"""The NYC Local Law 144 bias-audit summary of a recorded system, read off the verdict (one computation: the two
cannot disagree).

For each grouping (sex, race/ethnicity, their intersection) separately, per category: applicants, selected, selection
rate, impact ratio = rate / the most-selected category's rate (among those with at least :data:`MIN_APPLICANTS`
applicants, when any has) with its interval, and the exact test of no difference from the most-selected category
with its adjusted p-value: the verdict's (:mod:`audit.engine.verdict`), on the decisions the system recorded (the
top k of each recorded pool for rankings; the 0/1 decision; a score above the sample's median). The test is
stratified by the pools the decisions were made in (one pool per subtask for an unpooled log: Fisher's exact test)
and adjusted as the verdict's family adjusts it. Missing or ``unknown`` values form the *unknown category*: counted
and reported, left out of that grouping's rates only. Categories under 2 % of the grouping's known applicants are
flagged; they are excluded from the impact ratios and tests only when the auditor gives a justification (and then
still printed with their count and rate). A category with fewer than :data:`MIN_APPLICANTS` applicants, or a
comparison with none selected, gets "insufficient evidence" instead of a ratio.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping

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


def ll144_rows(verdicts: pd.DataFrame, groupings: Mapping[str, str], *, exclude_small: str | None = None,
               excluded: Collection[tuple[str, str]] = ()) -> pd.DataFrame:
    """The summary (columns :data:`COLUMNS`) of one system's verdict rows at one quota
    (:func:`audit.engine.verdict.decide`), for ``groupings`` (LL144 name → the verdict's grouping): applicants and
    selected per category, the verdict's selection rate, impact ratio, interval, p and adjusted p, the categories
    under 2 % (``excluded``: the (grouping, category) pairs the verdict left out, when ``exclude_small`` justifies
    it), "insufficient evidence" where the category or the comparator has fewer than :data:`MIN_APPLICANTS`
    applicants or the comparator none selected, and one ``unknown`` row per grouping."""
    frames = []
    for name, grouping in groupings.items():
        part = verdicts[verdicts["grouping"] == grouping]
        unknown = part["category"].astype(str).str.split("_").map(lambda parts: UNKNOWN in parts).to_numpy(bool)
        known = part[~unknown]
        applicants = known["candidates"].to_numpy(dtype=np.int64)
        selected = np.rint(known["selection_rate"].to_numpy(dtype=float) * applicants).astype(np.int64)
        share = applicants / applicants.sum()
        left_out = np.array([(grouping, str(c)) in excluded for c in known["category"]], dtype=bool)
        comparator = known["category"].astype(str) == known["comparator"].astype(str)
        base = known[comparator.to_numpy()]
        base_n = int(base["candidates"].iloc[0]) if len(base) else 0
        base_rate = float(base["selection_rate"].iloc[0]) if len(base) else 0.0
        insufficient = (applicants < MIN_APPLICANTS) | (base_n < MIN_APPLICANTS) | (base_rate == 0)
        shown = ~left_out & ~insufficient
        note = np.where(left_out, f"excluded (under 2 %): {exclude_small}",
                        np.where(insufficient, "insufficient evidence",
                                 np.where(share < SMALL_SHARE, "under 2 % of applicants", "")))
        hide = lambda column: np.where(shown, known[column].to_numpy(dtype=float), np.nan)
        table = pd.DataFrame({"grouping": name, "category": known["category"].astype(str).to_numpy(),
                              "applicants": applicants, "selected": selected,
                              "selection_rate": known["selection_rate"].to_numpy(dtype=float),
                              "impact_ratio": hide("impact_ratio"), "impact_ratio_lo": hide("impact_ratio_lo"),
                              "impact_ratio_hi": hide("impact_ratio_hi"), "p_value": hide("p"),
                              "p_holm": hide("p_adj"), "share": share, "small": share < SMALL_SHARE,
                              "excluded": left_out, "note": note})
        rest = part[unknown]
        unknown_row = dict(grouping=name, category=UNKNOWN, applicants=int(rest["candidates"].sum()),
                           selected=int(np.rint(rest["selection_rate"] * rest["candidates"]).sum()),
                           note="unknown category: not in rates")
        frames.append(pd.concat([table, pd.DataFrame([unknown_row])], ignore_index=True))
    return pd.concat(frames, ignore_index=True).reindex(columns=COLUMNS)
