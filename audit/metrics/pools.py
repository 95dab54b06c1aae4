"""Pool designs and the exact law of a candidate's rank in a random pool.

Quota rule: the k best-scored pool members are selected and the members tied with the k-th score share the remaining
slots equally. If x has H members above it and T others tied with it, x is selected with chance
clip(k − H, 0, T + 1)/(T + 1) — exactly the chance that x's rank is ≤ k when ties are broken uniformly at random. So
each design reduces to R_X[j] = mean_{x∈X} P(rank of x = j + 1), ties broken at random, and then
φ(X, k) = R_X[0] + … + R_X[k − 1]. R is computed exactly:

- ``per-group`` (one uniform draw from every group): break ties by an independent uniform label v per candidate.
  Given x's label v, the other members rank above x independently, member of group h with chance
  q_h(v) = p_h + t_h·(1 − v) (p_h, t_h: shares of group h scoring above / equal to x), so #above is a
  Poisson-binomial, expanded one group at a time. Its law is a polynomial of degree ≤ m − 1 in v, so integrating
  v over [0, 1] with ⌈m/2⌉-point Gauss–Legendre quadrature is exact (up to float rounding); one point suffices
  when no score is shared across groups (no other member can tie with x, so the law does not depend on v).
- ``random:N`` (N drawn without replacement from the M candidates of the subtask): a of the other M − 1
  candidates above x, c − 1 tied and the rest below, (H, T) is multivariate hypergeometric, expanded one draw at a
  time, then spread uniformly over ranks H + 1 … H + T + 1.
- ``observed``: the pools recorded in the score table's ``pool`` column (pairwise scores are relative to their
  pool); H and T are read off each recorded pool.

Every routine takes a leading batch of reweightings (bootstrap replicates) and is vectorised over candidates.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from audit.design import PoolDesign, PoolKind
from audit.errors import AuditError
from audit.metrics.keys import KeyData
from audit.metrics.schema import key_label


def pool_size(design: PoolDesign, data: KeyData) -> int:
    """Candidates per pool of ``design`` for this key (the largest recorded pool for ``observed``)."""
    if design.kind == PoolKind.PER_GROUP:
        return len(data.groups)
    if design.kind == PoolKind.RANDOM:
        if design.size > data.score.size:
            raise AuditError(f"pool random:{design.size} is larger than the {data.score.size} candidates "
                             f"of {key_label(data.key)}")
        return design.size
    check_pools(data)
    if "largest_pool" not in data.memo:  # the most rows of one pool id (no pool index kept)
        low, high = int(data.pool.min()), int(data.pool.max())
        if high - low < 4 * data.pool.size:  # ids close together (a key's pools are coded together): counted
            largest = int(np.bincount(data.pool - low).max())
        else:  # the longest run of one id once sorted
            ordered = np.sort(data.pool)
            largest = int(np.diff(np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1], True])).max())
        data.memo["largest_pool"] = largest
    return data.memo["largest_pool"]


def pool_index(data: KeyData) -> np.ndarray:
    """Each row's recorded pool as 0 … pools − 1, in the order of the pool ids (computed once per key)."""
    check_pools(data)
    if "pool_index" not in data.memo:
        present = np.bincount(data.pool) > 0  # the inverse of np.unique without its sort: pool ids are codes
        data.memo["pool_index"] = (np.cumsum(present) - 1)[data.pool]
    return data.memo["pool_index"]


def check_pools(data: KeyData) -> None:
    """An AuditError when a row of ``data`` has no recorded pool (the ``observed`` design needs one on every row)."""
    if data.pool is None or (data.pool < 0).any():
        raise AuditError(f"pool design 'observed' needs a 'pool' id on every row; missing for {key_label(data.key)}")


