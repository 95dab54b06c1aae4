"""Audit planner: how wide is the CI of ΔDP at quota k with n candidates per group, and which n reaches a target.

From a pilot run's scores, each group's pilot candidates stand in for its score law: a planned audit with n candidates
per group is simulated by drawing n per group with replacement from the pilot (``n_boot`` times, as grid counts), and
the exact rank laws (:func:`audit.metrics.pools.rank_laws`) give ΔDP at k for every draw. The CI half-width at n is half
the spread between the (1 ± level)/2 quantiles of those gaps — the percentile-bootstrap interval an audit of that
size would report — so no normal rule of thumb is involved. The number needed for a target half-width is the first
size on the grid whose widest group reaches it, refined between grid points (or beyond the grid) by the 1/√n law.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from audit.errors import AuditError
from audit.metrics.allocation import selection_shares
from audit.metrics.bootstrap import percentiles, resampled_counts
from audit.metrics.inference import key_seed
from audit.metrics.keys import KeyData, split_keys
from audit.design import PoolDesign, PoolKind
from audit.metrics.pools import pool_size, rank_laws
from audit.metrics.quota import check_quota
from audit.metrics.schema import KEY, is_pairwise, key_label

SIZES = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
_CELLS_PER_CHUNK = 4_000_000


def half_widths(data: KeyData, design: PoolDesign, *, sizes: Sequence[int], n_boot: int, level: float,
                seed: int) -> np.ndarray:
    """(sizes, groups, L): the CI half-width of ΔDP(group, reference, k) for k = 1..L with each number of candidates
    per group (NaN for the reference, and for sizes too small for a random:N pool)."""
    out = np.full((len(sizes), len(data.groups), pool_size(design, data)), np.nan)
    for i, phi in enumerate(planned_shares(data, design, sizes=sizes, n_boot=n_boot, seed=seed)):
        out[i] = gap_half_widths(phi, data.ref, level)
    out[:, data.ref] = np.nan
    return out


def planned_shares(data: KeyData, design: PoolDesign, *, sizes: Sequence[int], n_boot: int,
                   seed: int) -> list[np.ndarray | None]:
    """Per size: φ (n_boot, groups, L) of audits with that many candidates per group drawn from the pilot (None
    where a random:N pool does not fit); whatever the reference, its gaps are differences of these."""
    pool = pool_size(design, data)
    step = max(1, _CELLS_PER_CHUNK // (pool * pool * data.values.size))
    out: list[np.ndarray | None] = []
    for n in sizes:
        if design.kind == PoolKind.RANDOM and design.size > n * len(data.groups):
            out.append(None)
            continue
        counts, qualified = resampled_counts(data, np.random.default_rng([seed, key_seed(data), n]), n_boot, size=n)
        out.append(np.concatenate([selection_shares(rank_laws(data, design, counts=counts[j:j + step],
                                                              qualified_counts=qualified[j:j + step])[0])
                                   for j in range(0, n_boot, step)]))
    return out


def gap_half_widths(phi: np.ndarray | None, reference: int, level: float) -> np.ndarray | float:
    """(groups, L): half the width of the ``level`` percentile interval of each group's ΔDP against ``reference``
    over the draws φ (n_boot, groups, L); NaN without draws."""
    if phi is None:
        return np.nan
    low, high = percentiles(phi - phi[:, [reference]], level)
    return (high - low) / 2


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


def _check(pool: "str | PoolDesign", target: float | None, level: float, n_boot: int,
           sizes: Sequence[int]) -> tuple[PoolDesign, list[int]]:
    design = PoolDesign.parse(pool)
    if design.kind == PoolKind.OBSERVED:
        raise AuditError("the planner needs a per-group or random:N pool design; observed pools cannot be resized")
    if target is not None and not 0 < target < 1:
        raise AuditError(f"target half-width {target} must lie strictly between 0 and 1")
    if not 0 < level < 1:
        raise AuditError(f"confidence level {level} must lie strictly between 0 and 1")
    if n_boot < 10:
        raise AuditError(f"bootstrap replicates {n_boot} must be at least 10")
    grid = sorted({int(n) for n in sizes})
    if not grid or grid[0] < 1:
        raise AuditError("candidate counts per group must be at least 1")
    return design, grid


def plan_curves(scores: pd.DataFrame, *, reference: str, pool: "str | PoolDesign" = "per-group",
                sizes: Sequence[int] = SIZES, n_boot: int = 200, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Half-widths for every quota at once: model, subtask, mode, group, k, n, half_width, pilot_n (the smallest
    pilot group, always on the grid) — one run of the rank laws per size serves every k."""
    design, sizes = _check(pool, None, level, n_boot, sizes)
    frames = []
    for data in split_keys(scores, reference=reference):
        if is_pairwise(data.key[-1]):
            raise AuditError(f"the planner needs pointwise pilot scores; {key_label(data.key)} is scored pairwise "
                             "(its scores are relative to their pool)")
        pilot = int(np.bincount(data.group).min())
        grid = sorted({*sizes, pilot})
        width = half_widths(data, design, sizes=grid, n_boot=n_boot, level=level, seed=seed)
        n, group, k = np.indices(width.shape)
        keep = group != data.ref
        frames.append(pd.DataFrame({"group": np.asarray(data.groups)[group[keep]], "k": k[keep] + 1,
                                    "n": np.asarray(grid)[n[keep]], "half_width": width[keep], "pilot_n": pilot})
                      .assign(**dict(zip(KEY, data.key))))
    return pd.concat(frames, ignore_index=True)[[*KEY, "group", "k", "n", "half_width", "pilot_n"]]


def plan_at(curves: pd.DataFrame, *, k: int, target: float = 0.05) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(curve, summary) at quota ``k`` from :func:`plan_curves` (see :func:`plan`)."""
    if not 0 < target < 1:
        raise AuditError(f"target half-width {target} must lie strictly between 0 and 1")
    rows = []
    for key, part in curves.groupby(list(KEY), sort=True, observed=True):
        check_quota(k, int(part["k"].max()), key_label(key))
        widest = part[part["k"] == k].groupby("n")["half_width"].max()
        pilot = int(part["pilot_n"].iloc[0])
        n, beyond = needed(widest.index, widest.to_numpy(), target)
        rows.append((*key, k, target, pilot, float(widest.loc[pilot]), n, beyond))
    summary = pd.DataFrame(rows, columns=[*KEY, "k", "target", "pilot_n", "pilot_half_width", "needed_n",
                                          "extrapolated"])
    curve = curves[curves["k"] == k].drop(columns=["k", "pilot_n"]).reset_index(drop=True)
    return curve, summary


def plan(scores: pd.DataFrame, *, reference: str, k: int, target: float = 0.05, pool: "str | PoolDesign" = "per-group",
         sizes: Sequence[int] = SIZES, n_boot: int = 200, level: float = 0.95,
         seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(curve, summary) per (model, subtask, mode) of the pilot ``scores``.

    ``curve``: model, subtask, mode, group, n, half_width — the CI half-width of ΔDP at ``k`` with n candidates per
    group. ``summary``: model, subtask, mode, k, target, pilot_n (smallest pilot group), pilot_half_width (widest
    group at the pilot's size), needed_n (candidates per group for the widest group to reach ``target``),
    extrapolated (needed_n lies beyond the grid).
    """
    _check(pool, target, level, n_boot, sizes)
    return plan_at(plan_curves(scores, reference=reference, pool=pool, sizes=sizes, n_boot=n_boot, level=level,
                               seed=seed), k=k, target=target)
