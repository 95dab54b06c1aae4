"""Permutation p-values for the allocation gaps, and multiple-comparison adjustment (Holm, Benjamini–Hochberg).

Null hypothesis of "no gap": within one (model, subtask, mode) the group labels are exchangeable. A permutation
shuffles the labels over the key's candidates (group sizes kept) and recomputes every group's exact ΔDP and ΔEO
against the reference for every k, as :mod:`audit.metrics.allocation` does; permutations are processed in blocks as
one batch (rank laws of every candidate under each shuffled labelling, then one matrix product per block), never in
a Python loop over permutations. Where the rank laws do not depend on the labels (``random:N``, recorded pools) a
shuffle only decides how many rows of each group hold each (law, qualified) cell, so those tables are drawn directly
with a uniform shuffle's law (:func:`shuffled_tables`). The shares under a shuffle serve a gap against any group.
The two-sided p-value is p = (1 + #{b : |gap_b| ≥ |gap|}) / (B + 1), never 0.
"""
from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

from audit.errors import AuditError
from audit.metrics.allocation import row_index, shares
from audit.metrics.keys import KeyData, split_keys
from audit.design import PoolDesign, PoolKind
from audit.metrics.pools import candidate_laws, pool_size

METHODS = {"holm": "Holm (family-wise error)", "bh": "Benjamini–Hochberg (false discovery rate)"}
_CELLS_PER_CHUNK = 4_000_000
_BLOCK = 100


def key_seed(data: KeyData) -> int:
    """A stable per-key seed component, so every key draws its own stream whatever the key order."""
    return zlib.crc32("\x1f".join(data.key).encode())


