"""One audit computation: the store's tables and one :class:`audit.selection.Selection` in, everything a page, a CLI
command or the report shows out (metric table for every valid k with intervals and adjusted p-values, impact ratios,
keys left out). Regrouping, dropping unreliable pairwise models, the reference check and the per-key fallback happen
here once (in :func:`audit.views.metric_rows`)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from audit.design import AuditDesign, PoolDesign
from audit.errors import AuditError
from audit.metrics import model_rankings, ndcg_table, validity
from audit.metrics.bands import ndcg_bands, validity_bands
from audit.metrics.compare import compare_gaps, rank_correlation, selection_flips
from audit.metrics.impact import impact_ratios
from audit.metrics.inference import METHODS, adjusted
from audit.metrics.keys import split_keys
from audit.metrics.pools import pool_size
from audit.selection import Selection
from audit.views import MetricRows, StoreTables, metric_rows, pool_of, regroup


@dataclass(frozen=True)
class AuditResult:
    """Everything one selection shows. ``table``: one row per (model, task, subtask, mode, group, k) for every k up
    to the smallest selected pool, with bootstrap bounds and p-values adjusted per model, mode and k across the
    selected groups × subtasks; ``impact``: impact ratios per category and k; ``skipped``: keys left out with the
    reason; ``verdicts``: filled by :mod:`audit.metrics.verdict` when plugged in."""

    selection: Selection
    design: AuditDesign
    grouping: str
    reference: str
    pool: str
    table: pd.DataFrame
    impact: pd.DataFrame
    skipped: tuple[str, ...]
    draws: tuple[pd.DataFrame, dict[str, np.ndarray]] | None = None
    verdicts: pd.DataFrame | None = field(default=None)

    def at(self, k: int) -> pd.DataFrame:
        """The metric rows at quota ``k``."""
        return self.table[self.table["k"] == k].reset_index(drop=True)

    def correlations(self, k: int) -> pd.DataFrame:
        """Pearson r of each metric with ΔDP and ΔEO at quota ``k`` (overall and per group), with bootstrap bands
        when the draws are kept."""
        rows = self.at(k)
        if rows.empty:
            return pd.DataFrame(columns=["scope", "gap", "metric", "r", "n", "r_lo", "r_hi"])
        if self.draws is None:
            return validity(rows)
        return validity_bands(rows, *self.draws, level=self.selection.ci or 0.95)

    def rankings(self, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(model rankings, NDCG@N with bootstrap bands when the draws are kept) at quota ``k``."""
        rows = self.at(k)
        if self.draws is None:
            return model_rankings(rows), ndcg_table(rows)
        return model_rankings(rows), ndcg_bands(rows, *self.draws, level=self.selection.ci or 0.95)


def resolved(tables: StoreTables, selection: Selection) -> tuple[AuditDesign, str, str]:
    """(stored design, grouping, reference) of ``selection``: the grouping checked against the design's declared
    ones, the reference defaulting to the stored one coarsened to the grouping and checked against the groups."""
    if selection.task not in tables.tasks():
        raise AuditError(f"task {selection.task!r} has no results in this store; tasks: {tables.tasks()}")
    design = tables.design(selection.task)
    grouping = selection.grouping or design.finest()
    reference = selection.reference or design.category(design.reference, grouping)
    rows = tables.scores[(tables.scores["task"] == selection.task) & (tables.scores["mode"] == selection.mode)]
    if rows.empty:
        raise AuditError(f"task {selection.task!r} has no {selection.mode} scores")
    groups = sorted({design.category(c, grouping) for c in rows["group"].astype(str).unique()})
    if reference not in groups:
        raise AuditError(f"reference group {reference!r} not found among the {grouping} groups of task "
                         f"{selection.task!r}: {', '.join(groups)}")
    if selection.adjust not in METHODS:
        raise AuditError(f"adjustment {selection.adjust!r} not understood; use one of {list(METHODS)}")
    return design, grouping, reference


def base_rows(tables: StoreTables, selection: Selection, *, keep_draws: bool = False) -> MetricRows:
    """The metric pass of ``selection.base()`` over every model and subtask of the task (cache this on the base)."""
    _, grouping, reference = resolved(tables, selection)
    return metric_rows(tables, task=selection.task, mode=selection.mode, grouping=grouping, reference=reference,
                       ci=selection.ci, n_boot=selection.n_boot, preset=selection.preset,
                       max_inconsistent=selection.max_inconsistent, n_perm=selection.n_perm,
                       keep_draws=keep_draws and selection.ci is not None, pool=selection.pool, seed=selection.seed)


def compute(tables: StoreTables, selection: Selection, *, rows: MetricRows | None = None,
            with_impact: bool = True) -> AuditResult:
    """The audit of ``selection`` on ``tables`` (``rows``: a cached :func:`base_rows` of the same base selection)."""
    design, grouping, reference = resolved(tables, selection)
    rows = rows if rows is not None else base_rows(tables, selection)
    table = _selected(rows.table, selection, reference)
    if table.empty:
        raise AuditError("no metric rows for the selected models, subtasks and groups")
    if selection.n_perm is not None:
        table = adjusted(table, selection.adjust)
    pool = selection.pool or str(pool_of(design, selection.mode))
    impact = _impact(tables, selection, design, grouping, pool, table) if with_impact else pd.DataFrame()
    return AuditResult(selection, design, grouping, reference, pool, table, impact, tuple(rows.skipped),
                       _selected_draws(rows.draws, table))


