"""Every table of a store read once (:class:`StoreTables`, from a store or a ``--scores`` file) and the store
summary: what a page, a command or the report reads the results from."""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from audit.design import AuditDesign
from audit.enums import Mode
from audit.errors import AuditError
from audit.store.database import Store
from audit.store.tables import (ANSWER_FLAGS, PAIR_COLUMNS, SCORE_COLUMNS, answer_flags, dated_scores, pairs_of,
                                pairwise_mode)
from audit.tasks.designs import completed, declared_design

#: the pairwise prompts' columns the store summary reads
_PROMPT_TIMES = ["model", "fingerprint", "task", "subtask", "method", "pool", "created"]


@dataclass(frozen=True)
class StoreTables:
    """Every table a page needs, each read from the store once."""

    scores: pd.DataFrame
    pairs: pd.DataFrame
    models: pd.DataFrame
    designs: dict[tuple[str, str], AuditDesign]
    outcomes: pd.DataFrame  # recorded systems with their outcome kind (:meth:`audit.store.database.Store.recorded_systems`)
    #: what :attr:`summary` is made of, for tables read from a store: each score row's time of record (NaN for
    #: pairwise modes) and the pairwise prompts' columns :func:`store_summary` reads
    recorded_at: np.ndarray | None = None
    prompt_times: pd.DataFrame | None = None
    #: the store file the tables were read from (None for tables read from score files)
    source: Path | None = None
    #: each pairwise answer's flags (:func:`audit.store.tables.answer_flags`; none for score files)
    answers: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=ANSWER_FLAGS))

    @classmethod
    def from_scores(cls, scores: pd.DataFrame, designs: dict[tuple[str, str], AuditDesign] | None = None,
                    pairs: pd.DataFrame | None = None) -> "StoreTables":
        """A score table (and pair table) read from files, as a store's tables: ``designs`` per (task, subtask), by
        default each one's declared design (:func:`audit.tasks.designs.declared_design`)."""
        if designs is None:
            designs = {(str(t), str(s)): declared_design(rows) for (t, s), rows in scores.groupby(["task", "subtask"])}
        scores = scores.reindex(columns=list(dict.fromkeys([*SCORE_COLUMNS, *scores.columns])))
        return cls(scores, pairs if pairs is not None else pd.DataFrame(columns=PAIR_COLUMNS),
                   pd.DataFrame(columns=["model"]), designs, pd.DataFrame(columns=["fingerprint", "model", "task", "subtask", "outcome"]))

    @classmethod
    def read(cls, store: Store) -> "StoreTables":
        pointwise, prompts = store.pointwise_table(), store.pairwise_table()
        designs = {key: completed(design) for key, design in store.designs().items()}
        scores, recorded_at = dated_scores(pointwise, prompts)
        del pointwise  # the summary is made from the scores when asked: no second copy of the rows is kept
        return cls(scores, pairs_of(prompts), model_table(store.models()), designs, store.recorded_systems(),
                   recorded_at, prompts.reindex(columns=_PROMPT_TIMES), store.path, answer_flags(prompts))

    @classmethod
    def open(cls, path: str | Path) -> "StoreTables":
        """:meth:`read` of the existing store file at ``path`` (an AuditError if there is none)."""
        if not Path(path).is_file():
            raise AuditError(f"result store {path} does not exist")
        with Store(path, create=False) as store:
            return cls.read(store)

    @cached_property
    def ranked(self) -> pd.DataFrame | None:
        """Every ranked decision with its shown position (:meth:`audit.store.database.Store.ranked_decisions`), read
        from the store file when first asked (only the position view reads them: a verdict on a big ranked log does
        not hold its decisions twice); None for tables not read from a store."""
        if self.source is None:
            return None
        with Store(self.source, create=False) as store:
            return store.ranked_decisions()

    @cached_property
    def summary(self) -> pd.DataFrame:
        """What the store holds (:func:`store_summary`, imported systems dated by their records: :func:`record_dates`),
        made when first asked (a verdict reads none); empty for tables not read from a store."""
        if self.recorded_at is None:
            return pd.DataFrame()
        point = self.scores.assign(created=self.recorded_at)
        return record_dates(store_summary(point[point["mode"] == Mode.POINTWISE], self.prompt_times), self.models)

    @cached_property
    def _subtasks(self) -> dict[str, list[str]]:
        """Each task's subtasks with results, sorted (read once: pages ask for a design at every rerun)."""
        pairs = self.scores[["task", "subtask"]].drop_duplicates()
        return {str(task): sorted(rows["subtask"]) for task, rows in pairs.groupby("task", observed=True)}

    def tasks(self) -> list[str]:
        """Tasks with results: those holding a recorded system's decisions first (an auditor's first job is the
        deployed system, so a dashboard opens on it), then the others, each in name order."""
        recorded = set(self.outcomes["task"]) if len(self.outcomes) else set()
        return sorted(self.scores["task"].unique(), key=lambda task: (task not in recorded, task))

    def task(self, chosen: str | None) -> str:
        """``chosen`` (a command's ``--task``), else the store's only task (:func:`one_task`)."""
        return one_task(self.tasks(), chosen)

    def design(self, task: str) -> AuditDesign:
        """The design of ``task`` (of its first subtask with results; subtasks of one task share it)."""
        found = [self.designs[task, s] for s in self._subtasks.get(task, ()) if (task, s) in self.designs]
        if not found:
            raise AuditError(f"task {task!r} has no results in this store")
        return found[0]


