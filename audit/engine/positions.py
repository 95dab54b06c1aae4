"""Position bias of a task's ranked pools as every view reads it (:attr:`audit.engine.audit.Audit.positions`): the
top-1 share by shown position per system and subtask (:mod:`audit.metrics.position`), whether the position effect is
larger than the group effect, and their summaries in words and as one row per system and subtask."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from audit.formatting import interval
from audit.metrics.position import position_bias, position_vs_group


@dataclass(frozen=True)
class PositionAudit:
    """``shares``: :func:`position_bias` rows; ``effects``: :func:`position_vs_group` rows."""

    shares: pd.DataFrame
    effects: pd.DataFrame

    @classmethod
    def of(cls, decisions: pd.DataFrame, ci: float = 0.95) -> "PositionAudit":
        return cls(position_bias(decisions, ci), position_vs_group(decisions))


def task_positions(ranked: pd.DataFrame | None, task: str, ci: float) -> PositionAudit | None:
    """The :class:`PositionAudit` of ``task``'s rows of ``ranked`` (:attr:`audit.engine.tables.StoreTables.ranked`),
    or None when it holds no ranked pools."""
    if ranked is None:
        return None
    decisions = ranked[ranked["task"] == task].drop(columns="task").reset_index(drop=True)
    return None if decisions.empty else PositionAudit.of(decisions, ci)


def _percent_range(shares: pd.Series) -> str:
    """``41–83 %``, or ``83 %`` when every share rounds alike."""
    low, high = round(shares.min() * 100), round(shares.max() * 100)
    return f"{low} %" if low == high else f"{low}–{high} %"


def first_shown_words(shares: pd.DataFrame) -> list[str]:
    """Per system, the range over subtasks of the share of rankings whose first-shown candidate is ranked first."""
    first = shares[shares["position"] == 1]
    return [f"{model} ranks the first-shown candidate first in {_percent_range(part['top1_share'])} of rankings "
            f"per subtask (position-blind: {part['expected'].iloc[0] * 100:.1f} %)"
            for model, part in first.groupby("model", sort=True)]


def position_grid(audit: PositionAudit) -> pd.DataFrame:
    """One row per system and subtask: each shown position's top-1 share with its interval (``0.83 [0.80, 0.86]``)
    and whether the position effect is larger than the group effect."""
    shares = audit.shares.assign(cell=[f"{s:.2f} {interval(lo, hi)}" for s, lo, hi in
                                       zip(audit.shares["top1_share"], audit.shares["ci_low"], audit.shares["ci_high"])])
    grid = shares.pivot(index=["model", "subtask"], columns="position", values="cell")
    grid.columns = [f"shown {p}" for p in grid.columns]
    flags = audit.effects.set_index(["model", "subtask"])["position_over_group"]
    return grid.assign(position_over_group=flags).reset_index()
