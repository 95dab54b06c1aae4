"""Percentile bootstrap intervals for RABBI and the allocation gaps, vectorised over replicates.

A replicate resamples, with replacement, the candidates of every group separately (group sizes kept): each group's
multiset of (score, qualified) cells is redrawn as one multinomial count vector, so no candidate list is ever
materialised. RABBI is then a weighted count on the grid of distinct scores and the gaps reuse the exact pool
computation with the resampled counts. For the ``observed`` design, whose scores are relative to their pool, the
recorded pools are resampled instead. The interval is the (1 ± level)/2 quantiles of the replicates (NaN-aware).
Replicates are drawn in fixed blocks seeded by (seed, key, block), so results do not depend on memory chunking.
"""
from __future__ import annotations

import zlib

import numpy as np

from audit.design import PoolDesign
from audit.metrics.allocation import selection_shares
from audit.metrics.keys import KeyData
from audit.metrics.pools import pool_size, rank_laws

BLOCK = 25
_CELLS_PER_CHUNK = 4_000_000


def resampled_counts(data: KeyData, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(counts, qualified counts), each (n, groups, distinct scores): n resamples of every group's candidates."""
    counts = np.zeros((n, len(data.groups), data.values.size))
    qualified = np.zeros_like(counts)
    for g in range(len(data.groups)):
        mask = data.group == g
        cells, sizes = np.unique(data.value[mask] * 2 + data.qualified[mask], return_counts=True)
        draws = rng.multinomial(mask.sum(), sizes / mask.sum(), size=n)
        value, is_qualified = cells // 2, (cells % 2).astype(bool)
        counts[:, g, value[~is_qualified]] = draws[:, ~is_qualified]
        qualified[:, g, value[is_qualified]] = draws[:, is_qualified]
    return counts + qualified, qualified


def weighted_rabbi(counts: np.ndarray, ref: int) -> np.ndarray:
    """(batch, groups) RABBI of every group against ``ref`` from grid counts (batch, groups, distinct scores):
    Σ_d c_A(d)·(#B below d − #B above d) / (n_A·n_B)."""
    ref_counts = counts[:, ref]
    below = np.cumsum(ref_counts, axis=1) - ref_counts
    above = ref_counts.sum(axis=1, keepdims=True) - below - ref_counts
    net = np.einsum("bgd,bd->bg", counts, below - above)
    with np.errstate(invalid="ignore", divide="ignore"):
        return net / (counts.sum(axis=2) * ref_counts.sum(axis=1, keepdims=True))


def intervals(data: KeyData, design: PoolDesign, *, level: float, n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """Bounds ``{name}_lo``/``{name}_hi`` for rabbi, rabbi_qualified (groups,) and dp_gap, eo_gap (groups, L)."""
    key_seed = zlib.crc32("\x1f".join(data.key).encode())
    size = pool_size(design, data)
    parts: dict[str, list[np.ndarray]] = {"rabbi": [], "rabbi_qualified": [], "phi": [], "psi": []}
    for block in range(0, n_boot, BLOCK):
        rng = np.random.default_rng([seed, key_seed, block])
        n = min(BLOCK, n_boot - block)
        counts, qualified = resampled_counts(data, rng, n)
        parts["rabbi"].append(weighted_rabbi(counts, data.ref))
        parts["rabbi_qualified"].append(weighted_rabbi(qualified, data.ref))
        if design.kind == "observed":
            pools = np.unique(data.pool).size
            laws = [rank_laws(data, design, pool_weights=rng.multinomial(pools, np.full(pools, 1 / pools), size=n))]
        else:
            step = max(1, _CELLS_PER_CHUNK // (size * size * data.values.size))
            laws = [rank_laws(data, design, counts=counts[i:i + step], qualified_counts=qualified[i:i + step])
                    for i in range(0, n, step)]
        parts["phi"] += [selection_shares(law) for law, _ in laws]
        parts["psi"] += [selection_shares(law) for _, law in laws]
    draws = {name: np.concatenate(chunks) for name, chunks in parts.items()}
    phi, psi = draws.pop("phi"), draws.pop("psi")
    draws["dp_gap"], draws["eo_gap"] = phi - phi[:, [data.ref]], psi - psi[:, [data.ref]]
    bounds = {}
    for name, values in draws.items():
        bounds[f"{name}_lo"], bounds[f"{name}_hi"] = np.nanquantile(values, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return bounds
