"""Percentile bootstrap intervals for RABBI and the allocation gaps, vectorised over replicates.

A replicate resamples, with replacement, the candidates of every group separately (group sizes kept): each group's
multiset of (score, qualified) cells is redrawn as one multinomial count vector, so no candidate list is ever
materialised. RABBI (and, for the validity bands, δ, JSD and EMD: :mod:`audit.metrics.weighted`) is then a
weighted count on the grid of distinct scores and the gaps reuse the exact pool computation with the resampled
counts. For the ``observed`` design, whose scores are relative to their pool, the
recorded pools are resampled instead, and the metrics of a replicate are computed on the candidates of its resampled
pools (so a bias metric and its gap move together, as the validity bands need). The interval is the (1 ± level)/2 quantiles of the replicates (NaN-aware).
Replicates are drawn in fixed blocks seeded by (seed, key, block), so results do not depend on memory chunking.
"""
from __future__ import annotations

import numpy as np

from audit.design import PoolDesign, PoolKind
from audit.enums import Mode
from audit.metrics.allocation import selection_shares
from audit.metrics.inference import key_seed
from audit.metrics.keys import KeyData
from audit.metrics.memo import ArrayCache
from audit.metrics.pools import pool_index, pool_size, rank_laws
from audit.metrics.weighted import weighted_delta, weighted_emd, weighted_jsd, weighted_rabbi

BLOCK = 25
_CELLS_PER_CHUNK = 4_000_000
_PER_ROUND = 50  # most replicates computed at once: larger batches fall out of the CPU cache and run slower
_weights = ArrayCache(64 * 2**20)  # recorded pools' bootstrap weights (see pool_weights)


