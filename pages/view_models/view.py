"""What the sidebar selects (:class:`View`: a store and one selection) and the rows of a table it shows."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from audit.engine.selection import Selection

#: choice -> largest share of inconsistent pairs a pairwise model may have (the paper's Figures 3 and 4)
INCONSISTENT = {"off": None, "55 % (paper Fig. 3)": 0.55, "50 % (paper Fig. 4)": 0.50}


@dataclass(frozen=True)
class View:
    """What the sidebar selects: the store (path and version) and one :class:`audit.engine.selection.Selection` with its
    grouping and reference resolved; hashable so it can key cached audits."""

    store: str
    version: tuple
    selection: Selection

    def settings(self) -> dict:
        """The view as plain values, for report bundles."""
        return {"store": self.store, **asdict(self.selection)}


def shown(table: pd.DataFrame, view: View, *, with_reference: bool = False) -> pd.DataFrame:
    """Rows of the selected models, subtasks and groups (and the reference group if asked)."""
    s = view.selection
    groups = [*s.groups, s.reference] if with_reference else list(s.groups)
    keep = table["model"].isin(s.models) & table["subtask"].isin(s.subtasks) & table["group"].isin(groups)
    if "task" in table:
        keep &= table["task"] == s.task
    return table[keep].reset_index(drop=True)
