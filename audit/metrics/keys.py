"""Split a validated score table into one array bundle per (model, subtask, mode): the unit every metric works on."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from audit.metrics.schema import check_scores, groups_of, key_codes


@dataclass(frozen=True)
class KeyData:
    """Candidates of one (model, subtask, mode), sorted by group; scores also coded on the grid of distinct values."""

    key: tuple[str, str, str]
    groups: tuple[str, ...]
    ref: int
    score: np.ndarray
    group: np.ndarray
    qualified: np.ndarray
    candidate_code: np.ndarray
    candidate_names: pd.Index
    values: np.ndarray
    value: np.ndarray
    pool: np.ndarray | None
    """Pool id codes (−1 where a row has none), or None when the key has no pool ids."""

    @property
    def candidate_id(self) -> np.ndarray:
        """Candidate ids, row by row."""
        return self.candidate_names.take(self.candidate_code).to_numpy(dtype=object)

    @property
    def counts(self) -> np.ndarray:
        """(groups, distinct values): how many candidates of each group have each score."""
        return self._count(np.ones_like(self.qualified))

    @property
    def qualified_counts(self) -> np.ndarray:
        """(groups, distinct values): the same, qualified candidates only."""
        return self._count(self.qualified)

    def _count(self, mask: np.ndarray) -> np.ndarray:
        flat = np.bincount(self.group * self.values.size + self.value, weights=mask.astype(float),
                           minlength=len(self.groups) * self.values.size)
        return flat.reshape(len(self.groups), self.values.size)

    def of(self, group: int, *, qualified: bool = False) -> np.ndarray:
        """Scores of one group (qualified candidates only if asked)."""
        mask = self.group == group
        return self.score[mask & self.qualified] if qualified else self.score[mask]


def split_keys(scores: pd.DataFrame, *, reference: str) -> list[KeyData]:
    """Validate ``scores`` and return one KeyData per (model, subtask, mode), keys sorted."""
    table = check_scores(scores, reference=reference)
    key_id, keys = key_codes(table)
    task, tasks = pd.factorize(table["task"])
    candidate_code, candidate_names = pd.factorize(table["candidate_id"])
    group_code, group_names = pd.factorize(table["group"], sort=True)
    score = table["score"].to_numpy()
    order = np.lexsort((score, group_code, key_id))
    starts = np.searchsorted(key_id[order], np.arange(len(keys) + 1))
    columns = {"score": score, "qualified": table["qualified"].to_numpy(),
               "pool": pd.factorize(table["pool"])[0] if "pool" in table else None}
    task_groups = {tasks.get_loc(name): tuple(groups_of(rows)) for name, rows in table.groupby("task")}
    out = []
    for i, key in enumerate(keys):
        rows = order[starts[i]:starts[i + 1]]
        groups = task_groups[task[rows[0]]]
        local = np.searchsorted(groups, np.asarray(group_names))
        values, value = np.unique(score[rows], return_inverse=True)
        pool = columns["pool"]
        out.append(KeyData(
            key=tuple(key), groups=groups, ref=groups.index(reference), score=score[rows],
            group=local[group_code[rows]], qualified=columns["qualified"][rows],
            candidate_code=candidate_code[rows], candidate_names=candidate_names, values=values, value=value.ravel(),
            pool=None if pool is None or (pool[rows] < 0).all() else pool[rows],
        ))
    return out
