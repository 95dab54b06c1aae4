"""The planner's answer before a listwise run of the study: how many rankings per job a conclusive verdict needs at
the rates the 2024 records (GPT-3.5, GPT-4, as imported) observed, from the verdict table's ``needed_per_group``
(unit: pools, one pool per ranking) at the study's quota k = 1."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from audit.audit import Audit
from audit.errors import AuditError
from audit.selection import Selection
from audit.store import Store
from audit.tasks import study
from audit.views import StoreTables

#: the study's published quota: the first-ranked resume
K = 1


def needed_rankings(tables: StoreTables, jobs: list[str]) -> pd.DataFrame:
    """Per job (``subtask``), the fewest and most rankings (``fewest``, ``most``) the records' inconclusive
    categories need for a conclusive verdict at k = 1; empty when the store holds no records of the jobs."""
    scores = tables.scores
    held = scores[(scores["task"] == study.TASK) & scores["model"].isin(study.RECORDED_SYSTEMS)
                  & scores["subtask"].isin(jobs)]
    if held.empty:
        return pd.DataFrame(columns=["subtask", "fewest", "most"])
    selection = Selection(study.TASK, models=tuple(sorted(held["model"].unique())),
                          subtasks=tuple(sorted(held["subtask"].unique())))
    table = Audit(tables, selection).verdicts((K,))
    pools = table[table["needed_unit"] == "pools"]
    return (pools.groupby("subtask")["needed_per_group"].agg(fewest="min", most="max").astype(int)
            .reindex(sorted(held["subtask"].unique())).reset_index())


def plan_line(db: str, jobs: list[str], asked: int) -> str:
    """One line: the rankings per job the records' rates ask for, or why there is no plan."""
    if not Path(db).is_file():
        return f"planner: cannot plan: {db} does not exist yet, so it holds no 2024 records of {study.TASK}"
    try:
        with Store(db, create=False) as store:
            needed = needed_rankings(StoreTables.read(store), jobs)
    except AuditError as exc:
        return f"planner: cannot plan: {exc}"
    if needed.empty:
        return (f"planner: cannot plan: {db} holds no 2024 records (gpt-3.5-turbo, gpt-4) of {study.TASK} for "
                f"{', '.join(jobs)}; import them to plan the run's size")
    parts = [f"{job} {_range(fewest, most)}" if pd.notna(fewest) else f"{job} none (the records are conclusive)"
             for job, fewest, most in needed.itertuples(index=False)]
    return (f"planner: rankings per job for a conclusive verdict per category at the 2024 records' observed rates "
            f"(k = {K}): {', '.join(parts)} (the fewest decide the first category, the most the last); asked: {asked}")

def _range(fewest: float, most: float) -> str:
    """``3,855–535,550``, or one number when both agree."""
    return f"{int(fewest):,}" if fewest == most else f"{int(fewest):,}–{int(most):,}"