def _selected(table: pd.DataFrame, selection: Selection, reference: str) -> pd.DataFrame:
    """The rows of the selected models, subtasks and groups, for every k up to the smallest selected pool (or the
    selection's ks, each checked against it)."""
    keep = pd.Series(True, index=table.index)
    for column, chosen in (("model", selection.models), ("subtask", selection.subtasks),
                           ("group", selection.groups)):
        if chosen:
            keep &= table[column].astype(str).isin(chosen)
    out = table[keep]
    if out.empty:
        return out.reset_index(drop=True)
    largest = int(out.groupby(["model", "subtask"], observed=True)["k"].max().min())
    if selection.ks:
        beyond = [k for k in selection.ks if not 1 <= k <= largest]
        if beyond:
            raise AuditError(f"quota k = {beyond[0]} outside 1 … {largest} (the smallest selected pool)")
        return out[out["k"].isin(selection.ks)].reset_index(drop=True)
    return out[out["k"] <= largest].reset_index(drop=True)


def _selected_draws(draws: tuple[pd.DataFrame, dict] | None, table: pd.DataFrame) -> tuple | None:
    """The bootstrap draws of the rows of ``table``."""
    if draws is None:
        return None
    index, values = draws
    columns = ["model", "task", "subtask", "mode", "group", "k"]
    keys = pd.MultiIndex.from_frame(table[columns].astype(str))
    keep = pd.MultiIndex.from_frame(index[columns].astype(str)).isin(keys)
    return index[keep].reset_index(drop=True), {name: v[keep] for name, v in values.items()}


def _impact(tables: StoreTables, selection: Selection, design: AuditDesign, grouping: str, pool: str,
            table: pd.DataFrame) -> pd.DataFrame:
    """Impact ratios of the selection's grouping at its quotas, over the models and subtasks of ``table``."""
    scores = tables.scores
    scores = scores[(scores["task"] == selection.task) & (scores["mode"] == selection.mode)
                    & scores["model"].isin(table["model"].unique()) & scores["subtask"].isin(table["subtask"].unique())]
    scores = regroup(scores.drop(columns=["label_mass", "fingerprint"], errors="ignore"), design.part(grouping))
    ks = sorted(table["k"].unique())
    return impact_ratios(scores, ks=ks, pool=pool, grouping=grouping, ci=selection.ci, n_boot=selection.n_boot,
                         seed=selection.seed)


def impact_table(tables: StoreTables, selection: Selection, groupings: Sequence[str] = ()) -> pd.DataFrame:
    """Impact ratios of ``selection`` under each of ``groupings`` (default: every one the task declares whose pools
    exceed the selection's largest k: at k = pool size every ratio is 1 by construction), each from its own
    :func:`compute` (the selection's reference and groups for its own grouping, the stored reference for the
    others)."""
    design = resolved(tables, selection)[0]
    frames = []
    for grouping in groupings or design.groupings:
        own = grouping == (selection.grouping or design.finest())
        chosen = replace(selection, grouping=grouping, reference=selection.reference if own else None,
                         groups=selection.groups if own else (), n_perm=None, ks=())
        result = compute(tables, chosen)
        largest = int(result.table["k"].max())
        if selection.ks and max(selection.ks) >= largest:
            if groupings:
                raise AuditError(f"quota k = {max(selection.ks)} is not below the pool size {largest} of the "
                                 f"{grouping} grouping")
            continue
        frames.append(result.impact[result.impact["k"].isin(selection.ks or result.impact["k"])])
    if not frames:
        raise AuditError(f"no grouping of task {selection.task!r} has pools of more than {max(selection.ks)} "
                         "candidates")
    return pd.concat(frames, ignore_index=True)


@dataclass(frozen=True)
class Comparison:
    """System B against system A on the candidates both scored: ``gaps`` (ΔDP and ΔEO differences with paired
    bootstrap bounds per group and k; unpaired for recorded pools), ``flips`` (per candidate, at the smallest k) and ``correlation`` (Spearman ρ
    of their scores)."""

    grouping: str
    reference: str
    pool: str
    gaps: pd.DataFrame
    flips: pd.DataFrame
    correlation: pd.DataFrame


def comparison(tables: StoreTables, selection: Selection, a: str, b: str) -> Comparison:
    """B against A under the selection's grouping, reference, pool design, subtasks, ci, n_boot, seed and ks (the
    page, ``compare --db`` and the report's comparison all call this)."""
    design, grouping, reference = resolved(tables, selection)
    if not selection.ks:
        raise AuditError("a comparison needs at least one quota k")
    scores = tables.scores
    scores = scores[(scores["task"] == selection.task) & (scores["mode"] == selection.mode)]
    if selection.subtasks:
        scores = scores[scores["subtask"].isin(selection.subtasks)]
    scores = regroup(scores.drop(columns=["label_mass", "fingerprint"], errors="ignore"), design.part(grouping))
    pool = selection.pool or str(pool_of(design, selection.mode))
    pools = [pool_size(PoolDesign.parse(pool), keys) for keys in split_keys(scores, reference=reference)]
    if pools and max(selection.ks) >= min(pools):
        raise AuditError(f"quota k={max(selection.ks)} is not below the pool size {min(pools)} of the {grouping} "
                         "grouping: at k = pool size everyone is selected; choose a smaller k")
    options = {"a": a, "b": b, "pool": pool}
    gaps = compare_gaps(scores, reference=reference, ks=selection.ks, ci=selection.ci or 0.95,
                        n_boot=selection.n_boot, seed=selection.seed, **options)
    return Comparison(grouping, reference, pool, gaps, selection_flips(scores, k=min(selection.ks), **options),
                      rank_correlation(scores, **options))