def resampled_counts(data: KeyData, rng: np.random.Generator, n: int,
                     size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(counts, qualified counts), each (n, groups, distinct scores): n resamples of every group's candidates, each
    of the group's own size or of ``size`` candidates per group (a pilot grown or shrunk to that size)."""
    counts = np.zeros((n, len(data.groups), data.values.size))
    qualified = np.zeros_like(counts)
    for g, (cells, sizes) in enumerate(data.cells):
        draws = rng.multinomial(size or sizes.sum(), sizes / sizes.sum(), size=n)
        value, is_qualified = cells // 2, (cells % 2).astype(bool)
        counts[:, g, value[~is_qualified]] = draws[:, ~is_qualified]
        qualified[:, g, value[is_qualified]] = draws[:, is_qualified]
    return counts + qualified, qualified


def replicates(data: KeyData, design: PoolDesign, *, n_boot: int, seed: int, bins: int | None = None,
               paper_jsd: bool = False, shares: bool = False, bias: bool = True) -> dict[str, np.ndarray]:
    """Bootstrap draws against the reference: rabbi, rabbi_qualified (n_boot, groups) and dp_gap, eo_gap
    (n_boot, groups, L); with ``bins`` also delta, jsd, emd and their ``_qualified`` variants (n_boot, groups), δ
    NaN for pairwise keys (its pair outcomes are not resampled) and JSD NaN with ``paper_jsd`` (the paper code's
    estimator is not resampled); with ``shares`` also the selection shares φ, ψ
    themselves (n_boot, groups, L) as ``phi`` and ``psi``; with ``bias=False`` no RABBI (nor δ, JSD, EMD): for the
    ``observed`` design the resampled pools' candidate counts are then never formed."""
    size = pool_size(design, data)
    step = max(1, _CELLS_PER_CHUNK // (size * size * data.values.size))  # replicates per law computation (memory)
    span = BLOCK * max(1, min(step, _PER_ROUND) // BLOCK)  # replicates drawn at a time: whole blocks
    parts: dict[str, list[np.ndarray]] = {}
    for start in range(0, n_boot, span):
        drawn = [_drawn(data, design, n=min(BLOCK, n_boot - block), seed=seed, block=block, counted=bias)
                 for block in range(start, min(start + span, n_boot), BLOCK)]
        metrics = {}
        if bias or design.kind != PoolKind.OBSERVED:
            counts, qualified = (np.concatenate([part[i] for part in drawn]) for i in (0, 1))
        if bias:
            metrics = {"rabbi": weighted_rabbi(counts, data.ref), "rabbi_qualified": weighted_rabbi(qualified, data.ref)}
        if bias and bins is not None:
            metrics.update(_distribution_metrics(data, counts, qualified, bins, paper_jsd))
        if design.kind == PoolKind.OBSERVED:
            laws = [rank_laws(data, design, pool_weights=np.concatenate([weights for _, _, weights in drawn]))]
        else:
            laws = [rank_laws(data, design, counts=counts[i:i + step], qualified_counts=qualified[i:i + step])
                    for i in range(0, len(counts), step)]
        metrics["phi"] = np.concatenate([selection_shares(law) for law, _ in laws])
        metrics["psi"] = np.concatenate([selection_shares(law) for _, law in laws])
        for name, values in metrics.items():
            parts.setdefault(name, []).append(values)
    draws = {name: np.concatenate(chunks) for name, chunks in parts.items()}
    phi, psi = (draws["phi"], draws["psi"]) if shares else (draws.pop("phi"), draws.pop("psi"))
    draws["dp_gap"], draws["eo_gap"] = phi - phi[:, [data.ref]], psi - psi[:, [data.ref]]
    return draws


def _drawn(data: KeyData, design: PoolDesign, *, n: int, seed: int, block: int, counted: bool = True
           ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """(counts, qualified counts, pool weights for ``observed`` else None) of one block of n replicates, seeded by
    (seed, key, block) so results do not depend on chunking; for ``observed`` without ``counted`` the counts are
    None (only the pool weights are drawn)."""
    if design.kind != PoolKind.OBSERVED:
        return *resampled_counts(data, np.random.default_rng([seed, key_seed(data), block]), n), None
    weights = pool_weights(int(pool_index(data).max()) + 1, n=n, seed=seed, key=key_seed(data), block=block)
    return *(pool_counts(data, weights) if counted else (None, None)), weights


def pool_weights(pools: int, *, n: int, seed: int, key: int, block: int) -> np.ndarray:
    """(n, pools): how often each recorded pool is drawn in n replicates of the pools, seeded by (seed, key, block).

    The draws depend on nothing else, so they are kept (compactly) for the next pass over the same key: another
    grouping, the impact table after the metric table, the verdict's intervals."""
    return _kept_weights(pools, n=n, seed=seed, key=key, block=block).astype(np.int64)


def _kept_weights(pools: int, *, n: int, seed: int, key: int, block: int) -> np.ndarray:
    """:func:`pool_weights` in the smallest integer type, drawn once per process (read-only)."""
    def draw() -> np.ndarray:
        weights = uniform_counts(np.random.default_rng([seed, key, block]), pools, n)
        return weights.astype(np.min_scalar_type(int(weights.max())))

    return _weights.get(_weights_key(pools, n, seed, key, block), draw)


def _weights_key(pools: int, n: int, seed: int, key: int, block: int) -> tuple[int, ...]:
    """What a block's pool weights are kept under: everything they depend on."""
    return pools, n, seed, key, block


def uniform_counts(rng: np.random.Generator, items: int, n: int) -> np.ndarray:
    """(n, items): how often each of ``items`` is drawn in each of n resamples of ``items`` draws with replacement
    (each row multinomial with equal probabilities; drawn as indices and counted, many times faster than NumPy's
    multinomial, whose per-category loop dominated a recorded study's bootstrap)."""
    drawn = rng.integers(items, size=(n, items)) + items * np.arange(n)[:, None]
    return np.bincount(drawn.ravel(), minlength=n * items).reshape(n, items)


def pool_counts(data: KeyData, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(counts, qualified counts), each (n, groups, distinct scores), of the candidates of the recorded pools
    weighted by ``weights`` (n, pools): the metrics of a replicate then come from the very pools behind its gaps."""
    from scipy.sparse import csr_matrix, hstack  # imported on use: slow to import

    if "pool_cells" not in data.memo:  # per pool: its members' cells, all then qualified, side by side (sparse, kept
        cell = data.group * data.values.size + data.value  # transposed: 2·groups·values × pools; one product)
        shape = (weights.shape[1], len(data.groups) * data.values.size)
        data.memo["pool_cells"] = hstack(
            [csr_matrix((np.ones(int(mask.sum())), (pool_index(data)[mask], cell[mask])), shape=shape)
             for mask in (np.ones_like(data.qualified, dtype=bool), data.qualified.astype(bool))], format="csr").T
    product = data.memo["pool_cells"] @ weights.T  # (2·groups·values, n): all members' rows, then qualified ones
    half = product.shape[0] // 2
    return tuple(rows.T.reshape(len(weights), len(data.groups), data.values.size)  # views: the rows' own layout
                 for rows in (product[:half], product[half:]))


def pool_share_draws(data: KeyData, members: np.ndarray, selected: np.ndarray, *, n_boot: int,
                     seed: int) -> np.ndarray:
    """(n_boot, groups, quotas): bootstrap replicates of the selection shares of recorded pools from their per-pool
    counts, ``members`` (pools, groups) and expected ``selected`` (pools, groups, quotas): each replicate is the
    pools' counts weighted by its pool weights, the very draws of :func:`share_draws` (same seeded blocks), so the
    same shares as its rank laws up to float rounding. The weights of many blocks go into one matrix product (BLAS
    is many times slower on many short products)."""
    pools, groups = members.shape
    rows = np.concatenate([members[:, :, None], selected], axis=2).reshape(pools, -1).T.astype(float, order="C")
    out = np.empty((n_boot, groups, selected.shape[2]))
    span = BLOCK * max(1, _CELLS_PER_CHUNK // (BLOCK * pools))  # replicates per product: whole blocks
    for start in range(0, n_boot, span):
        weights = np.concatenate([pool_weights(pools, n=min(BLOCK, n_boot - block), seed=seed, key=key_seed(data),
                                               block=block) for block in range(start, min(start + span, n_boot),
                                                                               BLOCK)])
        sums = (rows @ weights.T.astype(float)).T.reshape(len(weights), groups, -1)  # counts first: faster in BLAS
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:start + len(weights)] = sums[:, :, 1:] / sums[:, :, :1]
    return out


def share_draws(data: KeyData, design: PoolDesign, *, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap replicates of (φ, ψ), each (n_boot, groups, L): the very draws behind the gaps' intervals."""
    draws = replicates(data, design, n_boot=n_boot, seed=seed, shares=True, bias=False)
    return draws["phi"], draws["psi"]


def _distribution_metrics(data: KeyData, counts: np.ndarray, qualified: np.ndarray, bins: int, paper_jsd: bool
                          ) -> dict[str, np.ndarray]:
    out = {}
    for suffix, grid in (("", counts), ("_qualified", qualified)):
        delta = weighted_delta(grid, data.ref, data.values)
        out[f"delta{suffix}"] = delta if data.key[-1] == Mode.POINTWISE else np.full_like(delta, np.nan)
        jsd = weighted_jsd(grid, data.ref, data.values, bins=bins)
        out[f"jsd{suffix}"] = np.full_like(jsd, np.nan) if paper_jsd else jsd
        out[f"emd{suffix}"] = weighted_emd(grid, data.ref, data.values)
    return out


def percentiles(values: np.ndarray, level: float) -> np.ndarray:
    """(2, …): the (1 ± level)/2 quantiles over the first axis, ignoring NaNs (the NaN-aware path only when needed:
    NumPy's is a slow per-column loop)."""
    quantile = np.nanquantile if np.isnan(values).any() else np.quantile
    return quantile(values, [(1 - level) / 2, (1 + level) / 2], axis=0)


def percentile_bounds(name: str, values: np.ndarray, level: float) -> list[tuple[str, np.ndarray]]:
    """[(``{name}_lo``, lower), (``{name}_hi``, upper)]: :func:`percentiles` of ``values`` by name."""
    low, high = percentiles(values, level)
    return [(f"{name}_lo", low), (f"{name}_hi", high)]


def bounds(draws: dict[str, np.ndarray], level: float) -> dict[str, np.ndarray]:
    """``{name}_lo``/``{name}_hi`` of rabbi, rabbi_qualified (groups,) and dp_gap, eo_gap (groups, L) from the draws
    of :func:`replicates`."""
    out = {}
    for name in ("rabbi", "rabbi_qualified", "dp_gap", "eo_gap"):
        out[f"{name}_lo"], out[f"{name}_hi"] = percentiles(draws[name], level)
    return out


def row_draws(data: KeyData, size: int, draws: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The draws of :func:`replicates` as (rows, replicates) per column, rows in the metric table's order of one key
    (every non-reference group, k = 1..size; metrics that do not depend on k repeated)."""
    others = [g for g in range(len(data.groups)) if g != data.ref]
    out = {}
    for name, values in draws.items():
        values = values[:, others]
        out[name] = (values.reshape(values.shape[0], -1) if values.ndim == 3 else values.repeat(size, axis=1)).T
    return out
