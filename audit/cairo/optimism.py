"""How much of CAIRO's best r the search alone explains: a permutation null and a held-out r.

Permutation null: shuffle which model each of metric a's biases belongs to (one permutation for every combination
at once) and rerun the same best-combination search; the null best r is what the search finds when the metrics
share nothing. With z the unit-norm centred biases, the permuted r of combination pair (c, c′) is
Σ_i z_a[π(i), c] z_b[i, c′]. For the same-combination search every permutation's r of every combination is one
matrix product: Q (permutations × n², Q[p, (i, j)] = 1 where π_p(i) = j) times M (n² × combinations,
M[(i, j), c] = z_b[i, c] z_a[j, c]), in column blocks. The independent search takes, per block of a's
combinations, the product of all permuted a-columns with Z_b. When n! ≤ the permutations asked for, all n!
permutations are used (an exact test); otherwise random ones, p = (1 + #null ≥ r) / (1 + permutations).

Held-out r: split each metric's prompts in two halves (within every subgroup, a paraphrase going with its prompt),
select the best combination on one half, and take its r on the other; both directions, averaged over splits.
"""
from __future__ import annotations

from itertools import permutations as all_permutations
from math import factorial

import numpy as np

from audit.cairo.bias import MetricCells, combination_bias, combination_weights
from audit.cairo.correlation import BLOCK, best_combination, pearson, unit_columns

CELLS = 1 << 22  # entries per block of the independent null's products


def model_permutations(models: int, count: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """(permutations × models indices, exact): all n! orders when n! ≤ ``count``, else ``count`` random ones."""
    if factorial(models) <= count:
        return np.array(list(all_permutations(range(models))), dtype=np.intp), True
    return np.argsort(rng.random((count, models)), axis=1), False


def null_best(bias_a: np.ndarray, bias_b: np.ndarray, search: str, orders: np.ndarray) -> np.ndarray:
    """The best r of the search for each model order of ``bias_a`` (rows of ``orders``); NaN when none is valid."""
    (za, va), (zb, vb) = unit_columns(bias_a), unit_columns(bias_b)
    n = za.shape[0]
    best = np.full(len(orders), -np.inf)
    if search == "same":
        cols = np.flatnonzero(va & vb)
        q = np.zeros((len(orders), n * n))
        q[np.arange(len(orders))[:, None], np.arange(n) * n + orders] = 1
        for start in range(0, len(cols), BLOCK):
            block = cols[start : start + BLOCK]
            m = (zb[:, None, block] * za[None, :, block]).reshape(n * n, len(block))
            best = np.maximum(best, (q @ m).max(axis=1))
    else:
        za, zb = za[:, va], zb[:, vb]
        step = max(1, CELLS // max(1, len(orders) * zb.shape[1]))
        for start in range(0, za.shape[1] if zb.shape[1] else 0, step):
            permuted = za[:, start : start + step][orders]  # (orders, n, block)
            r = permuted.transpose(0, 2, 1).reshape(-1, n) @ zb
            best = np.maximum(best, r.reshape(len(orders), -1).max(axis=1))
    return np.where(np.isfinite(best), best, np.nan)


def permutation_test(bias_a: np.ndarray, bias_b: np.ndarray, search: str, observed: float, count: int,
                     rng: np.random.Generator) -> tuple[float, float, int]:
    """(null 95th percentile, p-value of ``observed``, permutations used); NaNs when ``count`` is 0."""
    if count < 1 or not np.isfinite(observed):
        return float("nan"), float("nan"), 0
    orders, exact = model_permutations(bias_a.shape[0], count, rng)
    null = null_best(bias_a, bias_b, search, orders)
    null = null[np.isfinite(null)]
    if not len(null):
        return float("nan"), float("nan"), 0
    above = int((null >= observed - 1e-9).sum())
    p = above / len(null) if exact else (1 + above) / (1 + len(null))
    return float(np.quantile(null, 0.95)), float(p), len(null)


def half_split(cells: MetricCells, rng: np.random.Generator) -> np.ndarray | None:
    """A random half of the prompts within every subgroup (True = first half); None when a subgroup has < 2."""
    first = np.zeros(len(cells.prompt_subgroup), bool)
    for group in range(len(cells.subgroups)):
        members = np.flatnonzero(cells.prompt_subgroup == group)
        if len(members) < 2:
            return None
        first[rng.permutation(members)[: len(members) // 2]] = True
    return first


def _half_biases(cells: MetricCells, first: np.ndarray, weights: np.ndarray) -> list[np.ndarray] | None:
    halves = [cells.restricted(prompts=first), cells.restricted(prompts=~first)]
    if any((half.counts <= 0).any() for half in halves):
        return None  # a (model, set, subgroup) cell without continuations in one half
    return [combination_bias(half, weights) for half in halves]


def heldout_r(cells_a: MetricCells, cells_b: MetricCells, m: int, search: str, splits: int,
              rng: np.random.Generator) -> float:
    """Mean r on the other half of the combination selected on one half, over ``splits`` random splits and both
    directions; NaN when no split leaves every cell with continuations in both halves."""
    w_a, w_b = (combination_weights(len(c.sets) - 1, m) for c in (cells_a, cells_b))
    scores = []
    for _ in range(splits):
        first_a, first_b = half_split(cells_a, rng), half_split(cells_b, rng)
        if first_a is None or first_b is None:
            return float("nan")
        halves_a, halves_b = _half_biases(cells_a, first_a, w_a), _half_biases(cells_b, first_b, w_b)
        if halves_a is None or halves_b is None:
            continue
        for pick, check in ((0, 1), (1, 0)):
            _, col_a, col_b, _ = best_combination(halves_a[pick], halves_b[pick], search)
            if col_a >= 0:
                scores.append(pearson(halves_a[check][:, col_a], halves_b[check][:, col_b]))
    scores = [s for s in scores if np.isfinite(s)]
    return float(np.mean(scores)) if scores else float("nan")
