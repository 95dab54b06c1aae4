"""Pearson r across models between combinations' bias vectors, and the best combination by either search.

With z the bias centred over models (rows) and scaled to unit norm, r(c, c′) = z_a[:, c] · z_b[:, c′].
"""
from __future__ import annotations

import numpy as np

BLOCK = 1024


def unit_columns(bias: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(z, valid): each column centred over models (rows) and scaled to unit norm; constant columns are invalid."""
    centred = bias - bias.mean(axis=0, keepdims=True)
    norm = np.linalg.norm(centred, axis=0)
    valid = norm > 1e-12 * np.maximum(1.0, np.abs(bias).max(axis=0))
    return centred / np.where(valid, norm, 1.0), valid


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson r of two bias vectors over models (NaN when one is constant)."""
    (za, va), (zb, vb) = unit_columns(a[:, None]), unit_columns(b[:, None])
    return float(za[:, 0] @ zb[:, 0]) if va[0] and vb[0] else float("nan")


def best_pair(bias_a: np.ndarray, bias_b: np.ndarray) -> tuple[float, int, int, float]:
    """Independent search: (best r, its column in ``bias_a``, its column in ``bias_b``, mean r over all valid
    column pairs)."""
    (za, va), (zb, vb) = unit_columns(bias_a), unit_columns(bias_b)
    cols_a, cols_b = np.flatnonzero(va), np.flatnonzero(vb)
    if not len(cols_a) or not len(cols_b):
        return float("nan"), -1, -1, float("nan")
    za, zb = za[:, cols_a], zb[:, cols_b]
    average = float(za.mean(axis=1) @ zb.mean(axis=1))
    best, at = -np.inf, (0, 0)
    for start in range(0, za.shape[1], BLOCK):
        block = za[:, start : start + BLOCK].T @ zb
        flat = int(block.argmax())
        if block.flat[flat] > best:
            best, at = float(block.flat[flat]), (start + flat // block.shape[1], flat % block.shape[1])
    return best, int(cols_a[at[0]]), int(cols_b[at[1]]), average


def best_same(bias_a: np.ndarray, bias_b: np.ndarray) -> tuple[float, int, int, float]:
    """Same-combination search (columns of both tables are the same combinations): (best r, its column twice,
    mean r over the valid columns)."""
    (za, va), (zb, vb) = unit_columns(bias_a), unit_columns(bias_b)
    cols = np.flatnonzero(va & vb)
    if not len(cols):
        return float("nan"), -1, -1, float("nan")
    r = np.einsum("nc,nc->c", za[:, cols], zb[:, cols])
    at = int(cols[r.argmax()])
    return float(r.max()), at, at, float(r.mean())


def best_combination(bias_a: np.ndarray, bias_b: np.ndarray, search: str) -> tuple[float, int, int, float]:
    """:func:`best_same` or :func:`best_pair`, by ``search``."""
    return (best_same if search == "same" else best_pair)(bias_a, bias_b)
