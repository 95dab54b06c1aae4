"""Allocation gaps ΔDP and ΔEO at every quota k, exactly (paper section 4.2).

In each pool the k best-scored candidates are selected; candidates tied with the k-th score share the remaining
slots equally: a candidate with H pool members above it and T others tied with it is selected with chance
clip(k − H, 0, T + 1)/(T + 1), its chance of rank ≤ k under random tie-breaking. Taking the expectation over every
possible pool (rank laws from :mod:`audit.metrics.pools`):

    φ(X, k) = expected share of X's pool members selected   = mean_{x∈X} P(x selected | x in the pool)
    ψ(X, k) = expected share of X's qualified members selected = the same mean over qualified x only
    ΔDP(A, B) = φ(A, k) − φ(B, k),   ΔEO(A, B) = ψ(A, k) − ψ(B, k)   (signed; B is the reference group)

These are the limits to which the paper's simulation over random rounds (selected counts over appearance counts)
converges; pools are always drawn from all candidates, qualified or not.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pandas as pd

from audit.design import PoolDesign
from audit.errors import AuditError
from audit.metrics.keys import KeyData, split_keys
from audit.metrics.pools import pool_size, rank_laws
from audit.metrics.schema import KEY, key_label


def selection_shares(laws: np.ndarray) -> np.ndarray:
    """φ for k = 1..L from rank laws (…, L): the chance of a rank ≤ k, φ(X, k) = Σ_{j<k} R_X[j]."""
    return np.cumsum(laws, axis=-1)


def shares(data: KeyData, design: PoolDesign) -> tuple[np.ndarray, np.ndarray]:
    """(φ, ψ), each (groups, L): the exact selection shares of every group for k = 1..L (L = pool size)."""
    law, qualified_law = rank_laws(data, design)
    return selection_shares(law)[0], selection_shares(qualified_law)[0]


def check_quotas(ks: Iterable[int] | int, size: int, data: KeyData, design: PoolDesign) -> list[int]:
    """The quotas as a sorted list; an AuditError if one is below 1 or above the pool size."""
    quotas = sorted({int(k) for k in ([ks] if isinstance(ks, (int, np.integer)) else ks)})
    if not quotas:
        raise AuditError("no quota k given")
    if quotas[0] < 1:
        raise AuditError(f"quota k={quotas[0]} must be at least 1")
    if quotas[-1] > size:
        raise AuditError(f"quota k={quotas[-1]} is larger than the pool ({size} candidates, pool design {design}) "
                         f"for {key_label(data.key)}")
    return quotas


def row_index(data: KeyData, size: int) -> pd.DataFrame:
    """(model, subtask, mode, group, k) for every non-reference group and k = 1..size: the row order of the tables."""
    others = [g for g in range(len(data.groups)) if g != data.ref]
    frame = pd.DataFrame({"group": np.repeat(np.asarray(data.groups)[others], size),
                          "k": np.tile(np.arange(1, size + 1), len(others))})
    for position, (name, value) in enumerate(zip(KEY, data.key)):
        frame.insert(position, name, value)
    return frame


def gap_rows(data: KeyData, phi: np.ndarray, psi: np.ndarray) -> pd.DataFrame:
    """Long table of (key, group, k, dp_gap, eo_gap) for every non-reference group and k = 1..L."""
    others = [g for g in range(len(data.groups)) if g != data.ref]
    return row_index(data, phi.shape[1]).assign(dp_gap=(phi[others] - phi[data.ref]).ravel(),
                                                eo_gap=(psi[others] - psi[data.ref]).ravel())


def allocation_gaps(scores: pd.DataFrame, *, reference: str, ks: Iterable[int] | int,
                    pool: "str | PoolDesign" = "per-group") -> pd.DataFrame:
    """Exact ΔDP(A, reference, k) and ΔEO(A, reference, k) for every (model, subtask, mode), group A and k in ``ks``.

    Columns: model, subtask, mode, group, k, dp_gap, eo_gap. ``pool`` is ``per-group`` (one uniform draw from each
    group), ``random:N`` (N drawn without replacement from the subtask) or ``observed`` (the table's ``pool`` ids).
    """
    frames = []
    for data, design, quotas in quota_keys(scores, reference, pool, ks):
        rows = gap_rows(data, *shares(data, design))
        frames.append(rows[rows["k"].isin(quotas)])
    return pd.concat(frames, ignore_index=True)


def quota_keys(scores: pd.DataFrame, reference: str, pool: "str | PoolDesign",
               ks: Iterable[int] | int) -> Iterator[tuple[KeyData, PoolDesign, list[int]]]:
    """Each (model, subtask, mode) key of ``scores``, with the pool design and the quotas ``ks`` checked against
    the key's pool size."""
    design = PoolDesign.parse(pool)
    for data in split_keys(scores, reference=reference):
        yield data, design, check_quotas(ks, pool_size(design, data), data, design)
