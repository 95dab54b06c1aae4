"""What a recorded system selected, and the groupings LL144 reads it by.

What counts as selected follows the system's outcome kind: ``rank`` (recorded rankings, ranked decision logs) the top
k of each recorded pool; ``selected`` the recorded selection, with no quota; ``score`` LL144's scoring rate, the share
scoring above the median score of the (model, task, subtask) sample, with no quota. The ``ll144`` command, ``impact``
on quota-free systems and the report's LL144 section all read recorded decisions through here."""
from __future__ import annotations

import pandas as pd

from audit.design import AuditDesign
from audit.metrics.impact import FOUR_FIFTHS
from audit.metrics.ll144 import ll144_table
from audit.recorded.decision_logs import selected_flags
from audit.tasks.recorded import LL144_FIRST, LL144_NAMES

INTERSECTION = "intersection"
#: outcome kinds with no quota: ``impact`` reports their observed selection (scoring) rate
UNQUOTED = ("selected", "score")


def ll144_groupings(design: AuditDesign) -> dict[str, tuple[str, list[str]]]:
    """LL144 grouping name → (the design's grouping, the code-part columns ``part0``, ``part1``, … it keeps): each
    single part under its LL144 name, sex before race/ethnicity, then the intersection (when there are two parts or
    more, or none)."""
    single = sorted(((name, part) for name, part in design.groupings.items() if part is not None),
                    key=lambda item: (item[0] != LL144_FIRST, item[1]))
    out = {LL144_NAMES.get(name, name): (name, [f"part{part}"]) for name, part in single}
    if len(single) != 1:
        out[INTERSECTION] = (design.finest(), [f"part{part}" for _, part in sorted(single, key=lambda i: i[1])]
                             or ["part0"])
    return out


def recorded_decisions(scores: pd.DataFrame, outcomes: pd.DataFrame, k: int) -> pd.DataFrame:
    """One row per recorded applicant of ``scores`` (rows of a system in ``outcomes``, the store's recorded systems:
    never a scored model's pairwise pools) with its system's ``outcome`` kind, ``selected`` as LL144 counts it, the score median of score
    outcomes (``threshold``) and its group code split into ``part0``, ``part1``, …; ranks are read back from the
    stored score (n − rank)/(n − 1)."""
    kinds = outcomes.set_index(["fingerprint", "task", "subtask"])["outcome"]
    recorded = scores[scores["pool"].notna()]
    if recorded.empty:
        return recorded.copy()
    outcome = kinds.reindex(pd.MultiIndex.from_frame(recorded[["fingerprint", "task", "subtask"]])).to_numpy()
    recorded = recorded[pd.notna(outcome)].assign(outcome=outcome[pd.notna(outcome)])  # recorded systems only
    if recorded.empty:
        return recorded
    frames = []
    for (kind, *_), part in recorded.groupby(["outcome", "model", "task", "subtask"], sort=False):
        values = part["score"]
        if kind == "rank":
            size = part.groupby("pool")["score"].transform("size")
            values = (size - part["score"] * (size - 1)).round()
        frames.append(part.assign(selected=selected_flags(values, kind, k=k),
                                  threshold=values.median() if kind == "score" else float("nan")))
    recorded = pd.concat(frames)
    rows, groups = pd.factorize(recorded["group"].astype(str))  # each distinct group code split once
    parts = pd.Series(groups).str.split("_", expand=True)
    for column in parts.columns:
        recorded[f"part{column}"] = parts[column].array.take(rows)
    return recorded


def observed_impact(scores: pd.DataFrame, outcomes: pd.DataFrame, designs: dict, groupings: list[str] | tuple = (),
                    *, level: float = 0.95) -> pd.DataFrame:
    """``impact``'s rows for recorded systems whose outcome has no quota (``selected``, ``score``): per grouping of
    the stored design, the LL144 rates of :func:`audit.metrics.ll144.ll144_table` (k empty, candidates = applicants,
    the Katz interval of the impact ratio; the unknown category counted with no rate)."""
    decisions = recorded_decisions(scores, outcomes, 1)
    frames = []
    for (model, task, subtask), part in decisions.groupby(["model", "task", "subtask"], sort=True):
        design = designs[task, subtask]
        for grouping in groupings or design.groupings:
            chosen = design.part(grouping)
            columns = [c for c in part.columns if c.startswith("part")] if chosen is None else [f"part{chosen}"]
            table = ll144_table(part, {grouping: sorted(columns)}, level=level)
            frames.append(pd.DataFrame({
                "model": model, "task": task, "subtask": subtask, "mode": "pointwise", "grouping": grouping,
                "category": table["category"], "k": None, "candidates": table["applicants"],
                "selection_rate": table["selection_rate"], "impact_ratio": table["impact_ratio"],
                "four_fifths": table["impact_ratio"] < FOUR_FIFTHS, "impact_ratio_lo": table["impact_ratio_lo"],
                "impact_ratio_hi": table["impact_ratio_hi"], "note": table["note"]}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
