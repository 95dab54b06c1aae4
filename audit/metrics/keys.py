"""Split a validated score table into one array bundle per (model, task, subtask, mode): the unit of every metric."""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import pandas as pd

from audit.enums import Mode
from audit.metrics.schema import Ids, checked_scores, key_codes


@dataclass(frozen=True)
class KeyData:
    """Candidates of one (model, task, subtask, mode), one row per score-table row, sorted by group then score.

    ``groups`` are the task's sorted group codes and ``ref`` the reference's index in them; ``group`` indexes
    ``groups`` per row; ``values`` are the sorted distinct scores and ``value`` indexes them per row;
    ``candidate_names[candidate_code]`` are the ids; ``pool`` holds pool-id codes (−1 where a row has none) or is
    None when the key has no pool ids. ``decided`` (0/1 per row) is the decision a quota-free recorded system made
    (a 0/1 decision, a score above the sample's median; see :func:`with_decisions`), None for systems read at a
    quota k.
    """

    key: tuple[str, str, str, str]  # (model, task, subtask, mode)
    groups: tuple[str, ...]
    ref: int
    score: np.ndarray
    group: np.ndarray
    qualified: np.ndarray
    candidate_code: np.ndarray
    candidate_names: np.ndarray | pd.api.extensions.ExtensionArray  # every key's, shared (Arrow text: no str per id)
    values: np.ndarray
    value: np.ndarray
    pool: np.ndarray | None
    decided: np.ndarray | None = None

    @property
    def candidate_id(self) -> np.ndarray:
        """Candidate ids, row by row (an object array of str)."""
        return np.asarray(self.candidate_names[self.candidate_code], dtype=object)

    @property
    def counts(self) -> np.ndarray:
        """(groups, distinct values): how many candidates of each group have each score."""
        return self._count(np.ones_like(self.qualified))

    @property
    def qualified_counts(self) -> np.ndarray:
        """(groups, distinct values): the same, qualified candidates only."""
        return self._count(self.qualified)

    @cached_property
    def cells(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per group: its distinct (score, qualified) cells, coded ``value · 2 + qualified``, and their candidates."""
        return [np.unique(self.value[self.group == g] * 2 + self.qualified[self.group == g], return_counts=True)
                for g in range(len(self.groups))]

    @cached_property
    def memo(self) -> dict:
        """Arrays derived from this key once and reused by every bootstrap block (e.g. the recorded pools' rank
        tables of :mod:`audit.metrics.pools`)."""
        return {}

    def _count(self, mask: np.ndarray) -> np.ndarray:
        flat = np.bincount(self.group * self.values.size + self.value, weights=mask.astype(float),
                           minlength=len(self.groups) * self.values.size)
        return flat.reshape(len(self.groups), self.values.size)

    def of(self, group: int, *, qualified: bool = False) -> np.ndarray:
        """Scores of one group (qualified candidates only if asked)."""
        mask = self.group == group
        return self.score[mask & self.qualified] if qualified else self.score[mask]


@dataclass(frozen=True)
class Codes:
    """What :func:`split_keys` reads of a validated score table apart from its groups, coded once: a regrouping of
    the same rows (:meth:`audit.engine.audit.Audit.keys` of each grouping) reuses it."""

    key_id: np.ndarray
    keys: list[tuple[str, ...]]
    task: np.ndarray
    candidate_code: np.ndarray
    candidate_names: np.ndarray | pd.api.extensions.ExtensionArray
    score: np.ndarray
    qualified: np.ndarray
    pool: np.ndarray | None
    value: np.ndarray
    values: np.ndarray
    first_value: np.ndarray

    @classmethod
    def of(cls, table: pd.DataFrame, ids: Ids | None = None) -> "Codes":
        """The codes of ``table`` (validated by :func:`audit.metrics.schema.checked_scores`, which gives its
        candidate ``ids`` factorised, when it checked them)."""
        key_id, keys = key_codes(table)
        candidate_code, candidate_names = ids if ids is not None else pd.factorize(table["candidate_id"])
        score = table["score"].to_numpy()
        return cls(key_id, keys, pd.factorize(table["task"])[0], candidate_code, candidate_names.array, score,
                   table["qualified"].to_numpy(), pd.factorize(table["pool"])[0] if "pool" in table else None,
                   *_value_codes(key_id, score, len(keys)))


def split_keys(scores: pd.DataFrame, *, reference: str, needs_qualified: bool = True) -> list[KeyData]:
    """Validate ``scores`` (:func:`audit.metrics.schema.check_scores`; ``needs_qualified=False`` for views that read
    no qualification label) and return one KeyData per (model, task, subtask, mode), keys sorted."""
    table, ids = checked_scores(scores, reference=reference, needs_qualified=needs_qualified)
    return _split(table, reference, Codes.of(table, ids))


class Regroupings:
    """:func:`selection_keys` of one score table under each of its regroupings (same rows, groups coarsened), the
    :class:`Codes` of its rows made at the first split and shared by the others."""

    def __init__(self) -> None:
        self.codes: Codes | None = None

    def split(self, scores: pd.DataFrame) -> list[KeyData]:
        """:func:`selection_keys` of ``scores`` (a regrouping of the rows split before, if any)."""
        reference = str(scores["group"].iloc[0])
        known = None if self.codes is None else (self.codes.key_id, self.codes.keys)
        table, ids = checked_scores(scores, reference=reference, needs_qualified=False, keys=known)
        if self.codes is None:
            self.codes = Codes.of(table, ids)
        return _split(table, reference, self.codes)


def _split(table: pd.DataFrame, reference: str, codes: Codes) -> list[KeyData]:
    """:func:`split_keys` of a validated ``table`` whose rows ``codes`` code."""
    key_id, keys, task, candidate_code = codes.key_id, codes.keys, codes.task, codes.candidate_code
    group_code, group_names = pd.factorize(table["group"], sort=True)
    group_names = np.asarray(group_names, dtype=object)
    score, qualified, pool = codes.score, codes.qualified, codes.pool
    value, values, first_value = codes.value, codes.values, codes.first_value
    order = _order(key_id, group_code, len(group_names), score, value, values.size)
    starts = np.searchsorted(key_id[order], np.arange(len(keys) + 1)).tolist()
    task_groups = [tuple(group_names[np.flatnonzero(np.bincount(group_code[task == t], minlength=len(group_names)))])
                   for t in range(task.max() + 1)]
    within = [np.searchsorted(groups, group_names) for groups in task_groups]  # group code -> index in its task's
    # every key's rows are one stretch of ``order``: each array permuted once, then sliced (disjoint, per key)
    score, group_code, qualified, candidate_code, value = (
        array[order] for array in (score, group_code, qualified, candidate_code, value))
    pool, task = None if pool is None else pool[order], task[order]
    out = []
    for i, key in enumerate(keys):
        rows = slice(starts[i], starts[i + 1])
        groups = task_groups[task[starts[i]]]
        out.append(KeyData(
            key=tuple(key), groups=groups, ref=groups.index(reference), score=score[rows],
            group=within[task[starts[i]]][group_code[rows]], qualified=qualified[rows],
            candidate_code=candidate_code[rows], candidate_names=codes.candidate_names,
            values=values[first_value[i]:first_value[i + 1]], value=value[rows] - first_value[i],
            pool=None if pool is None or (pool[rows] < 0).all() else pool[rows],
        ))
    return out


def _order(key_id: np.ndarray, group_code: np.ndarray, groups: int, score: np.ndarray, value: np.ndarray,
           values: int) -> np.ndarray:
    """The rows sorted by key, group, then score (ties in file order): ``np.lexsort((score, group_code, key_id))``,
    made as one stable sort of a combined integer (``value``: each row's score code, ordered by key then score, of
    ``values`` in all) where it fits in 63 bits (several times faster)."""
    if group_code.size and group_code.min() >= 0 and (int(key_id.max()) + 1) * groups * values < 2**62:
        return np.argsort((key_id * groups + group_code) * values + value, kind="stable")
    return np.lexsort((score, group_code, key_id))


def _value_codes(key_id: np.ndarray, score: np.ndarray, keys: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every key's scores factorised at once (as ``pd.factorize(sort=True)`` per key): (each row's index into the
    distinct scores, every key's sorted distinct scores one key after another, where each key's start in them,
    keys + 1 entries); a row's code within its key is its index less its key's start."""
    by_value = np.lexsort((score, key_id))
    ordered_key, ordered = key_id[by_value], score[by_value]
    new = np.r_[True, (ordered_key[1:] != ordered_key[:-1]) | (ordered[1:] != ordered[:-1])]
    dense = np.cumsum(new) - 1
    value = np.empty_like(dense)
    value[by_value] = dense
    first_value = np.r_[dense[np.searchsorted(ordered_key, np.arange(keys))], new.sum()]
    return value, ordered[new], first_value


#: recorded outcome kinds judged on the decision they record, with no quota: the 0/1 selection, and the score read
#: as LL144's scoring rate (above the median of the system's scores in its subtask)
UNQUOTED = ("selected", "score")


def with_decisions(keys: list[KeyData], outcomes: pd.DataFrame) -> list[KeyData]:
    """``keys`` with ``decided`` set for the quota-free recorded systems of ``outcomes`` (model, task, subtask,
    outcome): a ``selected`` system's recorded 0/1, a ``score`` system's scoring above the median of its scores in
    that subtask (LL144's scoring rate)."""
    if outcomes.empty:
        return keys
    kinds = {(str(m), str(t), str(s)): str(o) for m, t, s, o in
             outcomes[["model", "task", "subtask", "outcome"]].itertuples(index=False)}
    out = []
    for data in keys:
        kind = kinds.get(tuple(data.key[:3])) if data.key[3] == Mode.POINTWISE else None
        if kind == "selected":
            data = replace(data, decided=(data.score > 0).astype(np.int64))
        elif kind == "score":
            data = replace(data, decided=(data.score > np.median(data.score)).astype(np.int64))
        out.append(data)
    return out


def selection_keys(scores: pd.DataFrame) -> list[KeyData]:
    """:func:`split_keys` for the views of selection alone (pool sizes, impact ratios, verdicts): the reference is
    the first group (they read none) and no group needs a qualified candidate (they read no qualification label)."""
    return split_keys(scores, reference=str(scores["group"].iloc[0]), needs_qualified=False)