def one_task(tasks: Sequence[str], chosen: str | None) -> str:
    """``chosen`` (a command's ``--task``, which must be one of ``tasks``), else the only one of ``tasks``; several
    and no choice is an error."""
    if chosen:
        if chosen not in tasks:
            raise AuditError(f"task {chosen!r} has no results in this store; its tasks are: {', '.join(sorted(tasks))}")
        return chosen
    if len(tasks) != 1:
        raise AuditError(f"the store holds tasks {sorted(tasks)}; choose one with --task")
    return tasks[0]


def fingerprints(scores: pd.DataFrame, models: Sequence[str]) -> dict[str, str]:
    """model label → store fingerprint, for the selected models."""
    rows = scores[scores["model"].isin(models)].drop_duplicates("model")
    return dict(zip(rows["model"], rows["fingerprint"]))


def model_table(models: pd.DataFrame) -> pd.DataFrame:
    """Registered models with a readable registration time, label first."""
    out = models[["label", "fingerprint", "created", "details"]].copy()
    out["created"] = pd.to_datetime(out["created"], unit="s").dt.strftime("%Y-%m-%d %H:%M")
    return out.rename(columns={"label": "model", "created": "registered"})


def record_dates(summary: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """``summary`` (:func:`store_summary`) with an imported system's first / last dates those of its records (the
    source's own dates, as the report prints them), not the time of the import."""
    dated = {}
    for fingerprint, details in zip(models["fingerprint"], models["details"]):
        info = json.loads(details)
        if "source_sha256" in info:
            dated[fingerprint] = (info.get("first_date") or "n/a", info.get("last_date") or "n/a")
    if not dated:
        return summary
    out = summary.copy()
    recorded = out["fingerprint"].isin(dated)
    out.loc[recorded, "first scored / recorded"] = out.loc[recorded, "fingerprint"].map(lambda f: dated[f][0])
    out.loc[recorded, "last scored / recorded"] = out.loc[recorded, "fingerprint"].map(lambda f: dated[f][1])
    return out


def store_summary(point: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """What the store holds: one row per (model, task, subtask, mode) with candidates scored and when, from the
    store's pointwise and pairwise tables."""
    frames = []
    if len(point):
        frames.append(point.groupby(["model", "fingerprint", "task", "subtask", "mode"], as_index=False)
                      .agg(items=("candidate_id", "nunique"), results=("created", "size"),
                           first=("created", "min"), last=("created", "max")))
    if len(pairs):
        pairs = pairs.assign(mode=pairwise_mode(pairs["method"]))
        frames.append(pairs.groupby(["model", "fingerprint", "task", "subtask", "mode"], as_index=False)
                      .agg(items=("pool", "nunique"), results=("created", "size"),
                           first=("created", "min"), last=("created", "max")))
    columns = ["model", "fingerprint", "task", "subtask", "mode", "items", "results", "first", "last"]
    out = pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)
    for column in ("first", "last"):
        out[column] = pd.to_datetime(out[column], unit="s").dt.strftime("%Y-%m-%d %H:%M")
    return out.rename(columns={"items": "candidates / pools", "first": "first scored / recorded",
                                "last": "last scored / recorded"})
