"""Bias metrics of every group against the reference from grid counts, vectorised over a batch of replicates.

Input: counts (batch, groups, distinct scores) — how many times each group's resampled candidates carry each of the
key's sorted distinct scores ``values``. Each function returns (batch, groups) and matches its candidate-list
counterpart in :mod:`audit.metrics.bias` on the unresampled counts (NaN where a group is empty).
"""
from __future__ import annotations

import numpy as np
from scipy.special import rel_entr

from audit.metrics.bias import STURGES, bin_count, sturges


def _shares(counts: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return counts / counts.sum(axis=2, keepdims=True)


def weighted_delta(counts: np.ndarray, ref: int, values: np.ndarray) -> np.ndarray:
    """δ(A, B): mean score of each group minus the reference's mean."""
    means = _shares(counts) @ values
    return means - means[:, [ref]]


def weighted_emd(counts: np.ndarray, ref: int, values: np.ndarray) -> np.ndarray:
    """Wasserstein-1 distance ∫ |F_A − F_B| between each group's scores and the reference's."""
    cdf = np.cumsum(_shares(counts), axis=2)
    return np.abs(cdf - cdf[:, [ref]])[:, :, :-1] @ np.diff(values)


def _js_bits(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    m = (p + q) / 2
    return (rel_entr(p, m).sum(axis=-1) + rel_entr(q, m).sum(axis=-1)) / (2 * np.log(2))


def weighted_jsd(counts: np.ndarray, ref: int, values: np.ndarray, *, bins: "int | str" = STURGES) -> np.ndarray:
    """JSD in bits with the binning of :func:`audit.metrics.bias.histograms`: each distinct value of A ∪ B its own
    bin if there are at most the bin count (Sturges' rule on n_A + n_B, or ``bins``), else that many equal-width
    bins over [min(A ∪ B), max(A ∪ B)]."""
    p, q = np.broadcast_arrays(_shares(counts), _shares(counts[:, [ref]]))
    n = counts.sum(axis=2) + counts[:, [ref]].sum(axis=2)
    count = sturges(np.rint(n)) if bins == STURGES else np.full(n.shape, bin_count(bins, 0))
    union = (p > 0) | (q > 0)
    own_bins = union.sum(axis=2) <= count
    if own_bins.all():
        return _js_bits(p, q)
    width = int(count.max())
    last = values.size - 1
    low = values[np.argmax(union, axis=2)]
    high = values[last - np.argmax(union[:, :, ::-1], axis=2)]
    with np.errstate(invalid="ignore", divide="ignore"):
        position = (values - low[:, :, None]) * (count / (high - low))[:, :, None]
    index = np.clip(np.nan_to_num(np.floor(position)), 0, count[:, :, None] - 1).astype(int)
    offset = np.arange(p.shape[0] * p.shape[1]).reshape(p.shape[:2])[:, :, None] * width + index
    binned = [np.bincount(offset.ravel(), weights=w.ravel(), minlength=p.shape[0] * p.shape[1] * width)
              .reshape(*p.shape[:2], width) for w in (p, q)]
    return np.where(own_bins, _js_bits(p, q) if own_bins.any() else np.nan, _js_bits(*binned))


def weighted_rabbi(counts: np.ndarray, ref: int) -> np.ndarray:
    """RABBI of every group against ``ref``: Σ_d c_A(d)·(#B below d − #B above d) / (n_A·n_B)."""
    ref_counts = counts[:, ref]
    below = np.cumsum(ref_counts, axis=1) - ref_counts
    above = ref_counts.sum(axis=1, keepdims=True) - below - ref_counts
    net = np.einsum("bgd,bd->bg", counts, below - above)
    with np.errstate(invalid="ignore", divide="ignore"):
        return net / (counts.sum(axis=2) * ref_counts.sum(axis=1, keepdims=True))
