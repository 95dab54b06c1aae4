"""The metric table: bias metrics and allocation gaps per (model, subtask, mode, group, k), with a fast path for k.

Everything that does not depend on the quota (bias metrics, the laws of pool positions, and hence the gaps and their
bootstrap bounds for every k up to the pool size) is computed once when a :class:`MetricSuite` is built;
``suite.table(ks)`` then only selects rows, so a quota slider costs well under a millisecond per move.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from audit.errors import AuditError
from audit.metrics.allocation import check_quotas, gap_rows, shares
from audit.metrics.bias_table import BIAS_COLUMNS, key_bias, with_pair_deltas
from audit.metrics.bootstrap import bounds, replicates, row_draws
from audit.metrics.exact import gap_pvalues
from audit.metrics.inference import key_pvalues
from audit.metrics.keys import KeyData, split_keys, with_decisions
from audit.design import PoolDesign, PoolKind
from audit.metrics.pools import pool_size
from audit.metrics.presets import Preset, get_preset
from audit.metrics.schema import KEY

COLUMNS = (*KEY, "group", "k", *BIAS_COLUMNS, "dp_gap", "eo_gap")
CI_COLUMNS = tuple(f"{name}_{end}" for name in ("rabbi", "rabbi_qualified", "dp_gap", "eo_gap")
                   for end in ("lo", "hi"))
P_COLUMNS = ("dp_gap_p", "eo_gap_p")


class MetricSuite:
    """Precomputed metrics of one score table; :meth:`table` returns the rows for any quotas.

    ``pool``: ``per-group`` | ``random:N`` | ``observed``. ``pairs``: pair outcomes for pairwise δ (NaN without).
    ``ci``: confidence level (e.g. 0.95) for percentile bootstrap bounds on RABBI and the gaps, from ``n_boot``
    replicates seeded by ``seed``. ``n_perm``: permutations for the p-values ``dp_gap_p``/``eo_gap_p`` of "no gap"
    (see :mod:`audit.metrics.inference`). ``preset``: ``default`` or ``paper-exact`` estimators
    (:mod:`audit.metrics.presets`); ``bins`` overrides the preset's JSD bin count.
    ``keep_draws`` (with ``ci``): keep every replicate of every metric and gap as ``draws`` = (index, {column: (rows,
    n_boot)}), the input of :func:`audit.metrics.bands.validity_bands`, from the same replicates as the bounds (the
    JSD draws use the default estimator, so they are left NaN under ``paper-exact``).
    ``outcomes``: the store's recorded systems (:meth:`audit.store.database.Store.recorded_systems`), so a 0/1 or score log's
    gaps are those of its recorded decisions (:func:`audit.metrics.keys.with_decisions`).
    ``pool_sizes`` maps each (model, subtask, mode) to its pool size, the largest valid k.
    """

    def __init__(self, scores: pd.DataFrame, *, reference: str, pool: "str | PoolDesign" = "per-group",
                 pairs: pd.DataFrame | None = None, ci: float | None = None, n_boot: int = 1000, seed: int = 0,
                 preset: "str | Preset" = "default", bins: int | None = None, n_perm: int | None = None,
                 keep_draws: bool = False, outcomes: pd.DataFrame | None = None) -> None:
        if ci is not None and not 0 < ci < 1:
            raise AuditError(f"confidence level {ci} must lie strictly between 0 and 1")
        if n_boot < 1:
            raise AuditError(f"bootstrap replicates {n_boot} must be at least 1")
        if keep_draws and ci is None:
            raise AuditError("keeping bootstrap draws needs a confidence level (ci)")
        if n_perm is not None and n_perm < 1:
            raise AuditError(f"permutations {n_perm} must be at least 1")
        self.design = PoolDesign.parse(pool)
        self.keys = split_keys(scores, reference=reference)
        if outcomes is not None:  # quota-free recorded systems: their gaps are those of their recorded decisions
            self.keys = with_decisions(self.keys, outcomes)
        self.pool_sizes = {d.key: pool_size(self.design, d) for d in self.keys}
        bias = pd.concat([key_bias(d, preset=preset, bins=bins) for d in self.keys], ignore_index=True)
        bias = with_pair_deltas(bias, self.keys, pairs, reference=reference)
        self._preset = get_preset(preset)
        self._bins = (bins or self._preset.jsd_bins) if keep_draws else None
        self._draws: list[dict[str, np.ndarray]] = []
        gaps = pd.concat([self._gaps(d, ci, n_boot, seed, n_perm) for d in self.keys], ignore_index=True)
        columns = list(COLUMNS) + (list(CI_COLUMNS) if ci is not None else []) + (
            list(P_COLUMNS) if n_perm is not None else [])
        self._rows = gaps.merge(bias, on=[*KEY, "group"], how="left")[columns]
        self.draws = (self._rows[[*KEY, "group", "k"]], {name: np.concatenate([d[name] for d in self._draws])
                                                         for name in self._draws[0]}) if self._draws else None

    def _gaps(self, data: KeyData, ci: float | None, n_boot: int, seed: int, n_perm: int | None) -> pd.DataFrame:
        rows = gap_rows(data, *shares(data, self.design))
        extra = {}
        if ci is not None:
            draws = replicates(data, self.design, n_boot=n_boot, seed=seed, bins=self._bins,
                               paper_jsd=self._preset.paper_jsd)
            extra.update(bounds(draws, ci))
            if self._bins is not None:
                self._draws.append(row_draws(data, self.pool_sizes[data.key], draws))
        if n_perm is not None:  # recorded pools: the exact test stratified by pool; else label shuffles
            extra.update(gap_pvalues(data, self.design) if self.design.kind == PoolKind.OBSERVED else
                         key_pvalues(data, self.design, n_perm=n_perm, seed=seed))
        if extra:
            others = [g for g in range(len(data.groups)) if g != data.ref]
            size = self.pool_sizes[data.key]
            for name, values in extra.items():
                values = values[others]
                rows[name] = values.ravel() if values.ndim == 2 else values.repeat(size)
        return rows

    def table(self, ks: Iterable[int] | int) -> pd.DataFrame:
        """Rows for the quotas ``ks`` (an AuditError if one exceeds a key's pool size)."""
        for data in self.keys:
            quotas = check_quotas(ks, self.pool_sizes[data.key], data, self.design)
        return self._rows[self._rows["k"].isin(quotas)].reset_index(drop=True)


def metric_table(scores: pd.DataFrame, *, reference: str, ks: Iterable[int] | int,
                 pool: "str | PoolDesign" = "per-group", pairs: pd.DataFrame | None = None, ci: float | None = None,
                 n_boot: int = 1000, seed: int = 0, preset: "str | Preset" = "default",
                 bins: int | None = None, n_perm: int | None = None) -> pd.DataFrame:
    """One row per (model, subtask, mode, group ≠ reference, k) with δ, JSD, EMD, RABBI and its p-value, qualified δ,
    JSD, EMD and RABBI, ΔDP and ΔEO (+ ``*_lo``/``*_hi`` bounds when ``ci`` is set, permutation p-values ``*_p`` when
    ``n_perm`` is). For repeated calls with other quotas build a :class:`MetricSuite` once and call
    ``suite.table(ks)``."""
    return MetricSuite(scores, reference=reference, pool=pool, pairs=pairs, ci=ci, n_boot=n_boot, seed=seed,
                        preset=preset, bins=bins, n_perm=n_perm).table(ks)
