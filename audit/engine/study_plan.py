"""The planner's answer before a listwise run of the study: how many rankings per job a conclusive verdict needs at
the rates the 2024 records (GPT-3.5, GPT-4, as imported) observed, from the verdict table's ``needed_per_group``
(unit: pools, one pool per ranking) at the study's quota k = 1, and how many categories no number of rankings of
this kind would settle (the planner's ``beyond reach`` and ``on the threshold``)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from audit.engine.audit import Audit
from audit.errors import AuditError
from audit.engine.verdict import BEYOND_REACH, NOT_COMPARABLE, ON_THRESHOLD, PLAN_REACH
from audit.engine.selection import Selection
from audit.store.database import Store
from audit.tasks import study
from audit.engine.tables import StoreTables

#: the study's published quota: the first-ranked resume
K = 1


def needed_rankings(tables: StoreTables, jobs: list[str]) -> pd.DataFrame:
    """Per job (``subtask``), the fewest and most rankings (``fewest``, ``most``; NaN when none has a figure) the
    records' inconclusive categories need for a conclusive verdict at k = 1, and how many categories more rankings
    of this kind will not settle (``unsettled``: beyond 10× the records, or a ratio on the threshold); empty when
    the store holds no records of the jobs."""
    scores = tables.scores
    held = scores[(scores["task"] == study.TASK) & scores["model"].isin(study.RECORDED_SYSTEMS)
                  & scores["subtask"].isin(jobs)]
    if held.empty:
        return pd.DataFrame(columns=["subtask", "fewest", "most", "unsettled"])
    selection = Selection(study.TASK, models=tuple(sorted(held["model"].unique())),
                          subtasks=tuple(sorted(held["subtask"].unique())), ks=(K,))
    table = Audit(tables, selection).verdicts(selection.ks)
    table = table.assign(unsettled=table["plan"].isin((BEYOND_REACH, ON_THRESHOLD, NOT_COMPARABLE)))
    return (table.groupby("subtask").agg(fewest=("needed_per_group", "min"), most=("needed_per_group", "max"),
                                         unsettled=("unsettled", "sum"))
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
    parts = [_job_plan(*row) for row in needed.itertuples(index=False)]
    return (f"planner: rankings per job for a conclusive verdict per category at the 2024 records' observed rates "
            f"(k = {K}): {', '.join(parts)} (the fewest decide the first category, the most the last; beyond "
            f"reach: over {PLAN_REACH}× the records' rankings needed, or a ratio on the threshold, so more rankings "
            f"of this kind would not settle them); asked: {asked}")


def _job_plan(job: str, fewest: float, most: float, unsettled: float) -> str:
    """``retail 3,855–9,686 (14 categories beyond reach)``: one job's part of :func:`plan_line`."""
    beyond = f"{int(unsettled)} categor{'y' if unsettled == 1 else 'ies'} beyond reach"
    if pd.notna(fewest):
        return f"{job} {_range(fewest, most)}" + (f" ({beyond})" if unsettled else "")
    return f"{job} none, {beyond}" if unsettled else f"{job} none (the records are conclusive)"


def _range(fewest: float, most: float) -> str:
    """``3,855–535,550``, or one number when both agree."""
    return f"{int(fewest):,}" if fewest == most else f"{int(fewest):,}–{int(most):,}"
