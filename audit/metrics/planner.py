"""Audit planner: how wide is the CI of ΔDP at quota k with n candidates per group, and which n reaches a target.

From a pilot run's scores, each group's pilot candidates stand in for its score law: a planned audit with n candidates
per group is simulated by drawing n per group with replacement from the pilot (``n_boot`` times, as grid counts), and
the exact engine (:func:`audit.metrics.pools.rank_laws`) gives ΔDP at k for every draw. The CI half-width at n is half
the spread between the (1 ± level)/2 quantiles of those gaps — the percentile-bootstrap interval an audit of that
size would report — so no normal rule of thumb is involved. The number needed for a target half-width is the first
size on the grid whose widest group reaches it, refined between grid points (or beyond the grid) by the 1/√n law.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from audit.errors import AuditError
from audit.metrics.allocation import check_quotas, selection_shares
from audit.metrics.bootstrap import percentiles, resampled_counts
from audit.metrics.inference import key_seed
from audit.metrics.keys import KeyData, split_keys
from audit.metrics.pools import PoolDesign, rank_laws
from audit.metrics.schema import KEY, is_pairwise, key_label

SIZES = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
_CELLS_PER_CHUNK = 4_000_000


def half_widths(data: KeyData, design: PoolDesign, *, k: int, sizes: Sequence[int], n_boot: int, level: float,
                seed: int) -> np.ndarray:
    """(sizes, groups): the CI half-width of ΔDP(group, reference, k) with each number of candidates per group."""
    pool = design.pool_size(data)
    step = max(1, _CELLS_PER_CHUNK // (pool * pool * data.values.size))
    out = np.full((len(sizes), len(data.groups)), np.nan)
    for i, n in enumerate(sizes):
        if design.kind == "random" and design.size > n * len(data.groups):
            continue
        counts, qualified = resampled_counts(data, np.random.default_rng([seed, key_seed(data), n]), n_boot, size=n)
        phi = np.concatenate([selection_shares(rank_laws(data, design, counts=counts[j:j + step],
                                                         qualified_counts=qualified[j:j + step])[0])[:, :, k - 1]
                              for j in range(0, n_boot, step)])
        low, high = percentiles(phi - phi[:, [data.ref]], level)
        out[i] = (high - low) / 2
    out[:, data.ref] = np.nan
    return out


def needed(sizes: Sequence[int], width: np.ndarray, target: float) -> tuple[int, bool]:
    """(candidates per group, extrapolated): the smallest n whose half-width reaches ``target``, by the 1/√n law
    from the last grid size still too wide (beyond the grid when none reaches it: ``extrapolated``)."""
    sizes, width = np.asarray(sizes), np.asarray(width, dtype=float)
    reached = np.flatnonzero(width <= target)
    if reached.size and reached[0] == 0:
        return int(sizes[0]), False
    last = reached[0] - 1 if reached.size else int(np.flatnonzero(np.isfinite(width))[-1])
    n = int(np.ceil(sizes[last] * (width[last] / target) ** 2))
    return (min(n, int(sizes[reached[0]])), False) if reached.size else (n, True)


def plan(scores: pd.DataFrame, *, reference: str, k: int, target: float = 0.05, pool: "str | PoolDesign" = "per-group",
         sizes: Sequence[int] = SIZES, n_boot: int = 200, level: float = 0.95,
         seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(curve, summary) per (model, subtask, mode) of the pilot ``scores``.

    ``curve``: model, subtask, mode, group, n, half_width — the CI half-width of ΔDP at ``k`` with n candidates per
    group. ``summary``: model, subtask, mode, k, target, pilot_n (smallest pilot group), pilot_half_width (widest
    group at the pilot's size), needed_n (candidates per group for the widest group to reach ``target``),
    extrapolated (needed_n lies beyond the grid).
    """
    design = PoolDesign.parse(pool)
    if design.kind == "observed":
        raise AuditError("the planner needs a per-group or random:N pool design; observed pools cannot be resized")
    if not 0 < target < 1:
        raise AuditError(f"target half-width {target} must lie strictly between 0 and 1")
    if not 0 < level < 1:
        raise AuditError(f"confidence level {level} must lie strictly between 0 and 1")
    if n_boot < 10:
        raise AuditError(f"bootstrap replicates {n_boot} must be at least 10")
    sizes = sorted({int(n) for n in sizes})
    if not sizes or sizes[0] < 1:
        raise AuditError("candidate counts per group must be at least 1")
    curves, rows = [], []
    for data in split_keys(scores, reference=reference):
        if is_pairwise(data.key[2]):
            raise AuditError(f"the planner needs pointwise pilot scores; {key_label(data.key)} is scored pairwise "
                             "(its scores are relative to their pool)")
        check_quotas(k, design.pool_size(data), data, design)
        pilot = int(np.bincount(data.group).min())
        grid = sorted({*sizes, pilot})
        width = half_widths(data, design, k=k, sizes=grid, n_boot=n_boot, level=level, seed=seed)
        widest = np.nanmax(width, axis=1)
        groups = np.asarray(data.groups)
        others = np.arange(len(groups)) != data.ref
        curves.append(pd.DataFrame({"group": np.tile(groups[others], len(grid)),
                                    "n": np.repeat(grid, others.sum()), "half_width": width[:, others].ravel()})
                      .assign(**dict(zip(KEY, data.key))))
        n, beyond = needed(grid, widest, target)
        rows.append((*data.key, k, target, pilot, float(widest[grid.index(pilot)]), n, beyond))
    curve = pd.concat(curves, ignore_index=True)[[*KEY, "group", "n", "half_width"]]
    summary = pd.DataFrame(rows, columns=[*KEY, "k", "target", "pilot_n", "pilot_half_width", "needed_n",
                                          "extrapolated"])
    return curve, summary
