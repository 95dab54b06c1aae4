"""Signed pairwise average preference δ(A, B) from pair outcomes (paper section 4.3, its Figure 3).

δ(A, B) = (W_A − W_B) / N over the compared pairs P_AB holding one member of A and one of the reference group B,
where each pair was asked in both orders: N = 2|P_AB| prompts, W_A the prompts whose answer chose the member of A,
W_B those that chose the member of B (ties and irregular answers choose no one). δ lies in [−1, 1]: 1 when A's member
wins every prompt, −1 when B's does, 0 for no preference. This is the measure the paper's results plot (its code
counts answers per prompt); with every answer regular it equals (1/|P_AB|) Σ [I(a ≻ b) − I(b ≻ a)] over consistent
preferences. The qualified variant keeps the pairs whose two members are both qualified.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from audit.errors import AuditError
from audit.metrics.schema import KEY, check_pairs, key_label


def pair_preferences(pairs: pd.DataFrame, *, reference: str, qualified: pd.Series) -> pd.DataFrame:
    """Columns model, subtask, mode, group, delta, delta_qualified; one row per group compared with ``reference``.

    ``pairs`` carries ``wins_a``/``wins_b`` (prompts of the pair won by each member; see
    :func:`audit.metrics.schema.check_pairs` for tables without them). ``qualified`` is a boolean Series indexed by
    (model, subtask, mode, candidate_id), from the score table; pairs of a (model, subtask, mode) absent from it are
    ignored.
    """
    table = check_pairs(pairs)
    known = pd.MultiIndex.from_frame(table[list(KEY)]).isin(qualified.index.droplevel(-1).unique())
    table = table[known]
    a_is_ref = (table["group_a"] == reference).to_numpy()
    mixed = a_is_ref ^ (table["group_b"] == reference).to_numpy()
    table, a_is_ref = table[mixed], a_is_ref[mixed]
    frame = table[list(KEY)].copy()
    frame["group"] = np.where(a_is_ref, table["group_b"], table["group_a"])
    margin = (table["wins_a"] - table["wins_b"]).to_numpy(dtype=float)
    frame["margin"] = np.where(a_is_ref, -margin, margin) / 2  # per prompt: each pair holds two prompts
    frame["both"] = _lookup(table, "candidate_a", qualified) & _lookup(table, "candidate_b", qualified)
    by = list(KEY) + ["group"]
    out = frame.groupby(by, observed=True)["margin"].mean().rename("delta").to_frame()
    out["delta_qualified"] = frame[frame["both"]].groupby(by, observed=True)["margin"].mean()
    return out.reset_index()


def _lookup(table: pd.DataFrame, column: str, qualified: pd.Series) -> np.ndarray:
    index = pd.MultiIndex.from_frame(table[list(KEY) + [column]])
    found = qualified.reindex(index)
    if found.isna().any():
        row = table[found.isna().to_numpy()].iloc[0]
        raise AuditError(f"pair table: {column} {row[column]!r} is not in the score table for "
                         f"{key_label(tuple(row[list(KEY)]))}")
    return found.to_numpy(dtype=bool)


def inconsistent_rates(pairs: pd.DataFrame) -> pd.DataFrame:
    """Share of pairs without a consistent preference per (model, task, mode): columns model, task, mode, pairs,
    inconsistent (the paper's Table 2 "Inconsistent")."""
    table = check_pairs(pairs)
    table["_inconsistent"] = table["outcome"] == "inconsistent"
    return (table.groupby(["model", "task", "mode"], observed=True)["_inconsistent"]
            .agg(pairs="size", inconsistent="mean").reset_index())


def drop_unreliable(scores: pd.DataFrame, pairs: pd.DataFrame, *, max_inconsistent: float
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``scores`` without the pairwise (model, task, mode) whose inconsistent-pair rate exceeds ``max_inconsistent``
    (the paper drops models above 55 % in its Figure 3 and 50 % in Figure 4), and the rates of those dropped."""
    if not 0 <= max_inconsistent <= 1:
        raise AuditError(f"inconsistent-answer threshold {max_inconsistent} must lie between 0 and 1")
    rates = inconsistent_rates(pairs)
    dropped = rates[rates["inconsistent"] > max_inconsistent].reset_index(drop=True)
    columns = ["model", "task", "mode"]
    keys = pd.MultiIndex.from_frame(scores[columns].astype(str))
    gone = keys.isin(pd.MultiIndex.from_frame(dropped[columns].astype(str)))
    return scores[~gone], dropped
