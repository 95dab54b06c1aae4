"""The store's results shaped for reading, free of Streamlit: one read of every store table, the metric table of one
task under its stored design (per mode and grouping), filters, label-mass flags and the store summary.

Used by the dashboard (which wraps these calls in its caches) and by ``audit metrics --db``.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from audit.design import AuditDesign, PoolDesign, PoolKind, regroup_code
from audit.errors import AuditError
from audit.metrics import MetricSuite
from audit.metrics.pairwise import drop_unreliable
from audit.metrics.schema import is_pairwise
from audit.store.tables import PAIR_COLUMNS, SCORE_COLUMNS, dated_scores, pairs_of, pairwise_mode
from audit.engine.selection import Selection
from audit.store.database import Store
from audit.tasks.designs import completed, declared_design

#: score-table modes in display order; pairwise scores are relative to the pools they were recorded in
MODES = ("pointwise", "pairwise-likelihood", "pairwise")
OBSERVED = PoolDesign(PoolKind.OBSERVED)
#: below this mean share of next-token probability on the labels, a model's scores are mostly renormalised noise
LOW_LABEL_MASS = 0.05
#: the pairwise prompts' columns the store summary reads
_PROMPT_TIMES = ["model", "fingerprint", "task", "subtask", "method", "pool", "created"]
#: choice -> largest share of inconsistent pairs a pairwise model may have (the paper's Figures 3 and 4)
INCONSISTENT = {"off": None, "55 % (paper Fig. 3)": 0.55, "50 % (paper Fig. 4)": 0.50}


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
                   recorded_at, prompts.reindex(columns=_PROMPT_TIMES))

    @cached_property
    def summary(self) -> pd.DataFrame:
        """What the store holds (:func:`store_summary`, imported systems dated by their records: :func:`record_dates`),
        made when first asked (a verdict reads none); empty for tables not read from a store."""
        if self.recorded_at is None:
            return pd.DataFrame()
        point = self.scores.assign(created=self.recorded_at)
        return record_dates(store_summary(point[point["mode"] == "pointwise"], self.prompt_times), self.models)

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


def pool_of(design: AuditDesign, mode: str) -> PoolDesign:
    """The pool design a mode's scores are read under: the task's own for pointwise, the recorded pools otherwise."""
    return OBSERVED if is_pairwise(mode) else design.pools


def regroup(table: pd.DataFrame, part: int | None, columns: Sequence[str] = ("group",)) -> pd.DataFrame:
    """``table`` with its group ``columns`` coarsened to ``part`` of each code (see :func:`audit.design.regroup_code`;
    candidates are pooled into the coarser groups); ``table`` itself when ``part`` is None."""
    if part is None:
        return table
    out = table.copy(deep=False)  # columns are replaced, never written into
    for column in columns:
        if isinstance(out[column].dtype, pd.CategoricalDtype) and (out[column].cat.codes >= 0).all():
            out[column] = _regrouped_category(out[column], part)
            continue
        codes = out[column].astype(str)
        out[column] = codes.map({c: regroup_code(c, part) for c in codes.unique()})
    return out


def _regrouped_category(column: pd.Series, part: int) -> pd.Series:
    """A categorical ``column`` of group codes (no empty cell) coarsened through its categories alone, categories
    sorted as a conversion of the coarsened text would sort them."""
    names = [regroup_code(str(c), part) for c in column.cat.categories]
    coarse = sorted(set(names))
    codes = np.searchsorted(np.asarray(coarse, dtype=object), np.asarray(names, dtype=object))
    return pd.Series(pd.Categorical.from_codes(codes[column.cat.codes.to_numpy()], categories=coarse),
                     index=column.index, name=column.name)


def metric_parts(scores: pd.DataFrame, designs: dict[tuple[str, str], AuditDesign], *, reference: str | None = None,
                 pool: str | None = None) -> list[tuple[pd.DataFrame, str, PoolDesign]]:
    """``scores`` split by the (reference, pool design) each row is read under: the stored design of its task and
    subtask (:func:`pool_of` its mode), unless ``reference`` or ``pool`` override it."""
    settings: dict[tuple[str, PoolDesign], list[pd.Index]] = {}
    for (task, subtask, mode), rows in scores.groupby(["task", "subtask", "mode"], sort=False, observed=True):
        design = designs.get((str(task), str(subtask)))
        if design is None and (reference is None or pool is None):
            raise AuditError(f"no stored design for task {task!r}, subtask {subtask!r}; give the reference and pool")
        setting = (reference or design.reference, PoolDesign.parse(pool) if pool else pool_of(design, str(mode)))
        settings.setdefault(setting, []).append(rows.index)
    return [(scores[scores.index.isin(pd.Index([]).append(parts))], *setting) for setting, parts in settings.items()]


@dataclass(frozen=True)
class MetricRows:
    """A task's metric table, the (model, subtask) keys left out with the reason, and the bootstrap draws of every
    row (index, {column: (rows, n_boot)}; None unless kept, see :class:`audit.metrics.MetricSuite`)."""

    table: pd.DataFrame
    skipped: list[str]
    draws: tuple[pd.DataFrame, dict[str, np.ndarray]] | None = None


def metric_rows(tables: StoreTables, *, task: str, mode: str, grouping: str, reference: str, ci: float | None,
                n_boot: int, preset: str = "default", max_inconsistent: float | None = None,
                n_perm: int | None = None, keep_draws: bool = False, pool: str | None = None,
                seed: int = 0) -> MetricRows:
    """The metric table of one task, mode and grouping for every quota k up to the smallest pool, under the task's
    stored pool design and the metric ``preset``, with bootstrap bounds, and the (model, subtask) keys left out with
    the reason (e.g. a partial run lacking a group or a qualified candidate, or a pairwise model above
    ``max_inconsistent`` inconsistent pairs). ``n_perm`` adds permutation p-values and ``keep_draws`` (with ``ci``)
    keeps the bootstrap replicates behind the bounds, all from the same metric pass; ``pool`` overrides the stored
    pool design. Callers go through :class:`audit.engine.audit.Audit`."""
    part = tables.design(task).part(grouping)
    chosen = (tables.scores["task"] == task) & (tables.scores["mode"] == mode)
    scores = regroup(tables.scores[chosen], part)
    pairs = tables.pairs[(tables.pairs["task"] == task) & (tables.pairs["mode"] == mode)]
    pairs = regroup(pairs, part, ("group_a", "group_b"))
    frames, draws, skipped = [], [], []
    if max_inconsistent is not None and len(pairs):
        scores, dropped = drop_unreliable(scores, pairs, max_inconsistent=max_inconsistent)
        skipped += [f"{r.model} · {r.task}: excluded, {r.inconsistent:.0%} of {r.pairs} pairs inconsistent "
                    f"(> {max_inconsistent:.0%})" for r in dropped.itertuples(index=False)]
    options = dict(reference=reference, pairs=pairs if len(pairs) else None, ci=ci, n_boot=n_boot, preset=preset,
                   n_perm=n_perm, keep_draws=keep_draws, seed=seed, outcomes=tables.outcomes)
    for rows, _, design in metric_parts(scores, tables.designs, reference=reference, pool=pool):
        done, failed = _part_tables(rows, pool=design, **options)
        frames += [table for table, _ in done]
        draws += [found for _, found in done if found is not None]
        skipped += failed
    if not frames:
        raise AuditError("no (model, subtask) has complete results; " + "; ".join(skipped))
    table = pd.concat(frames, ignore_index=True)
    table = table[table["k"] <= table.groupby(["model", "subtask"])["k"].transform("max").min()]
    return MetricRows(table.reset_index(drop=True), skipped, joined(draws) if draws else None)


def _part_tables(rows: pd.DataFrame, **options) -> tuple[list[tuple[pd.DataFrame, tuple | None]], list[str]]:
    """([(metric table for every k up to the pool size, draws)], keys left out with the reason) of ``rows``: one
    suite over all its (model, subtask) keys, or, when that fails, one suite per key (``options``: the suite's)."""
    def tables(part: pd.DataFrame) -> tuple[pd.DataFrame, tuple | None]:
        suite = MetricSuite(part, **options)
        return suite.table(range(1, min(suite.pool_sizes.values()) + 1)), suite.draws

    try:
        return [tables(rows)], []
    except AuditError:
        pass
    done, failed = [], []
    for (model, subtask), key_rows in rows.groupby(["model", "subtask"], sort=True):
        try:
            done.append(tables(key_rows))
        except AuditError as exc:
            failed.append(f"{model} · {subtask}: {exc}")
    return done, failed


def joined(draws: list[tuple[pd.DataFrame, dict[str, np.ndarray]]]) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Several (index, draws) pairs of :class:`audit.metrics.MetricSuite` as one."""
    return (pd.concat([index for index, _ in draws], ignore_index=True),
            {name: np.concatenate([values[name] for _, values in draws]) for name in draws[0][1]})


def label_mass(scores: pd.DataFrame, task: str) -> pd.DataFrame:
    """Per model, the mean label mass of its pointwise scores on ``task`` and whether it is below
    :data:`LOW_LABEL_MASS` (columns model, mean label mass, low)."""
    rows = scores[(scores["task"] == task) & (scores["mode"] == "pointwise")]
    mass = pd.to_numeric(rows["label_mass"]).groupby(rows["model"]).mean()
    return pd.DataFrame({"model": mass.index, "mean label mass": mass.to_numpy(),
                         "low": mass.to_numpy() < LOW_LABEL_MASS})


def shown(table: pd.DataFrame, view: View, *, with_reference: bool = False) -> pd.DataFrame:
    """Rows of the selected models, subtasks and groups (and the reference group if asked)."""
    s = view.selection
    groups = [*s.groups, s.reference] if with_reference else list(s.groups)
    keep = table["model"].isin(s.models) & table["subtask"].isin(s.subtasks) & table["group"].isin(groups)
    if "task" in table:
        keep &= table["task"] == s.task
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
