"""Table shaping for the pages, free of Streamlit: groupings, mode selection, filters and the store summary."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import pandas as pd

from audit.store import Store

#: grouping -> which part of a ``RACE_GENDER`` code to keep (None keeps the whole code)
GROUPINGS = {"race × gender": None, "race": 0, "gender": 1}
#: score-table mode -> the pool design its scores need (pairwise scores are relative to their recorded pool)
MODES = {"pointwise": "per-group", "pairwise-likelihood": "observed", "pairwise": "observed"}
#: choice -> largest share of inconsistent pairs a pairwise model may have (the paper's Figures 3 and 4)
INCONSISTENT = {"off": None, "55 % (paper Fig. 3)": 0.55, "50 % (paper Fig. 4)": 0.50}


@dataclass(frozen=True)
class View:
    """Everything the sidebar selects; hashable so it can key cached tables."""

    store: str
    version: tuple
    mode: str
    grouping: str
    reference: str
    models: tuple[str, ...]
    subtasks: tuple[str, ...]
    groups: tuple[str, ...]
    ci: float
    n_boot: int
    preset: str = "default"
    max_inconsistent: float | None = None

    @property
    def pool(self) -> str:
        return MODES[self.mode]

    def settings(self) -> dict:
        """The view as plain values, for report bundles."""
        out = asdict(self)
        out.pop("version")
        out["pool"] = self.pool
        return out


def regroup_code(code: str, grouping: str) -> str:
    """``W_F`` → ``W`` (race) or ``F`` (gender); codes without ``_`` are left whole."""
    part = GROUPINGS[grouping]
    pieces = str(code).split("_")
    return code if part is None or len(pieces) != 2 else pieces[part]


def groupable(groups: Sequence[str]) -> list[str]:
    """The groupings that make sense for these group codes (race/gender need ``RACE_GENDER`` codes)."""
    split = all(len(str(g).split("_")) == 2 for g in groups)
    return list(GROUPINGS) if split and groups else ["race × gender"]


def regroup(table: pd.DataFrame, grouping: str, columns: Sequence[str] = ("group",)) -> pd.DataFrame:
    """``table`` with its group ``columns`` mapped to ``grouping`` (candidates are pooled into the coarser groups)."""
    if GROUPINGS[grouping] is None:
        return table
    out = table.copy()
    for column in columns:
        codes = out[column].astype(str)
        out[column] = codes.map({c: regroup_code(c, grouping) for c in codes.unique()})
    return out


def shown(table: pd.DataFrame, view: View, *, with_reference: bool = False) -> pd.DataFrame:
    """Rows of the selected models, subtasks and groups (and the reference group if asked)."""
    groups = [*view.groups, view.reference] if with_reference else list(view.groups)
    keep = table["model"].isin(view.models) & table["subtask"].isin(view.subtasks) & table["group"].isin(groups)
    return table[keep].reset_index(drop=True)


def fingerprints(scores: pd.DataFrame, models: Sequence[str]) -> dict[str, str]:
    """model label → store fingerprint, for the selected models."""
    rows = scores[scores["model"].isin(models)].drop_duplicates("model")
    return dict(zip(rows["model"], rows["fingerprint"]))


def model_table(models: pd.DataFrame) -> pd.DataFrame:
    """Registered models with a readable registration time, label first."""
    out = models[["label", "fingerprint", "created", "details"]].copy()
    out["created"] = pd.to_datetime(out["created"], unit="s").dt.strftime("%Y-%m-%d %H:%M")
    return out.rename(columns={"label": "model", "created": "registered"})


def store_summary(store: Store) -> pd.DataFrame:
    """What the store holds: one row per (model, task, subtask, mode) with candidates scored and when."""
    point = store.pointwise_table()
    pairs = store.pairwise_table()
    frames = []
    if len(point):
        frames.append(point.groupby(["model", "fingerprint", "task", "subtask", "mode"], as_index=False)
                      .agg(items=("candidate_id", "nunique"), results=("created", "size"),
                           first=("created", "min"), last=("created", "max")))
    if len(pairs):
        pairs = pairs.assign(mode=pairs["method"].map({"generate": "pairwise", "likelihood": "pairwise-likelihood"}))
        frames.append(pairs.groupby(["model", "fingerprint", "task", "subtask", "mode"], as_index=False)
                      .agg(items=("pool", "nunique"), results=("created", "size"),
                           first=("created", "min"), last=("created", "max")))
    columns = ["model", "fingerprint", "task", "subtask", "mode", "items", "results", "first", "last"]
    out = pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)
    for column in ("first", "last"):
        out[column] = pd.to_datetime(out[column], unit="s").dt.strftime("%Y-%m-%d %H:%M")
    return out.rename(columns={"items": "candidates / pools", "first": "first scored", "last": "last scored"})
