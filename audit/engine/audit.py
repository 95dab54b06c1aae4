"""One audit, shaped like fairlearn's ``MetricFrame``: the store's tables and one
:class:`audit.engine.selection.Selection` in; every view a page, a CLI command or the report shows (the resolved
design, pool sizes, score shape and label mass, diagnostics, position bias, the metric rows with their draws, rows /
correlations / rankings at k, impact ratios, verdicts, a comparison, the planner's curves, and what only the store
file holds of the audited systems, read on a thread of its own) computed on first use and kept, so a view
not asked costs nothing and a failing view raises its AuditError only when asked. Regrouping, dropping unreliable
pairwise models, the reference check and the one quota check live here."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TypeVar

import numpy as np
import pandas as pd

from audit.design import AuditDesign, PoolDesign
from audit.enums import Mode
from audit.errors import AuditError
from audit.metrics import model_rankings, ndcg_table, validity
from audit.metrics.bands import ndcg_bands, validity_bands
from audit.metrics.compare import compare_gaps, rank_correlation, selection_flips
from audit.metrics.impact import FOUR_FIFTHS, impact_ratios, known_categories
from audit.metrics.inference import METHODS, adjusted
from audit.metrics.keys import KeyData, Regroupings, with_decisions
from audit.metrics.ll144 import SMALL_SHARE, UNKNOWN, ll144_rows
from audit.metrics.pairwise import drop_unreliable
from audit.metrics.planner import plan, plan_at, plan_curves
from audit.metrics.pools import pool_size
from audit.metrics.quota import check_quota
from audit.metrics.schema import is_pairwise, text_categories
from audit.metrics.shape import score_shape
from audit.engine.verdict import decide, measure
from audit.engine.selection import Selection
from audit.tasks.recorded import LOG_QUOTAS, MIXED_DECISIONS, OTHER_LOGS, ll144_groupings
from audit.engine.diagnostics import Diagnostics, answer_shares
from audit.engine.metric_pass import MetricRows, metric_rows, pool_of, regroup
from audit.engine.monitor import MonitorSettings
from audit.engine.positions import PositionAudit, task_positions
from audit.engine.records import Records, read_records
from audit.engine.shape import Shape, label_mass
from audit.engine.tables import StoreTables

T = TypeVar("T")
Draws = tuple[pd.DataFrame, dict[str, np.ndarray]]


def memoised(method: Callable[..., T]) -> Callable[..., T]:
    """``method`` (hashable positional arguments only) computed once per instance and arguments."""
    @functools.wraps(method)
    def kept(self: "Audit", *args: object) -> T:
        key = (method.__name__, *args)
        if key not in self._memo:
            self._memo[key] = method(self, *args)
        return self._memo[key]
    return kept


@dataclass(frozen=True)
class Comparison:
    """System B against system A on the candidates both scored: ``gaps`` (ΔDP and ΔEO differences with paired
    bootstrap bounds per group and k; unpaired for recorded pools), ``flips`` (per candidate, at the smallest k) and
    ``correlation`` (Spearman ρ of their scores)."""

    grouping: str
    reference: str
    pool: str
    gaps: pd.DataFrame
    flips: pd.DataFrame
    correlation: pd.DataFrame


class Audit:
    """The audit of ``selection`` on ``tables``. ``draws``: keep the bootstrap replicates of the metric pass (for
    bands on correlations and NDCG); ``base``: an audit of ``selection.base()`` whose metric pass this one reads (so
    a change of filter reuses the expensive pass)."""

    def __init__(self, tables: StoreTables, selection: Selection, *, draws: bool = False,
                 base: "Audit | None" = None) -> None:
        self.tables, self.selection, self.keep_draws, self._base = tables, selection, draws, base
        self._memo: dict[tuple, object] = {}

    # -- what the selection resolves to ------------------------------------------------------------------------------
    @cached_property
    def resolved(self) -> tuple[AuditDesign, str, str]:
        """(stored design, grouping, reference): the grouping checked against the design's declared ones, the
        reference defaulting to the stored one coarsened to the grouping and checked against the groups."""
        s, tables = self.selection, self.tables
        if s.task not in tables.tasks():
            raise AuditError(f"task {s.task!r} has no results in this store; tasks: {tables.tasks()}")
        design = tables.design(s.task)
        grouping = s.grouping or design.finest()
        reference = s.reference or design.category(design.reference, grouping)
        rows = tables.scores[(tables.scores["task"] == s.task) & (tables.scores["mode"] == s.mode)]
        if rows.empty:
            raise AuditError(f"task {s.task!r} has no {s.mode} scores")
        groups = sorted({design.category(c, grouping) for c in rows["group"].astype(str).unique()})
        if reference not in groups:
            raise AuditError(f"reference group {reference!r} not found among the {grouping} groups of task "
                             f"{s.task!r}: {', '.join(groups)}")
        if s.adjust not in METHODS:
            raise AuditError(f"adjustment {s.adjust!r} not understood; use one of {list(METHODS)}")
        return design, grouping, reference

    @property
    def design(self) -> AuditDesign:
        return self.resolved[0]

    @property
    def grouping(self) -> str:
        return self.resolved[1]

    @property
    def reference(self) -> str:
        return self.resolved[2]

    @cached_property
    def pool(self) -> str:
        """The pool design's spelling: the selection's, else the stored one of its mode."""
        return self.selection.pool or str(pool_of(self.tables.design(self.selection.task), self.selection.mode))

    @cached_property
    def quota_free(self) -> bool:
        """Every system of the selection is judged on the decisions its log records (a 0/1 log's selections, a
        score log's scoring above its median): no quota moves a selection, so every number is the same at every k
        and a page or report says "on the recorded decisions", not "at k"."""
        if self.selection.mode != Mode.POINTWISE:
            return False
        return all(data.decided is not None for data in self.keys(Mode.POINTWISE, self.grouping))

    @cached_property
    def kinds(self) -> frozenset[str]:
        """The recorded outcome kinds (``rank``, ``selected``, ``score``) of the selection's pointwise systems; empty
        for scored models."""
        if self.selection.mode != Mode.POINTWISE:
            return frozenset()
        judged = {tuple(data.key[:3]) for data in self.keys(Mode.POINTWISE, self.grouping)}
        outcomes = self.tables.outcomes[["model", "task", "subtask", "outcome"]].astype(str)
        return frozenset(o for m, t, s, o in outcomes.itertuples(index=False) if (m, t, s) in judged)

    def audited_quota(self, chosen: int | None = None) -> tuple[int, str]:
        """(k, why) the verdict is read at: :meth:`audit.design.AuditDesign.audited_quota` of the task's design,
        except where the judged logs are of another kind than the one the design was stored with (a task holding
        logs of several kinds): a :attr:`quota_free` audit keeps its logs' reason (the recorded decisions) and says
        that a chosen k changes none of them; rank logs beside others read at their own quota."""
        design, kinds = self.design, self.kinds
        if self.quota_free:
            reason = LOG_QUOTAS[next(iter(kinds))][1] if len(kinds) == 1 else MIXED_DECISIONS
            return (chosen or 1), (reason if chosen is None else
                                   f"{reason}; the quota k = {chosen} asked for changes none of them")
        stored = design.labels[0] if design.labels else None
        if stored in LOG_QUOTAS and kinds and kinds != {stored}:  # logs of several kinds: the rank logs' own quota
            quota, reason = LOG_QUOTAS["rank"]
            design = replace(design, quota=quota, quota_reason=reason + (OTHER_LOGS if len(kinds) > 1 else ""))
        return design.audited_quota(chosen)

    @memoised
    def scores(self, mode: str, grouping: str | None = None, every_model: bool = False) -> pd.DataFrame:
        """The selection's score rows of ``mode`` (its models unless ``every_model``, its subtasks; pairwise models
        above the selection's inconsistent-pair cut left out), groups coarsened to ``grouping`` when given."""
        rows = self._rows(mode, every_model)
        return rows if grouping is None else regroup(rows, self.tables.design(self.selection.task).part(grouping))

    @memoised
    def _rows(self, mode: str, every_model: bool) -> pd.DataFrame:
        """:meth:`scores` before regrouping (filtered once for every grouping)."""
        s, scores = self.selection, self.tables.scores
        keep = (scores["task"] == s.task) & (scores["mode"] == mode)
        for column, chosen in (("model", () if every_model else s.models), ("subtask", s.subtasks)):
            if chosen:
                keep &= scores[column].astype(str).isin(chosen)
        rows = scores.drop(columns=["label_mass", "fingerprint"], errors="ignore")
        rows = rows if keep.all() else rows[keep]  # (a mask keeping every row would copy every column)
        pairs = self.tables.pairs
        pairs = pairs[(pairs["task"] == s.task) & (pairs["mode"] == mode)]
        if s.max_inconsistent is not None and is_pairwise(mode) and len(pairs):
            rows = drop_unreliable(rows, pairs, max_inconsistent=s.max_inconsistent)[0]
        if rows.empty:
            self._known(mode)
            raise AuditError(f"task {s.task!r} has no {mode} scores for this selection")
        return rows

    # -- pool sizes and the one quota check --------------------------------------------------------------------------
    @memoised
    def sizes(self, mode: str) -> dict[str, int]:
        """Each declared grouping's smallest pool size over the selection's ``mode`` rows (a quota k lies in
        1 … size − 1)."""
        design = self.tables.design(self.selection.task)
        pool = PoolDesign.parse(self.selection.pool or str(pool_of(design, mode)))
        return {grouping: min(pool_size(pool, data) for data in self.keys(mode, grouping))
                for grouping in design.groupings}

    @memoised
    def keys(self, mode: str, grouping: str) -> list[KeyData]:
        """:meth:`scores` of ``mode`` in ``grouping`` validated and split once for the views that read no reference
        (pool sizes, impact ratios, verdicts: their reference is the first group)."""
        coarse = regroup(self._texts(mode), self.tables.design(self.selection.task).part(grouping))
        return with_decisions(self._regroupings(mode).split(coarse), self.tables.outcomes)

    @memoised
    def _regroupings(self, mode: str) -> Regroupings:
        """The splits of :meth:`_texts` of ``mode`` under every grouping, sharing the codes of its rows."""
        return Regroupings()

    @memoised
    def _texts(self, mode: str) -> pd.DataFrame:
        """:meth:`scores` of ``mode`` with its text columns made categories once, for :meth:`keys` of every
        grouping."""
        return text_categories(self.scores(mode))

    @property
    def pool_sizes(self) -> dict[str, int]:
        """:meth:`sizes` of the selection's mode."""
        return self.sizes(self.selection.mode)

    def check_quota(self, ks: Sequence[int], groupings: Sequence[str] | None = None, *,
                    mode: str | None = None) -> None:
        """The one quota check: every k of ``ks`` must lie in 1 … pool size − 1 (at k = pool size everyone is
        selected: nothing to measure) for each of ``groupings``, or, when None, for the grouping with the largest
        pools (views over every grouping leave out those whose pools are not above k). ``mode``: whose pools
        (default the selection's)."""
        sizes = self.sizes(mode or self.selection.mode)
        unknown = [g for g in groupings or () if g not in sizes]
        if unknown:
            self.design.part(unknown[0])  # the design's error naming its groupings
        checked = {g: sizes[g] for g in groupings} if groupings else dict([max(sizes.items(), key=lambda i: i[1])])
        for k in sorted(ks):
            for grouping, size in checked.items():
                check_quota(k, size, f"the {grouping} grouping")

    # -- the metric pass ---------------------------------------------------------------------------------------------
    @cached_property
    def rows(self) -> MetricRows:
        """The metric pass of ``selection.base()`` over every model and subtask of the task (the base audit's)."""
        if self._base is not None:
            return self._base.rows
        s = self.selection
        return metric_rows(self.tables, task=s.task, mode=s.mode, grouping=self.grouping, reference=self.reference,
                           ci=s.ci, n_boot=s.n_boot, preset=s.preset, max_inconsistent=s.max_inconsistent,
                           n_perm=s.n_perm, keep_draws=self.keep_draws and s.ci is not None, pool=s.pool, seed=s.seed)

    @cached_property
    def table(self) -> pd.DataFrame:
        """One row per (model, task, subtask, mode, group, k) of the selected models, subtasks and groups, for every
        k up to the smallest selected pool (or the selection's ks), p-values adjusted per model, mode and k."""
        if self.selection.ks:
            self.check_quota(self.selection.ks, (self.grouping,))
        table = _selected(self.rows.table, self.selection)
        if table.empty:
            raise AuditError("no metric rows for the selected models, subtasks and groups")
        return adjusted(table, self.selection.adjust) if self.selection.n_perm is not None else table

    @cached_property
    def group_sizes(self) -> pd.DataFrame:
        """Candidates per model, subtask and group (in the audit's grouping) of the selection's scores, over the
        models and subtasks of :attr:`table` (columns model, subtask, group, candidates)."""
        table, rows = self.table, self.scores(self.selection.mode, self.grouping)
        rows = rows[rows["model"].isin(table["model"]) & rows["subtask"].isin(table["subtask"])]
        return rows.groupby(["model", "subtask", "group"])["candidate_id"].nunique().rename("candidates").reset_index()

    @property
    def skipped(self) -> tuple[str, ...]:
        """(model, subtask) keys the metric pass left out, with the reason."""
        return tuple(self.rows.skipped)

    @cached_property
    def draws(self) -> Draws | None:
        """The bootstrap draws of :attr:`table`'s rows (None unless kept)."""
        if self.rows.draws is None:
            return None
        index, values = self.rows.draws
        columns = ["model", "task", "subtask", "mode", "group", "k"]
        keys = pd.MultiIndex.from_frame(self.table[columns].astype(str))
        keep = pd.MultiIndex.from_frame(index[columns].astype(str)).isin(keys)
        return index[keep].reset_index(drop=True), {name: v[keep] for name, v in values.items()}

    @memoised
    def at(self, k: int) -> pd.DataFrame:
        """The metric rows at quota ``k``."""
        return self.table[self.table["k"] == k].reset_index(drop=True)

    @memoised
    def correlations(self, k: int) -> pd.DataFrame:
        """Pearson r of each metric with ΔDP and ΔEO at quota ``k`` (overall and per group), with bootstrap bands
        when the draws are kept."""
        rows = self.at(k)
        if rows.empty:
            return pd.DataFrame(columns=["scope", "gap", "metric", "r", "n", "r_lo", "r_hi"])
        if self.draws is None:
            return validity(rows)
        return validity_bands(rows, *self.draws, level=self.selection.ci or 0.95)

    @memoised
    def rankings(self, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(model rankings, NDCG@N with bootstrap bands when the draws are kept) at quota ``k``."""
        rows = self.at(k)
        if self.draws is None:
            return model_rankings(rows), ndcg_table(rows)
        return model_rankings(rows), ndcg_bands(rows, *self.draws, level=self.selection.ci or 0.95)

    # -- views that need no metric pass ------------------------------------------------------------------------------
    @cached_property
    def label_mass(self) -> pd.DataFrame:
        """Per selected model, the mean and smallest label mass of its pointwise scores on the task (every subtask)
        and whether the mean is low (:func:`audit.engine.shape.label_mass`)."""
        return label_mass(self.tables.scores, self.selection.task, self.selection.models)

    @cached_property
    def shape(self) -> Shape:
        """Skewness and kurtosis of each selected model, subtask and group's scores in the selection's mode, groups
        coarsened to its grouping (kept whole without one; the selected groups and the reference when groups are
        chosen), and :attr:`label_mass`."""
        s = self.selection
        rows = self.scores(s.mode, s.grouping)
        if s.groups:
            rows = rows[rows["group"].astype(str).isin([*s.groups, self.reference])]
        return Shape(score_shape(rows), self.label_mass)

    @cached_property
    def audited(self) -> pd.DataFrame:
        """What the audit looks at, as the store holds it: the distinct (model, fingerprint, subtask) of the task's
        scores in the selection's mode, of its models (every subtask; no unreliable pairwise model left out). An
        AuditError names a chosen model or subtask without such scores."""
        s, scores = self.selection, self.tables.scores
        self.resolved  # the task, its mode's scores and the reference checked first
        self._known(s.mode)
        keep = (scores["task"] == s.task) & (scores["mode"] == s.mode)
        if s.models:
            keep &= scores["model"].astype(str).isin(s.models)
        return scores.loc[keep, ["model", "fingerprint", "subtask"]].drop_duplicates(ignore_index=True)

    @cached_property
    def diagnostics(self) -> Diagnostics:
        """How well the audited models answered: :attr:`label_mass` and, in a pairwise mode, the shares of their
        answers irregular, tied and flipped with the order (:mod:`audit.engine.diagnostics`)."""
        s, tables = self.selection, self.tables
        models = sorted(set(self.audited["model"].astype(str)))
        return Diagnostics(self.label_mass, answer_shares(tables.answers, tables.pairs, s.task, s.mode, models))

    def read_ahead(self, threshold: float = FOUR_FIFTHS, k: int | None = None) -> None:
        """Start reading :meth:`records` of these arguments from the store file on a thread of its own, so the
        numbers computed meanwhile do not wait for it."""
        self._records(threshold, k)

    def records(self, threshold: float = FOUR_FIFTHS, k: int | None = None) -> Records:
        """What the store file says of the audited systems beyond their scores (:class:`audit.engine.records.Records`:
        systems, prompts, the data hash over the selected subtasks, the task's audit trail and its monitoring at
        ``threshold``, quota ``k`` (None: the design's), the selection's family and confidence level) as the store
        file stood when they were first asked; an AuditError for tables not read from a store."""
        return self._records(threshold, k).result()

    @memoised
    def _records(self, threshold: float, k: int | None) -> Future[Records]:
        s, audited = self.selection, self.audited
        if self.tables.source is None:
            raise AuditError("the systems' records are read from a result store; these scores come from a file")
        subtasks = {t for t in audited["subtask"].astype(str) if not s.subtasks or t in s.subtasks}
        watch = MonitorSettings(k=k, threshold=threshold, alpha=1 - (s.ci or 0.95), family=s.family)
        return read_records(self.tables.source, s.task, s.mode, audited, subtasks, watch)

    @cached_property
    def positions(self) -> PositionAudit | None:
        """Position bias of the task's ranked pools (imported rankings and listwise runs) at the selection's
        confidence level (0.95 without one), or None when the task holds none."""
        return task_positions(self.tables.ranked, self.selection.task, self.selection.ci or 0.95)

    @memoised
    def impact(self, ks: tuple[int, ...], groupings: tuple[str, ...] = ()) -> pd.DataFrame:
        """Impact ratios at quotas ``ks`` under each of ``groupings`` (default: every declared one whose pools exceed
        the largest k: at k = pool size every ratio is 1 by construction), from the regrouped scores alone."""
        sizes = self.pool_sizes
        self.check_quota(ks, groupings or None)
        frames = [self._impact(grouping, ks) for grouping in groupings or self.design.groupings
                  if groupings or max(ks) < sizes[grouping]]
        return pd.concat(frames, ignore_index=True)

    @memoised
    def _impact(self, grouping: str, ks: tuple[int, ...]) -> pd.DataFrame:
        s = self.selection
        return impact_ratios(self.scores(s.mode, grouping), ks=ks, pool=self.pool, grouping=grouping, ci=s.ci,
                             n_boot=s.n_boot, seed=s.seed, keys=self.keys(s.mode, grouping))

    @memoised
    def verdicts(self, ks: tuple[int, ...], groupings: tuple[str, ...] = (), threshold: float = FOUR_FIFTHS,
                 excluded: tuple[tuple[str, str], ...] = ()) -> pd.DataFrame:
        """Verdict rows (:data:`audit.engine.verdict.COLUMNS`) of the pointwise scores plus ``name`` (the category's
        display name) at quotas ``ks`` for ``groupings`` (default: each declared grouping at the quotas below its
        pool size). Every grouping is measured, then all are decided together, so the selection's multiple-testing
        ``family`` and ``rule`` hold across groupings and systems. ``excluded``: (grouping, category) pairs left out
        of the ratios and tests. Quota-free recorded systems (0/1 and score logs) are judged on their recorded
        decisions at every k."""
        self._known(Mode.POINTWISE)
        s, sizes = self.selection, self.sizes(Mode.POINTWISE)
        self.check_quota(ks, groupings or None, mode=Mode.POINTWISE)
        design = self.tables.design(s.task)
        pool = s.pool or str(pool_of(design, Mode.POINTWISE))
        chosen = ({g: list(ks) for g in groupings} if groupings else
                  {g: [k for k in ks if k < size] for g, size in sizes.items() if any(k < size for k in ks)})
        ci = s.ci or 0.95
        # the keys carry each grouping's categories: the scores, one table for every grouping, are not regrouped
        measured = [measure(self.scores(Mode.POINTWISE), grouping=grouping, k=quotas, pool=pool, ci=ci,
                            n_boot=s.n_boot, n_perm=s.n_perm or 1000, seed=s.seed,
                            keys=self.keys(Mode.POINTWISE, grouping), excluded=[c for g, c in excluded if g == grouping])
                    for grouping, quotas in chosen.items()]
        table = decide(pd.concat([m[0] for m in measured], ignore_index=True),
                       pd.concat([m[1] for m in measured], ignore_index=True), family=s.family,
                       threshold=threshold, ci=ci, rule=s.rule)
        cells = list(zip(table["category"].tolist(), table["grouping"].tolist()))
        names = {cell: design.display_name(*cell) for cell in set(cells)}  # a few categories, named once each
        return table.assign(name=[names[cell] for cell in cells])

    @memoised
    def ll144(self, k: int, exclude_small: str | None = None) -> pd.DataFrame:
        """The NYC LL144 bias-audit table (:data:`audit.metrics.ll144.COLUMNS` plus model, subtask and the
        category's ``name``) of the selection's recorded systems at quota ``k`` (rank outcomes; the others'
        recorded decisions), read off :meth:`verdicts` of those systems alone, so the two cannot disagree; empty
        when the task has none. ``exclude_small``: the auditor's justification for leaving categories under 2 %
        out of the ratios and tests."""
        s, outcomes = self.selection, self.tables.outcomes
        recorded = set(outcomes.loc[outcomes["task"] == s.task, "model"].astype(str)) if len(outcomes) else set()
        models = tuple(sorted(recorded & set(s.models))) if s.models else tuple(sorted(recorded))
        if not models:
            return pd.DataFrame()
        judged = set(s.models) if s.models else set(self.scores(Mode.POINTWISE)["model"].astype(str))
        audit = self if judged == set(models) else Audit(self.tables, replace(s, models=models))
        groupings = ll144_groupings(self.design)
        chosen = tuple(dict.fromkeys(groupings.values()))
        every = set(chosen) == set(self.design.groupings)  # then the verdicts a report or page already holds
        table = audit.verdicts((k,), (), FOUR_FIFTHS) if every else audit.verdicts((k,), chosen, FOUR_FIFTHS)
        excluded: tuple[tuple[str, str], ...] = ()
        if exclude_small is not None:
            excluded = tuple(sorted({(g, c) for g, c in zip(table["grouping"], table["category"].astype(str))
                                     if g in chosen and _small(table, g, c)}))
            table = audit.verdicts((k,), chosen, FOUR_FIFTHS, excluded) if excluded else table
        frames = [ll144_rows(part, groupings, exclude_small=exclude_small, excluded=excluded).assign(
                      model=model, subtask=subtask)
                  for (model, subtask), part in table.groupby(["model", "subtask"], sort=True, observed=True)]
        out = pd.concat(frames, ignore_index=True)
        names = [UNKNOWN if c == UNKNOWN else self.design.display_name(c, groupings[g])
                 for c, g in zip(out["category"], out["grouping"])]
        return out.assign(k=k, name=names)

    @cached_property
    def every_quota(self) -> pd.DataFrame:
        """The verdict rows at every quota k below some grouping's pool size: one computation a slider of k reads
        slices of."""
        return self.verdicts(tuple(range(1, max(self.sizes(Mode.POINTWISE).values()))))

    @memoised
    def verdicts_at(self, k: int) -> pd.DataFrame:
        """The rows of :attr:`every_quota` at quota ``k`` (a k below the largest pool: groupings whose pools are not
        above it have no rows)."""
        self.check_quota((k,), mode=Mode.POINTWISE)
        return self.every_quota[self.every_quota["k"] == k].reset_index(drop=True)

    def _known(self, mode: str) -> None:
        """An AuditError naming a chosen model or subtask with no ``mode`` scores for the task."""
        s, scores = self.selection, self.tables.scores
        rows = scores[(scores["task"] == s.task) & (scores["mode"] == mode)]
        for column, chosen in (("model", s.models), ("subtask", s.subtasks)):
            if not chosen:
                continue
            known = set(rows[column].astype(str).unique())
            missing = [c for c in chosen if c not in known]
            if missing:
                raise AuditError(f"{column} {missing[0]!r} has no {mode} scores for task {s.task!r}; {column}s are: "
                                 f"{', '.join(sorted(known))}")

    @memoised
    def comparison(self, a: str, b: str, ks: tuple[int, ...]) -> Comparison:
        """B against A under the selection's grouping, reference, pool design, subtasks, ci, n_boot and seed at
        quotas ``ks`` (flips at the smallest)."""
        s = self.selection
        if not ks:
            raise AuditError("a comparison needs at least one quota k")
        self.check_quota(ks, (self.grouping,))
        scores = self.scores(s.mode, self.grouping, True)
        options = {"a": a, "b": b, "pool": self.pool}
        gaps = compare_gaps(scores, reference=self.reference, ks=ks, ci=s.ci or 0.95, n_boot=s.n_boot, seed=s.seed,
                            outcomes=self.tables.outcomes, **options)
        return Comparison(self.grouping, self.reference, self.pool, gaps, selection_flips(scores, k=min(ks), **options),
                          rank_correlation(scores, **options))

    def _pilot(self, every_model: bool) -> pd.DataFrame:
        """The planner's pilot rows: the selection's pointwise scores in its grouping."""
        if is_pairwise(self.selection.mode):
            raise AuditError(f"the planner needs pointwise pilot scores; {self.selection.mode} scores are read in "
                             "the pools their run recorded, which cannot be resized")
        return self.scores(self.selection.mode, self.grouping, every_model)

    @memoised
    def plan_curves(self, model: str, subtask: str) -> pd.DataFrame:
        """The planner's half-widths at every quota with one (model, subtask) of the selection as pilot."""
        scores = self._pilot(True)
        pilot = scores[(scores["model"] == model) & (scores["subtask"] == subtask)]
        return plan_curves(pilot, reference=self.reference, pool=self.pool, level=self.selection.ci or 0.95)

    def plan_at(self, model: str, subtask: str, k: int, target: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(curve, summary) of the planner at quota ``k`` with one (model, subtask) as pilot, read off
        :meth:`plan_curves` (the page's slider moves k without a new pass)."""
        return plan_at(self.plan_curves(model, subtask), k=k, target=target)

    def plan(self, k: int, *, target: float, sizes: Sequence[int], n_boot: int,
             level: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(curve, summary) of the planner at quota ``k`` with every selected (model, subtask) as pilot."""
        self.check_quota((k,), (self.grouping,))
        return plan(self._pilot(False), reference=self.reference, k=k, target=target,
                    pool=self.pool, sizes=sizes, n_boot=n_boot, level=level, seed=self.selection.seed)


def _small(table: pd.DataFrame, grouping: str, category: str) -> bool:
    """Whether ``category`` holds under :data:`audit.metrics.ll144.SMALL_SHARE` of the known candidates of
    ``grouping`` in each system of the verdict rows ``table`` where it appears."""
    part = table[(table["grouping"] == grouping) & known_categories(table["category"].astype(str))]
    share = part["candidates"] / part.groupby(["model", "subtask"], observed=True)["candidates"].transform("sum")
    return bool((share[part["category"].astype(str) == category] < SMALL_SHARE).all())


def _selected(table: pd.DataFrame, selection: Selection) -> pd.DataFrame:
    """The rows of the selected models, subtasks and groups at the selection's ks, or at every k up to the smallest
    selected pool."""
    keep = pd.Series(True, index=table.index)
    for column, chosen in (("model", selection.models), ("subtask", selection.subtasks),
                           ("group", selection.groups)):
        if chosen:
            keep &= table[column].astype(str).isin(chosen)
    out = table[keep]
    if out.empty:
        return out.reset_index(drop=True)
    if selection.ks:  # checked by :meth:`Audit.check_quota`
        return out[out["k"].isin(selection.ks)].reset_index(drop=True)
    largest = int(out.groupby(["model", "subtask"], observed=True)["k"].max().min())
    return out[out["k"] <= largest].reset_index(drop=True)
