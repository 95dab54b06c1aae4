"""The recorded pools of many systems stacked into one set of arrays, so the verdict measures every system (key) of a
grouping in one vectorised pass instead of one pass per key: each key's rates at every quota, its pairs' exact
stratified tests and each category's comparison with its comparator (:mod:`audit.metrics.exact`).

Keys are stacked in batches sharing their categories and pool size (:func:`batches`). Every sum over a key's pools
runs over that key's pools alone, in its own order (:func:`audit.metrics.exact.segment_sums`; a sequential sum over
pools for the rank tables, as the per-key sparse product takes it), so each number equals the one-key computation's
to the last bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audit.metrics.exact import PairPools, PoolCounts, pair_pvalues
from audit.metrics.keys import KeyData
from audit.metrics.pools import check_pools, rank_tables, ranks_in_pools

#: the most rows stacked at once (:func:`batches`): bounds the memory of a big log's pass, changes no number
BATCH_ROWS = 2**18


@dataclass(frozen=True)
class Stacked:
    """The rows of ``keys`` one key after another: each row's stacked ``pool`` (pools numbered key by key, each key's
    in the order of its pool ids), ``group``, and ``first`` / ``ties`` (members above it in its pool, others tied
    with it; a quota-free system's recorded decision placed first or last, as
    :func:`audit.metrics.pools.quota_fractions` reads it); ``pool_key`` is each stacked pool's key (non-decreasing),
    ``candidates`` each key's distinct candidates per group (keys × groups)."""

    keys: tuple[KeyData, ...]
    groups: int
    size: int
    pool: np.ndarray
    group: np.ndarray
    first: np.ndarray
    ties: np.ndarray
    pool_key: np.ndarray
    candidates: np.ndarray

    @classmethod
    def of(cls, keys: list[KeyData]) -> "Stacked":
        """The stack of ``keys``, which share their groups and largest pool size (see :func:`batches`)."""
        for data in keys:
            check_pools(data)
        lengths = np.array([data.score.size for data in keys])
        key = np.repeat(np.arange(len(keys)), lengths)
        joined = lambda name: np.concatenate([getattr(data, name) for data in keys])
        codes, pool = np.unique(key * (int(joined("pool").max()) + 1) + joined("pool"), return_inverse=True)
        pool_key = codes // (int(joined("pool").max()) + 1)
        groups = len(keys[0].groups)
        size = int(np.bincount(pool).max())
        decided = np.concatenate([data.decided if data.decided is not None else np.full(data.score.size, -1)
                                  for data in keys])
        first, ties = np.zeros(pool.size, dtype=np.int64), np.zeros(pool.size, dtype=np.int64)
        ranked = decided < 0
        if ranked.any():
            first[ranked], ties[ranked] = ranks_in_pools(pool[ranked], joined("score")[ranked])
        first[~ranked] = np.where(decided[~ranked] > 0, 0, size - 1)
        group = joined("group")
        width = max(data.candidate_names.size for data in keys)
        cells = np.sort((key * groups + group) * width + joined("candidate_code"))
        distinct = cells[np.r_[True, cells[1:] != cells[:-1]]] // width  # sorted, not hashed: many times faster
        candidates = np.bincount(distinct, minlength=len(keys) * groups).reshape(len(keys), groups)
        return cls(tuple(keys), groups, size, pool, group, first, ties, pool_key, candidates)

    @property
    def pools(self) -> int:
        return self.pool_key.size

    def counts(self, k: int) -> PoolCounts:
        """Every stacked pool's decisions at quota ``k`` (:func:`audit.metrics.exact.pool_tables` of each key)."""
        numerator, denominator = np.clip(k - self.first, 0, self.ties + 1), self.ties + 1
        return PoolCounts.of(self.pool, self.group, numerator, denominator, (self.pools, self.groups))

    def moved(self, quotas: list[int]) -> np.ndarray:
        """(quotas,): whether the decisions at each quota differ from those at the quota before it in ``quotas``
        (True for the first). A member's share of its pool's selections moves only at quotas from one past its
        first rank to one past its ties (``first`` < k ≤ ``first`` + ``ties`` + 1): between two quotas with no such
        move the counts, rates, tests and bounds are the same (a quota-free log's decisions at every quota)."""
        edges = np.zeros(self.size + 2, dtype=np.int64)
        np.add.at(edges, np.minimum(self.first + 1, self.size + 1), 1)
        np.add.at(edges, np.minimum(self.first + self.ties + 2, self.size + 1), -1)
        passed = np.cumsum(np.cumsum(edges) > 0)  # quotas 0 … size + 1 at which some member's share moved, so far
        at = passed[np.asarray(quotas)]
        return np.r_[True, at[1:] != at[:-1]]

    def rates(self, quotas: list[int]) -> np.ndarray:
        """(keys, groups, quotas): each group's selection rate φ(k), its rank law summed over the key's pools (in
        pool order) and normalised, then accumulated over ranks (:func:`audit.metrics.allocation.shares`)."""
        tables = rank_tables(self.pool, self.group, self.first, self.ties, (self.pools, self.groups, self.size))
        starts = np.flatnonzero(np.r_[True, self.pool_key[1:] != self.pool_key[:-1]])
        total = np.add.reduceat(tables, starts, axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            law = total / total.sum(axis=2, keepdims=True)
        return np.cumsum(law, axis=2)[:, :, np.asarray(quotas) - 1]

    def pair_pvalues(self, counts: PoolCounts, a: int, b: int) -> np.ndarray:
        """(keys,): the exact stratified p-value of categories ``a`` and ``b`` of every key."""
        return pair_pvalues(counts, self.pool_key, len(self.keys), a, b)

    def against(self, counts: PoolCounts, top: np.ndarray) -> PairPools:
        """Every category (a) against its key's comparator ``top`` (keys,) (b), comparisons numbered group by group
        then key (group · keys + key)."""
        at = top[self.pool_key]
        rows = np.arange(self.pools)
        segment = (np.arange(self.groups)[:, None] * len(self.keys) + self.pool_key).ravel()
        return PairPools(counts.members.T.ravel(), np.tile(counts.members[rows, at], self.groups),
                         counts.selected.T.ravel(), np.tile(counts.selected[rows, at], self.groups), segment,
                         self.groups * len(self.keys))


def batches(keys: list[KeyData], sizes: list[int]) -> list[list[int]]:
    """Indices of ``keys`` in batches of the same categories and largest pool size (``sizes``), in key order, each of
    at most :data:`BATCH_ROWS` rows (or one key): a big log's stacked arrays are made a batch at a time."""
    rows = BATCH_ROWS
    found: dict[tuple, list[list[int]]] = {}
    filled: dict[tuple, int] = {}
    for i, (data, size) in enumerate(zip(keys, sizes)):
        kind = (data.groups, size)
        runs = found.setdefault(kind, [[]])
        if runs[-1] and filled[kind] + data.score.size > rows:
            runs.append([])
            filled[kind] = 0
        runs[-1].append(i)
        filled[kind] = filled.get(kind, 0) + data.score.size
    return [batch for runs in found.values() for batch in runs]


def key_columns(keys: tuple[KeyData, ...], names: tuple[str, ...], each: int) -> dict[str, np.ndarray]:
    """The key columns ``names`` of ``keys``, each key's values repeated ``each`` times."""
    values = np.empty((len(keys), len(names)), dtype=object)
    values[:] = [data.key for data in keys]
    return {name: np.repeat(values[:, i], each) for i, name in enumerate(names)}
