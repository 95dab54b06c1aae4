"""The metric table: bias metrics and allocation gaps per (model, subtask, mode, group, k), with a fast path for k.

Everything that does not depend on the quota (bias metrics, the laws of pool positions, and hence the gaps and their
bootstrap bounds for every k up to the pool size) is computed once when a :class:`MetricEngine` is built;
``engine.table(ks)`` then only selects rows, so a quota slider costs well under a millisecond per move.
"""
from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from audit.errors import AuditError
from audit.metrics.allocation import check_quotas, gap_rows, shares
from audit.metrics.bias_table import BIAS_COLUMNS, key_bias, with_pair_deltas
from audit.metrics.bootstrap import intervals
from audit.metrics.keys import KeyData, split_keys
from audit.design import PoolDesign
from audit.metrics.pools import pool_size
from audit.metrics.schema import KEY

COLUMNS = (*KEY, "group", "k", *BIAS_COLUMNS, "dp_gap", "eo_gap")
CI_COLUMNS = tuple(f"{name}_{end}" for name in ("rabbi", "rabbi_qualified", "dp_gap", "eo_gap")
                   for end in ("lo", "hi"))


class MetricEngine:
    """Precomputed metrics of one score table; :meth:`table` returns the rows for any quotas.

    ``pool``: ``per-group`` | ``random:N`` | ``observed``. ``pairs``: pair outcomes for pairwise δ (NaN without).
    ``ci``: confidence level (e.g. 0.95) for percentile bootstrap bounds on RABBI and the gaps, from ``n_boot``
    replicates seeded by ``seed``. ``bins``: JSD binning (see :func:`audit.metrics.bias.histograms`).
    ``pool_sizes`` maps each (model, subtask, mode) to its pool size, the largest valid k.
    """

    def __init__(self, scores: pd.DataFrame, *, reference: str, pool: "str | PoolDesign" = "per-group",
                 pairs: pd.DataFrame | None = None, ci: float | None = None, n_boot: int = 1000, seed: int = 0,
                 bins: int = 20) -> None:
        if ci is not None and not 0 < ci < 1:
            raise AuditError(f"confidence level {ci} must lie strictly between 0 and 1")
        if n_boot < 1:
            raise AuditError(f"bootstrap replicates {n_boot} must be at least 1")
        self.design = PoolDesign.parse(pool)
        self.keys = split_keys(scores, reference=reference)
        self.pool_sizes = {d.key: pool_size(self.design, d) for d in self.keys}
        bias = pd.concat([key_bias(d, bins=bins) for d in self.keys], ignore_index=True)
        bias = with_pair_deltas(bias, self.keys, pairs, reference=reference)
        gaps = pd.concat([self._gaps(d, ci, n_boot, seed) for d in self.keys], ignore_index=True)
        columns = list(COLUMNS) + (list(CI_COLUMNS) if ci is not None else [])
        self._rows = gaps.merge(bias, on=[*KEY, "group"], how="left")[columns]

    def _gaps(self, data: KeyData, ci: float | None, n_boot: int, seed: int) -> pd.DataFrame:
        rows = gap_rows(data, *shares(data, self.design))
        if ci is not None:
            bounds = intervals(data, self.design, level=ci, n_boot=n_boot, seed=seed)
            others = [g for g in range(len(data.groups)) if g != data.ref]
            size = self.pool_sizes[data.key]
            for name, values in bounds.items():
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
                 n_boot: int = 1000, seed: int = 0, bins: int = 20) -> pd.DataFrame:
    """One row per (model, subtask, mode, group ≠ reference, k) with δ, JSD, EMD, RABBI and its p-value, qualified δ
    and RABBI, ΔDP and ΔEO (+ ``*_lo``/``*_hi`` bounds when ``ci`` is set). For repeated calls with other quotas build
    a :class:`MetricEngine` once and call ``engine.table(ks)``."""
    return MetricEngine(scores, reference=reference, pool=pool, pairs=pairs, ci=ci, n_boot=n_boot, seed=seed,
                        bins=bins).table(ks)
