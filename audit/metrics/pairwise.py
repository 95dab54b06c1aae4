"""Pairwise average preference δ(A, B) from pair outcomes (paper section 4.3).

δ(A, B) = (1/|P_AB|) Σ_{(a,b)∈P_AB} I(a ≻ b), with P_AB the compared pairs holding one member of A and one of the
reference group B, and a ≻ b a consistent preference for a in both prompt orders (outcome ``a`` when a is
``candidate_a``, ``b`` when it is ``candidate_b``; ``inconsistent`` counts as no preference). The qualified variant
keeps the pairs whose two members are both qualified.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from audit.errors import AuditError
from audit.metrics.schema import KEY, check_pairs, key_label


def pair_preferences(pairs: pd.DataFrame, *, reference: str, qualified: pd.Series) -> pd.DataFrame:
    """Columns model, subtask, mode, group, delta, delta_qualified; one row per group compared with ``reference``.

    ``qualified`` is a boolean Series indexed by (model, subtask, mode, candidate_id), from the score table; pairs of
    a (model, subtask, mode) absent from it are ignored.
    """
    table = check_pairs(pairs)
    known = pd.MultiIndex.from_frame(table[list(KEY)]).isin(qualified.index.droplevel(-1).unique())
    table = table[known]
    a_is_ref = (table["group_a"] == reference).to_numpy()
    mixed = a_is_ref ^ (table["group_b"] == reference).to_numpy()
    table, a_is_ref = table[mixed], a_is_ref[mixed]
    frame = table[list(KEY)].copy()
    frame["group"] = np.where(a_is_ref, table["group_b"], table["group_a"])
    frame["win"] = np.where(a_is_ref, table["outcome"] == "b", table["outcome"] == "a")
    frame["both"] = _lookup(table, "candidate_a", qualified) & _lookup(table, "candidate_b", qualified)
    by = list(KEY) + ["group"]
    out = frame.groupby(by)["win"].mean().rename("delta").to_frame()
    out["delta_qualified"] = frame[frame["both"]].groupby(by)["win"].mean()
    return out.reset_index()


def _lookup(table: pd.DataFrame, column: str, qualified: pd.Series) -> np.ndarray:
    index = pd.MultiIndex.from_frame(table[list(KEY) + [column]])
    found = qualified.reindex(index)
    if found.isna().any():
        row = table[found.isna().to_numpy()].iloc[0]
        raise AuditError(f"pair table: {column} {row[column]!r} is not in the score table for "
                         f"{key_label(tuple(row[list(KEY)]))}")
    return found.to_numpy(dtype=bool)
