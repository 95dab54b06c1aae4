"""The metric pass of one task under its stored design (per mode and grouping; read by
:attr:`audit.engine.audit.Audit.rows`) and group codes coarsened to a grouping."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from audit.design import AuditDesign, PoolDesign, PoolKind, regroup_code
from audit.engine.tables import StoreTables
from audit.errors import AuditError
from audit.metrics import MetricSuite
from audit.metrics.pairwise import drop_unreliable
from audit.metrics.schema import is_pairwise

#: the pool design of pairwise scores: relative to the pools they were recorded in
OBSERVED = PoolDesign(PoolKind.OBSERVED)


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
