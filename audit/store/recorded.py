"""Recorded decisions as the pointwise score rows every audit reads (pure pandas; the store layer: the store reads and
migrates them with it, and nothing here imports :mod:`audit.recorded`, which imports the store).

What each outcome kind becomes as a score, for the quota machinery (top k of each recorded pool):

- ``rank`` (position within its pool of n, 1 = first): score ``(n − rank) / (n − 1)`` (1 for the first, 0 for the
  last; 1 for a pool of one), so the top k by score are exactly the ranks ≤ k and the quota k applies.
- ``selected`` (0/1): the observed selection is the score; it has no quota (see :mod:`audit.metrics.ll144`).
- ``score``: the system's own score; LL144 reads it as the scoring rate (above the sample median).
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from audit.enums import Mode

OUTCOMES = ("rank", "selected", "score")
COLUMNS = ["model", "fingerprint", "task", "subtask", "mode", "candidate_id", "group", "qualified", "label_mass",
           "created", "score", "pool", "date"]


def rank_scores(rank: pd.Series, size: pd.Series) -> pd.Series:
    """(n − rank) / (n − 1) of each ``rank`` in its pool of ``size`` n (1 where n is 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        score = (size - rank) / (size - 1)
    return score.where(size > 1, 1.0)


def decision_scores(raw: pd.DataFrame, systems: pd.DataFrame) -> pd.DataFrame:
    """The store's recorded decisions (columns of :data:`audit.store.database.RECORDED_QUERY`) of ``systems`` (columns of
    :data:`audit.store.database.RECORDED_SYSTEMS_QUERY`) as pointwise score rows: candidate = the applicant id, else
    ``<pool>.<position>`` (the query's ``candidate_id``); qualified 1, label mass 1, ``pool`` the stored pool, ``date``
    the decision's date (``YYYY-MM-DD``; missing where the log has none)."""
    if raw.empty or systems.empty:
        return pd.DataFrame(columns=COLUMNS)
    systems = systems.set_index("system")
    known = raw["system"].isin(systems.index).to_numpy()
    if not known.all():  # (a copy of every column only where some rows go)
        raw = raw[known]
    of = systems.index.get_indexer(raw["system"])  # each row's system, by position (a take, not a merge)
    size = raw.groupby(["system", "pool"], sort=False)["value"].transform("size")
    rank = pd.Series(systems["outcome"].to_numpy()[of] == "rank", index=raw.index)
    score = raw["value"].astype(float)
    score = score.where(~rank, rank_scores(score, size))
    candidate = raw["candidate_id"].astype(str)
    own = {name: _repeated(systems[name], of, raw.index) for name in ("model", "fingerprint", "task", "subtask")}
    mode = pd.Categorical.from_codes(np.zeros(len(raw), dtype=np.int8), categories=[Mode.POINTWISE.value])
    return pd.DataFrame({**own, "created": systems["created"].take(of).set_axis(raw.index), "mode": mode,
                         "candidate_id": candidate, "group": raw["group"].astype(str).astype("category"),
                         "qualified": 1, "label_mass": 1.0, "score": score,
                         "pool": raw["pool"].astype("Int64"),
                         "date": raw["date"] if "date" in raw else None})[COLUMNS]


def stacked(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """``pd.concat(frames, ignore_index=True)`` with categorical columns kept categorical: a column categorical in
    some frame (a recorded log's model, group, …: :func:`decision_scores`) becomes, in every frame, a categorical over
    the sorted union of their values, so pandas joins codes instead of writing a big log's rows back as text."""
    columns = list(dict.fromkeys(c for f in frames for c in f.columns if isinstance(f[c].dtype, pd.CategoricalDtype)))
    if len(frames) > 1 and columns:
        frames = [f.copy(deep=False) for f in frames]
        for column in columns:  # a frame without the column has it missing, as pd.concat would
            parts = [pd.Categorical(f[column] if column in f else [None] * len(f)) for f in frames]
            categories = pd.Index(pd.unique(np.concatenate([part.categories.to_numpy(dtype=object)
                                                            for part in parts]))).sort_values()
            for f, part in zip(frames, parts):
                f[column] = pd.Series(part.set_categories(categories), index=f.index)
    return pd.concat(frames, ignore_index=True)


def _repeated(values: pd.Series, of: np.ndarray, index: pd.Index) -> pd.Series:
    """``values`` (one per system) taken at ``of`` (each row's system) as a categorical of the distinct values,
    sorted: the systems' text is not repeated per row."""
    codes, distinct = pd.factorize(values, sort=True)
    return pd.Series(pd.Categorical.from_codes(codes[of], categories=distinct), index=index)


def legacy_decisions(old: pd.DataFrame) -> pd.DataFrame:
    """Recorded rankings stored before schema 3 (rows ``model, task, subtask, candidate_id`` = ``<pool>.<position>``,
    ``group``, ``probs`` = ``[(n − rank) / (n − 1)]``) as decisions with their rank read back."""
    parts = old["candidate_id"].astype(str).str.partition(".")
    out = pd.DataFrame({"model": old["model"], "task": old["task"], "subtask": old["subtask"],
                        "pool": parts[0].astype(int), "position": parts[2].astype(int), "group": old["group"],
                        "applicant": None})
    score = old["probs"].map(lambda probs: json.loads(probs)[0])
    size = out.groupby(["model", "task", "subtask", "pool"])["pool"].transform("size")
    out["value"] = (size - score * (size - 1)).round().astype(int)
    return out