def group_shares(labels: np.ndarray, chances: np.ndarray, weight: np.ndarray, groups: int) -> np.ndarray:
    """(batch, groups, L): the ``weight``-weighted mean selection chance over the rows labelled with each group.

    ``labels`` (batch, rows) gives each row's group; ``chances`` (L, batch or 1, rows) each row's chance of being
    selected at k = 1..L; ``weight`` (rows,) stays with its row (1, or whether the candidate is qualified)."""
    n = labels.shape[0]
    cell = (np.arange(n)[:, None] * groups + labels).ravel()
    weights = np.broadcast_to(weight, labels.shape).ravel()
    total = np.stack([np.bincount(cell, np.broadcast_to(chance, labels.shape).ravel() * weights, n * groups)
                      for chance in chances], axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (total / np.bincount(cell, weights, n * groups)[:, None]).reshape(n, groups, -1)


def permuted_gaps(data: KeyData, design: PoolDesign, *, n_perm: int, seed: int) -> dict[str, np.ndarray]:
    """``dp_gap`` and ``eo_gap``, each (n_perm, groups, L): the exact gaps under shuffled group labels."""
    phi, psi = permuted_shares(data, design, n_perm=n_perm, seed=seed)
    return {"dp_gap": phi - phi[:, [data.ref]], "eo_gap": psi - psi[:, [data.ref]]}


def permuted_shares(data: KeyData, design: PoolDesign, *, n_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(φ, ψ), each (n_perm, groups, L): the exact selection shares under shuffled group labels (whatever the
    reference: a gap against any group is a difference of these)."""
    if design.kind != PoolKind.PER_GROUP:
        return _label_free_shares(data, design, n_perm=n_perm, seed=seed)
    rows, groups = data.group.size, len(data.groups)
    size = pool_size(design, data)
    step = max(1, _CELLS_PER_CHUNK // (size * size * rows))  # shuffles per law computation (memory)
    phi, psi = [], []
    for block in range(0, n_perm, _BLOCK):  # seeded per fixed block: results do not depend on ``step``
        rng = np.random.default_rng([seed, key_seed(data), block])
        shuffled = rng.permuted(np.broadcast_to(data.group, (min(_BLOCK, n_perm - block), rows)), axis=1)
        for labels in np.array_split(shuffled, -(-len(shuffled) // step)):
            chances = running_sum(candidate_laws(data, design, labels))
            phi.append(group_shares(labels, chances, np.ones(rows), groups))
            psi.append(group_shares(labels, chances, data.qualified.astype(float), groups))
    return np.concatenate(phi), np.concatenate(psi)


def _label_free_shares(data: KeyData, design: PoolDesign, *, n_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`permuted_shares` for designs whose rank laws do not depend on the labels (``random:N``, recorded
    pools): a shuffle then only decides how many rows of each group fall in each cell (distinct law × qualified),
    so each shuffle's table of those counts is drawn directly, with the law of a uniform permutation's."""
    cells = label_free_cells(data, design)
    rng = np.random.default_rng([seed, key_seed(data)])
    return table_shares(cells, shuffled_tables(rng, np.bincount(data.group), np.bincount(cells[2]), n_perm))


def label_free_cells(data: KeyData, design: PoolDesign) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the distinct rank laws (laws, L), the cells present as ``law · 2 + qualified``, each row's cell index)."""
    laws, kind = np.unique(running_sum(candidate_laws(data, design, data.group[None]))[:, 0].T, axis=0,
                           return_inverse=True)
    cells, cell = np.unique(kind.ravel() * 2 + data.qualified, return_inverse=True)
    return laws, cells, cell.ravel()


def table_shares(cells: tuple[np.ndarray, np.ndarray, np.ndarray], tables: np.ndarray) -> tuple[np.ndarray,
                                                                                               np.ndarray]:
    """(φ, ψ), each (n, groups, L), from tables (n, groups, cells) of how many rows of each group hold each cell."""
    laws, present, _ = cells
    counts = np.zeros((*tables.shape[:2], len(laws) * 2))
    counts[:, :, present] = tables
    counts = counts.reshape(*tables.shape[:2], len(laws), 2)
    return _mean_law(counts.sum(axis=3), laws), _mean_law(counts[..., 1], laws)


def shuffled_tables(rng: np.random.Generator, totals: np.ndarray, sizes: np.ndarray, n: int) -> np.ndarray:
    """(n, groups, cells): how many of each group's ``totals`` labels land in each cell of ``sizes`` rows when the
    labels are shuffled uniformly, n times: cell by cell a multivariate hypergeometric draw of the labels left,
    itself drawn group by group (a univariate hypergeometric each, vectorised over the n shuffles)."""
    out = np.zeros((n, totals.size, sizes.size), dtype=np.int64)
    left = np.tile(totals.astype(np.int64), (n, 1))  # labels of each group not yet placed
    for c, size in enumerate(sizes[:-1]):
        need, after = np.full(n, size, dtype=np.int64), left.sum(axis=1)
        for g in range(totals.size - 1):
            after = after - left[:, g]  # labels of the groups after g
            out[:, g, c] = rng.hypergeometric(left[:, g], after, need)
            need = need - out[:, g, c]
        out[:, -1, c] = need
        left -= out[:, :, c]
    out[:, :, -1] = left
    return out


def _mean_law(counts: np.ndarray, laws: np.ndarray) -> np.ndarray:
    """(batch, groups, L): each group's mean selection chance from its rows' counts per distinct law (batch,
    groups, laws) and those laws (laws, L)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts @ laws) / counts.sum(axis=2, keepdims=True)


def running_sum(laws: np.ndarray) -> np.ndarray:
    """``np.cumsum(laws, axis=0)``, the same sums in the same order, one row at a time (NumPy's accumulate along the
    first axis is about ten times slower on these shapes)."""
    out = np.empty_like(laws)
    out[0] = laws[0]
    for j in range(1, len(laws)):
        np.add(out[j - 1], laws[j], out=out[j])
    return out


def permutation_pvalues(observed: dict[str, np.ndarray], null: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``{name}_p`` (groups, L) for each gap: the two-sided permutation p-value of the observed gap (groups, L)."""
    out = {}
    for name, value in observed.items():
        tolerance = 1e-12 * np.maximum(1, np.abs(value))
        exceed = (np.abs(null[name]) >= np.abs(value) - tolerance).sum(axis=0)
        out[f"{name}_p"] = np.where(np.isfinite(value), (1 + exceed) / (null[name].shape[0] + 1), np.nan)
    return out


def key_pvalues(data: KeyData, design: PoolDesign, *, n_perm: int, seed: int) -> dict[str, np.ndarray]:
    """``dp_gap_p`` and ``eo_gap_p`` (groups, L): permutation p-values of every group's gaps at k = 1..L."""
    phi, psi = shares(data, design)
    observed = {"dp_gap": phi - phi[data.ref], "eo_gap": psi - psi[data.ref]}
    return permutation_pvalues(observed, permuted_gaps(data, design, n_perm=n_perm, seed=seed))


def gap_pvalues(scores: pd.DataFrame, *, reference: str, pool: "str | PoolDesign" = "per-group", n_perm: int = 1000,
                seed: int = 0) -> pd.DataFrame:
    """Permutation p-values of ΔDP and ΔEO for every (model, subtask, mode), group ≠ reference and k up to the pool
    size. Columns: model, subtask, mode, group, k, dp_gap_p, eo_gap_p."""
    if n_perm < 1:
        raise AuditError(f"permutations {n_perm} must be at least 1")
    design = PoolDesign.parse(pool)
    frames = []
    for data in split_keys(scores, reference=reference):
        others = [g for g in range(len(data.groups)) if g != data.ref]
        pvalues = key_pvalues(data, design, n_perm=n_perm, seed=seed)
        frames.append(row_index(data, pool_size(design, data)).assign(
            **{name: values[others].ravel() for name, values in pvalues.items()}))
    return pd.concat(frames, ignore_index=True)


def gap_test(pool: "str | PoolDesign") -> str:
    """The test behind the gaps' p-values under ``pool``, in words: recorded pools use the exact test stratified by
    pool (:func:`audit.metrics.exact.gap_pvalues`), other designs label permutations."""
    return ("exact test stratified by pool" if PoolDesign.parse(pool).kind == PoolKind.OBSERVED
            else "permutation test")


def adjust(pvalues: Sequence[float] | np.ndarray, method: str = "holm") -> np.ndarray:
    """Adjusted p-values of one family: ``holm`` (step-down, controls the family-wise error) or ``bh``
    (Benjamini–Hochberg step-up, controls the false discovery rate). NaNs stay NaN and do not count."""
    if method not in METHODS:
        raise AuditError(f"multiple-comparison method {method!r} not known; use {' or '.join(METHODS)}")
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(np.isfinite(p))
    m = valid.size
    if m == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    ranked = p[order]
    if method == "holm":
        adjusted = np.maximum.accumulate(np.minimum(1, (m - np.arange(m)) * ranked))
    else:
        adjusted = np.minimum.accumulate(np.minimum(1, ranked * (m / np.arange(1, m + 1)))[::-1])[::-1]
    out[order] = adjusted
    return out


def holm_within(pvalues: np.ndarray, family: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`adjust` with ``holm`` of each family's p-values, each row's family size (its p-values that are not
    NaN)), for many families at once (``family``: each row's family, integers 0 …); the same numbers as family
    by family."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(np.isfinite(p))
    count = np.bincount(family[valid], minlength=int(family.max(initial=-1)) + 1)
    if valid.size == 0:
        return out, count[family]
    order = valid[np.lexsort((p[valid], family[valid]))]  # by family, then p (stable: ties in row order)
    at = family[order]
    rank = np.arange(order.size) - (np.cumsum(count) - count)[at]
    scaled = np.minimum(1, (count[at] - rank) * p[order])
    out[order] = pd.Series(scaled).groupby(at).cummax().to_numpy()
    return out, count[family]


def adjusted(table: pd.DataFrame, method: str = "holm", *, by: Sequence[str] = ("model", "mode", "k"),
             columns: Sequence[str] = ("dp_gap_p", "eo_gap_p")) -> pd.DataFrame:
    """``table`` with ``{column}adj`` (e.g. ``dp_gap_padj``): each p-value column adjusted within every family ``by``
    (default: the groups × subtasks of one model, mode and k), gap by gap; rows with a missing ``by`` value stay NaN.
    The families are found once and each is adjusted as an array (thousands of families at every k of a big pool)."""
    out = table.copy()
    codes = out.groupby(list(by), sort=False, observed=True).ngroup().to_numpy()
    order = np.argsort(codes, kind="stable")  # each family's rows in table order, as adjust() is given them
    families = [rows for rows in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1)
                if len(rows) and codes[rows[0]] >= 0]
    for column in columns:
        values, result = out[column].to_numpy(dtype=float), np.full(len(out), np.nan)
        for rows in families:
            result[rows] = adjust(values[rows], method)
        out[f"{column}adj"] = result
    return out