def rank_laws(data: KeyData, design: PoolDesign, *, counts: np.ndarray | None = None,
              qualified_counts: np.ndarray | None = None,
              pool_weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(R, R') of shape (batch, groups, L): the rank law averaged over each group's candidates (R) and over its
    qualified candidates (R'); L is the pool size.

    ``counts``/``qualified_counts`` (batch, groups, distinct scores) reweight candidates (bootstrap) and default to
    the table's own counts. For ``observed``, ``pool_weights`` (batch, pools) reweights the recorded pools instead.
    """
    size = pool_size(design, data)
    if design.kind == PoolKind.OBSERVED:
        return _observed(data, pool_weights)
    counts = data.counts[None] if counts is None else counts
    qualified_counts = data.qualified_counts[None] if qualified_counts is None else qualified_counts
    if design.kind == PoolKind.PER_GROUP:
        groups, values = np.nonzero(data.counts)
        law = _per_group(counts, groups, values)
        starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        total = lambda w: np.add.reduceat(law * w[:, groups, values], starts, axis=2).transpose(1, 2, 0)
    else:
        support = np.flatnonzero(data.counts.sum(axis=0))
        law = _random(counts.sum(axis=1), support, size)
        total = lambda w: np.einsum("jbu,bgu->bgj", law, w[:, :, support])
    return _normalise(total(counts), counts), _normalise(total(qualified_counts), qualified_counts)


def _normalise(total: np.ndarray, weights: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / weights.sum(axis=2)[:, :, None]


def _per_group(counts: np.ndarray, unit_group: np.ndarray, unit_value: np.ndarray) -> np.ndarray:
    """(m, batch, units): rank law of a candidate of group ``unit_group`` scoring ``values[unit_value]``.

    ``unit_group`` is (units,) or (batch, units): a group per replicate, for shuffled group labels."""
    m, values = counts.shape[1:]
    cell = np.arange(counts.shape[0])[:, None] * m * values + unit_value  # flat index of (replicate, group 0, unit)
    size = counts.sum(axis=2, keepdims=True)
    above = ((size - np.cumsum(counts, axis=2)) / size).ravel()
    shared = ((counts > 0).sum(axis=1) > 1).any()  # without scores shared across groups the law is constant in v
    nodes, weights = _quadrature((m + 1) // 2 if shared else 1)
    if shared:
        tied, label = (counts / size).ravel(), (1 - nodes[:, None, None]) / 2
    law = np.zeros((m, nodes.size, counts.shape[0], unit_value.size))
    law[0] = 1  # law[j]: chance that j of the other groups' members drawn so far rank above the unit
    for step in range(m - 1):
        index = cell + (step + (step >= unit_group)) * values  # the next other group, skipping the unit's own
        chance = above.take(index)
        if shared:
            chance = chance + tied.take(index) * label
        moved = law[:step + 1] * chance
        law[:step + 1] -= moved
        law[1:step + 2] += moved
    return law[:, 0] if nodes.size == 1 else np.einsum("jqbu,q->jbu", law, weights / 2)


@lru_cache(maxsize=None)
def _quadrature(points: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on [−1, 1] (shared, never mutated)."""
    return np.polynomial.legendre.leggauss(points)


def _random(total: np.ndarray, unit_value: np.ndarray, size: int) -> np.ndarray:
    """(N, batch, units): rank law of a candidate scoring ``values[unit_value]`` in a pool drawn without replacement."""
    others = total.sum(axis=1, keepdims=True) - 1
    above = (others + 1 - np.cumsum(total, axis=1))[:, unit_value]
    tied = total[:, unit_value] - 1
    below = others - above - tied
    table = np.ones((1, 1) + above.shape)
    for drawn in range(size - 1):
        h = np.arange(drawn + 1)[:, None, None, None]
        t = np.arange(drawn + 1)[None, :, None, None]
        left = others - drawn
        grown = np.zeros((drawn + 2, drawn + 2) + above.shape)
        grown[:-1, :-1] = table * (below - (drawn - h - t)) / left
        grown[1:, :-1] += table * (above - h) / left
        grown[:-1, 1:] += table * (tied - t) / left
        table = grown
    j, h, t = np.ogrid[:size, :size, :size]
    spread = ((h <= j) & (j <= h + t)) / (t + 1.0)
    return np.einsum("jht,htbu->jbu", spread, table)


def candidate_laws(data: KeyData, design: PoolDesign, labels: np.ndarray) -> np.ndarray:
    """(L, batch or 1, rows): the rank law of every candidate (row of ``data``) when the group of row i is
    ``labels[b, i]`` (shuffled labels, group sizes kept). Only the per-group design depends on the labels."""
    size = pool_size(design, data)
    if design.kind == PoolKind.PER_GROUP:
        flat = (np.arange(labels.shape[0])[:, None] * len(data.groups) + labels) * data.values.size + data.value
        counts = np.bincount(flat.ravel(), minlength=labels.shape[0] * len(data.groups) * data.values.size)
        counts = counts.reshape(labels.shape[0], len(data.groups), data.values.size).astype(float)
        return _per_group(counts, labels, data.value)
    if design.kind == PoolKind.RANDOM:
        law = _random(data.counts.sum(axis=0)[None], np.arange(data.values.size), size)
        return law[:, :, data.value]
    _, first, ties, _ = _pool_ranks(data)
    j = np.arange(size)[:, None]
    return (((j >= first) & (j <= first + ties)) / (ties + 1.0))[:, None]


def _pool_ranks(data: KeyData) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(pool index, members above, others tied, largest pool size) of every row, for the ``observed`` design
    (computed once per key). A quota-free system's decisions (``data.decided``) are placed first (selected) or
    last of the largest pool, untied, so every quota below the pool size selects exactly the decided members."""
    if "pool_ranks" not in data.memo:
        pools = pool_index(data)
        size = int(np.bincount(pools).max())
        if data.decided is not None:
            first, ties = np.where(data.decided > 0, 0, size - 1), np.zeros(pools.size, dtype=int)
        else:  # rows by pool, then score descending: one stable sort of a combined integer (the score codes)
            order = np.argsort(pools * data.values.size + (data.values.size - 1 - data.value), kind="stable")
            first, ties = ranks_in_order(pools, data.score, order)
        data.memo["pool_ranks"] = pools, first, ties, size
    return data.memo["pool_ranks"]


def ranks_in_pools(pools: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(members above, others tied) of every row within its pool, higher scores first: one sort by pool, then score
    descending, where each run of equal scores starts after the members above it."""
    score, pools = np.asarray(score, dtype=float), np.asarray(pools)
    return ranks_in_order(pools, score, np.lexsort((-score, pools)))


def ranks_in_order(pools: np.ndarray, score: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`ranks_in_pools` of rows whose ``order`` sorts them by pool, then score descending."""
    pool, value = pools[order], score[order]
    new_pool = np.r_[True, pool[1:] != pool[:-1]]
    new_run = new_pool | np.r_[True, value[1:] != value[:-1]]
    at = np.arange(order.size)
    run_start = np.maximum.accumulate(np.where(new_run, at, 0))
    above = run_start - np.maximum.accumulate(np.where(new_pool, at, 0))
    run_end = np.r_[np.flatnonzero(new_run)[1:], order.size]  # one past each run's last row, per run
    tied = run_end[np.cumsum(new_run) - 1] - run_start - 1
    first, ties = np.empty(order.size, dtype=np.int64), np.empty(order.size, dtype=np.int64)
    first[order], ties[order] = above, tied
    return first, ties


def quota_fractions(data: KeyData, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(numerator, denominator) per row of the ``observed`` design: the chance (k − H clipped to 0 … T + 1)/(T + 1)
    of being among the top k of its pool (H members above, T others tied: a fair lottery among the tied), as a
    fraction of integers; the decided 0/1 of a quota-free system at every k below the pool size."""
    _, first, ties, _ = _pool_ranks(data)
    return np.clip(k - first, 0, ties + 1), ties + 1


def quota_counts(data: KeyData, quotas: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(members (pools, groups), selected (pools, groups, quotas)) of the ``observed`` design: each recorded pool's
    members of each group and how many of them it selects at each quota in expectation (the sums of
    :func:`quota_fractions`: whole numbers, fractions only where a quota cuts through a tie), every quota in one
    pass: each member's selection steps up from 0 at rank ``first`` to 1 at rank ``first + ties + 1``, linearly
    across its tie, so its chance at k is the running sum, over ranks below k, of its share spread over the tie."""
    pools, first, ties, _ = _pool_ranks(data)
    shape = (int(pools.max()) + 1, len(data.groups))
    top = max(quotas)  # ranks at or beyond the largest quota never count: clipped to it
    cell = (pools * shape[1] + data.group) * (top + 1)
    share = 1 / (ties + 1)
    size = shape[0] * shape[1] * (top + 1)
    steps = (np.bincount(cell + np.minimum(first, top), share, minlength=size)
             - np.bincount(cell + np.minimum(first + ties + 1, top), share, minlength=size))
    chance = np.cumsum(np.cumsum(steps.reshape(*shape, top + 1), axis=2), axis=2)
    members = np.bincount(pools * shape[1] + data.group, minlength=shape[0] * shape[1]).reshape(shape)
    return members, chance[:, :, np.asarray(quotas) - 1]


def quota_chances(pool: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
    """Per applicant (its ``pool`` and ``score``; higher is better): the chance of being among the top k of its
    pool when ties are broken by a fair lottery, (k − H clipped to 0 … T + 1)/(T + 1) with H members above it and T
    others tied with it."""
    above, ties = ranks_in_pools(pool, score)
    return np.clip(k - above, 0, ties + 1) / (ties + 1)


def _observed(data: KeyData, pool_weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    stacked = data.memo.get("observed")
    if stacked is None:  # both tables side by side, kept transposed (2·groups·L × pools): one product, no transpose
        from scipy.sparse import hstack

        stacked = data.memo["observed"] = hstack(_observed_tables(data), format="csr").T
    weights = np.ones((1, stacked.shape[1])) if pool_weights is None else pool_weights
    product = stacked @ weights.T  # (2·groups·L, n): the all-members rows, then the qualified ones
    half = product.shape[0] // 2

    def average(rows: np.ndarray) -> np.ndarray:  # (n, groups, L) as a view of the rows (their layout, their sums)
        total = rows.T.reshape(len(weights), len(data.groups), -1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return total / total.sum(axis=2, keepdims=True)

    return average(product[:half]), average(product[half:])


def _observed_tables(data: KeyData) -> tuple:
    """Per recorded pool (sparse, pools × groups·L): how many of each group's members (all, then qualified) hold
    each rank, ties spread evenly over the ranks they share; a replicate's rank law is its pool weights times these."""
    from scipy.sparse import csr_matrix  # imported on use: slow to import

    pools, first, ties, size = _pool_ranks(data)
    shape = (int(pools.max()) + 1, len(data.groups), size)
    return tuple(csr_matrix(rank_tables(pools[mask], data.group[mask], first[mask], ties[mask], shape)
                            .reshape(shape[0], -1)) for mask in (np.ones_like(data.qualified), data.qualified))


def rank_tables(pools: np.ndarray, group: np.ndarray, first: np.ndarray, ties: np.ndarray,
                shape: tuple[int, int, int]) -> np.ndarray:
    """(pools, groups, L) = ``shape``: how many of each group's members of each pool hold each rank, a member with
    ``first`` members above it and ``ties`` others tied spread evenly over ranks first … first + ties."""
    n_pools, m, size = shape
    cell = (pools * m + group) * (size + 1)
    share = 1 / (ties + 1)
    steps = (np.bincount(cell + first, share, minlength=n_pools * m * (size + 1))
             - np.bincount(cell + first + ties + 1, share, minlength=n_pools * m * (size + 1)))
    return np.cumsum(steps.reshape(n_pools, m, size + 1), axis=2)[:, :, :size]
