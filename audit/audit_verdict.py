"""The audit's verdict for one selection of a result store: every declared grouping of the task judged at quota k by
:func:`audit.metrics.verdict.verdicts`, with the design's display names (the one call the Overview, the Allocation
page, the report and ``python -m audit verdict`` share)."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from audit.errors import AuditError
from audit.metrics.impact import FOUR_FIFTHS
from audit.metrics.pools import pool_size
from audit.metrics.keys import split_keys
from audit.design import PoolDesign
from audit.metrics.verdict import decide, measure
from audit.selection import Selection
from audit.views import StoreTables, pool_of, regroup


def selected_scores(tables: StoreTables, selection: Selection) -> pd.DataFrame:
    """The selection's pointwise score rows (its models and subtasks; all when none chosen)."""
    scores = tables.scores
    keep = (scores["task"] == selection.task) & (scores["mode"] == "pointwise")
    for column, chosen in (("model", selection.models), ("subtask", selection.subtasks)):
        if chosen:
            keep &= scores[column].astype(str).isin(chosen)
    rows = scores[keep].drop(columns=["label_mass", "fingerprint"], errors="ignore")
    if rows.empty:
        raise AuditError(f"task {selection.task!r} has no pointwise scores for this selection")
    return rows


def pool_sizes(tables: StoreTables, selection: Selection) -> dict[str, int]:
    """Each declared grouping's smallest pool size over the selection (a valid quota k lies in 1 … size − 1)."""
    design = tables.design(selection.task)
    pool = PoolDesign.parse(selection.pool or str(pool_of(design, "pointwise")))
    rows = selected_scores(tables, selection)
    sizes = {}
    for grouping in design.groupings:
        coarse = regroup(rows, design.part(grouping))
        sizes[grouping] = min(pool_size(pool, d) for d in split_keys(coarse, reference=str(coarse["group"].iloc[0])))
    return sizes


def refuse_full_pools(k: int, sizes: dict[str, int], groupings: Sequence[str] | None = None) -> None:
    """An AuditError naming the pool size when quota ``k`` is not below the pool size of a named grouping, or of
    every grouping when none is named (at k = pool size everyone is selected: nothing to measure)."""
    named = {g: sizes[g] for g in groupings or () if g in sizes}
    full = {g: s for g, s in (named or sizes).items() if k >= s}
    refused = bool(full) if named else len(full) == len(sizes)
    if refused:
        listed = ", ".join(f"{g}: {s}" for g, s in full.items())
        raise AuditError(f"quota k={k} is not below the pool size ({listed}): at k = pool size everyone is "
                         "selected; choose a smaller k")


def verdict_table(tables: StoreTables, selection: Selection, *, k: "int | Iterable[int]", groupings: Sequence[str] = (),
                  threshold: float = FOUR_FIFTHS,
                  sizes: dict[str, int] | None = None) -> pd.DataFrame:
    """Verdict rows (see :data:`audit.metrics.verdict.COLUMNS`) plus ``name`` (the category's display name) at quota
    ``k``, or at each of several (one computation serves them all), for ``groupings`` (default: each declared grouping
    at the quotas below its pool size; an AuditError naming the pool sizes when no grouping has one, or when a named
    grouping's pool size is not above a quota); ``sizes``: the :func:`pool_sizes` of the selection, when known.

    Every grouping is measured, then all are decided together, so the selection's multiple-testing ``family``
    (grouping, system or audit) and ``rule`` (practice or strict) hold across groupings and systems."""
    design = tables.design(selection.task)
    pool = selection.pool or str(pool_of(design, "pointwise"))
    sizes = sizes or pool_sizes(tables, selection)
    quotas = sorted({int(q) for q in ([k] if isinstance(k, int) else k)})
    chosen = ({g: quotas for g in groupings} if groupings else
              {g: [q for q in quotas if q < size] for g, size in sizes.items() if any(q < size for q in quotas)})
    if not chosen:
        listed = ", ".join(f"{g}: {s}" for g, s in sizes.items())
        raise AuditError(f"quota k={', '.join(map(str, quotas))} is not below any grouping's pool size ({listed}); "
                         "choose a smaller k")
    rows = selected_scores(tables, selection)
    ci = selection.ci or 0.95
    measured = [measure(regroup(rows, design.part(grouping)), grouping=grouping, k=ks, pool=pool, ci=ci,
                        n_boot=selection.n_boot, n_perm=selection.n_perm or 1000, seed=selection.seed)
                for grouping, ks in chosen.items()]
    table = decide(pd.concat([m[0] for m in measured], ignore_index=True),
                   pd.concat([m[1] for m in measured], ignore_index=True), family=selection.family,
                   threshold=threshold, ci=ci, rule=selection.rule)
    return table.assign(name=[design.display_name(c, g) for c, g in zip(table["category"], table["grouping"])])


def every_quota(tables: StoreTables, selection: Selection) -> tuple[pd.DataFrame, dict[str, int]]:
    """(the verdict rows at every quota k below some grouping's pool size, each grouping's pool size): one
    computation a slider of k reads slices of."""
    sizes = pool_sizes(tables, selection)
    return verdict_table(tables, selection, k=range(1, max(sizes.values())), sizes=sizes), sizes
