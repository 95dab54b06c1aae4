"""Tests and intervals that follow a recorded design: pools whose members compete for the same k places.

**Exact conditional test, stratified by pool.** For categories a and b, pool i holds n_ai members of a and n_bi of
b, and s_i of those n_ai + n_bi are selected at quota k. If the labels are exchangeable within a pool (the null: the
system treats a and b alike), the number x_i of a's members among the s_i selected is hypergeometric,
x_i ~ H(n_ai + n_bi, n_ai, s_i), independently over pools given (n_ai, n_bi, s_i). The statistic T = Σ_i x_i then
has the exact law of the convolution of these hypergeometric laws (only pools with 0 < s_i < n_ai + n_bi inform;
pools sharing (n_a, n_b, s) are convolved as one power, by repeated squaring). The two-sided p-value sums the
probabilities of every t no more likely than the observed T (relative tolerance 1e−7, as Fisher's exact test and
``scipy.stats.binomtest`` do). With one pool this *is* Fisher's exact test; with pools of one applicant per category
at k = 1 it is the exact binomial (sign) test on the pools where a or b was picked.

*Ties.* A member tied with others at the k-th rank is selected with a fractional chance (the tie rule of
:mod:`audit.metrics.pools`); a pool's counts x_i (of a) and x_i + y_i (of a and b) are then its shares of a and b
selected, each rounded half to even. Recorded rankings and 0/1 decisions have no such ties.

**Interval of the pairwise ratio** r = p_a / p_b (p: selection rate = selected ÷ members): Katz's log interval
exp(log r ± z·se) with a pool-robust (sandwich) standard error, se² = P/(P − 1)·Σ_i u_i² with
u_i = (x_ai − p_a n_ai)/(p_a N_a) − (x_bi − p_b n_bi)/(p_b N_b) (N: members over all P pools), so the negative
correlation of two categories competing in one pool is counted; with a single pool (an unpooled decision log) the
applicants are independent and se² is Katz's (1 − p_a)/(N_a p_a) + (1 − p_b)/(N_b p_b). The standard error of the
difference p_a − p_b is made the same way (u_i without the division by the rates).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.special import ndtri  # norm.ppf's own kernel: imports fast, scipy.stats does not

from audit.design import PoolDesign
from audit.metrics.inference import running_sum
from audit.metrics.keys import KeyData
from audit.metrics.memo import ArrayCache
from audit.metrics.pools import candidate_laws, pool_index

#: relative tolerance of "no more likely than the observed statistic" (as in Fisher's and the binomial test)
RELATIVE_TOLERANCE = 1e-7
_DIRECT_CELLS = 20_000_000  # longer convolutions go through the FFT
_null_laws = ArrayCache(64 * 2**20)  # null laws by their strata (see null_law)


def pool_tables(data: KeyData, design: PoolDesign, quotas: list[int],
                qualified_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(members (pools, groups), selected (pools, groups, quotas)): each recorded pool's members of every group and
    the expected number of them selected at each quota (fractional only for ties at the k-th rank); with
    ``qualified_only``, qualified members only (selection still among the whole pool: ΔEO's comparison)."""
    chances = running_sum(candidate_laws(data, design, data.group[None]))[:, 0]  # (L, rows): P(rank ≤ k)
    pools, groups = pool_index(data), len(data.groups)
    cell, count = pools * groups + data.group, (pools.max() + 1) * groups
    weight = data.qualified.astype(float) if qualified_only else np.ones(cell.size)
    members = np.rint(np.bincount(cell, weight, minlength=count)).astype(np.int64).reshape(-1, groups)
    selected = np.stack([np.bincount(cell, chances[min(k, len(chances)) - 1] * weight, count) for k in quotas],
                        axis=-1)
    return members, selected.reshape(*members.shape, len(quotas))


def gap_pvalues(data: KeyData, design: PoolDesign) -> dict[str, np.ndarray]:
    """``dp_gap_p`` and ``eo_gap_p`` (groups, L) for recorded pools: the exact test stratified by pool of each group
    against the reference at k = 1 … L (ΔEO over qualified members); NaN for the reference. The gaps' counterpart of
    the verdict's test: a shuffle of labels across pools would ignore that members of one pool compete."""
    quotas = list(range(1, int(np.bincount(pool_index(data)).max()) + 1))
    out = {}
    for name, qualified_only in (("dp_gap_p", False), ("eo_gap_p", True)):
        members, selected = pool_tables(data, design, quotas, qualified_only)
        p = np.full((len(data.groups), len(quotas)), np.nan)
        for g in (g for g in range(len(data.groups)) if g != data.ref):
            p[g] = [pair_pvalue(members, selected[:, :, j], g, data.ref) for j in range(len(quotas))]
        out[name] = p
    return out


@lru_cache(maxsize=4096)
def hypergeometric(n_a: int, n_b: int, s: int) -> np.ndarray:
    """P(x = 0 … min(s, n_a)) for x ~ H(n_a + n_b, n_a, s): a's members among s drawn from n_a + n_b (cached;
    read-only)."""
    from scipy.special._ufuncs import _hypergeom_pmf  # scipy.stats.hypergeom's own kernel, without scipy.stats

    k = np.arange(min(s, n_a) + 1)
    law = np.zeros(k.size)  # as hypergeom.pmf: 0 below the support, the kernel's value clipped to [0, 1] within it
    inside = k >= s - n_b
    law[inside] = np.clip(_hypergeom_pmf(k[inside], n_a, s, n_a + n_b), 0, 1)
    law.flags.writeable = False
    return law


def convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The law of the sum of two independent counts with laws ``a`` and ``b`` (direct while small, so tiny tail
    probabilities keep their relative precision; FFT beyond, negative rounding clipped)."""
    if a.size * b.size <= _DIRECT_CELLS:
        return np.convolve(a, b)
    from scipy.signal import fftconvolve

    return np.clip(fftconvolve(a, b), 0, None)


def power(law: np.ndarray, times: int) -> np.ndarray:
    """The law of the sum of ``times`` independent copies of a count with law ``law`` (repeated squaring)."""
    out, base = np.ones(1), law
    while times:
        if times & 1:
            out = convolve(out, base)
        times >>= 1
        if times:
            base = convolve(base, base)
    return out


def two_sided(law: np.ndarray, observed: int) -> float:
    """Σ P(t) over every t with P(t) ≤ P(observed)·(1 + 1e−7): the exact two-sided p-value."""
    if not 0 <= observed < law.size:
        return 0.0
    return float(min(1.0, law[law <= law[observed] * (1 + RELATIVE_TOLERANCE)].sum()))


def stratified_pvalue(x: np.ndarray, n_a: np.ndarray, n_b: np.ndarray, s: np.ndarray) -> float:
    """Two-sided exact p-value of T = Σ x_i against the convolution of H(n_ai + n_bi, n_ai, s_i) over the pools
    (arrays of integers, one entry a pool); 1 when no pool informs (0 < s_i < n_ai + n_bi)."""
    inform = (n_a > 0) & (n_b > 0) & (s > 0) & (s < n_a + n_b)
    if not inform.any():
        return 1.0
    base = int(max(n_a.max(), n_b.max())) + 1  # pools sharing (n_a, n_b, s) share one code
    codes, repeats = np.unique((n_a[inform] * base + n_b[inform]) * base + s[inform], return_counts=True)
    strata = tuple((code // base // base, code // base % base, code % base, times)
                   for code, times in zip(codes.tolist(), repeats.tolist()))
    return two_sided(_null_laws.get(strata, lambda: null_law(strata)), int(x[inform].sum()))


def null_law(strata: tuple[tuple[int, int, int, int], ...]) -> np.ndarray:
    """The law of T under the null: the convolution over ``strata`` (n_a, n_b, s, pools) of each stratum's
    hypergeometric law to the power of its pools, normalised. Quotas, categories and groupings of one audit often
    share their strata, so :func:`stratified_pvalue` keeps these laws."""
    law = np.ones(1)
    for n_a, n_b, s, times in strata:
        law = convolve(law, power(hypergeometric(n_a, n_b, s), times))
    return law / law.sum()


def pair_pvalue(members: np.ndarray, selected: np.ndarray, a: int, b: int) -> float:
    """:func:`stratified_pvalue` of categories a and b from :func:`pool_tables`' members (pools, groups) and
    selected (pools, groups) at one quota (fractional shares rounded half to even)."""
    x, y = np.rint(selected[:, a]).astype(np.int64), np.rint(selected[:, b]).astype(np.int64)
    return stratified_pvalue(x, members[:, a], members[:, b], x + y)


def pair_errors(members: np.ndarray, selected: np.ndarray, a: int, b: int) -> tuple[float, float]:
    """(se of p_a − p_b, se of log(p_a / p_b)): pool-robust with two pools or more, binomial (Katz) with one."""
    n_a, n_b = members[:, a].sum(), members[:, b].sum()
    if n_a == 0 or n_b == 0:
        return math.nan, math.nan
    p_a, p_b = selected[:, a].sum() / n_a, selected[:, b].sum() / n_b
    pools = int(((members[:, a] > 0) | (members[:, b] > 0)).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        if pools < 2:
            var_diff = p_a * (1 - p_a) / n_a + p_b * (1 - p_b) / n_b
            var_log = (1 - p_a) / (n_a * p_a) + (1 - p_b) / (n_b * p_b)
        else:
            da, db = selected[:, a] - p_a * members[:, a], selected[:, b] - p_b * members[:, b]
            scale = pools / (pools - 1)
            var_diff = scale * ((da / n_a - db / n_b) ** 2).sum()
            var_log = scale * ((da / (p_a * n_a) - db / (p_b * n_b)) ** 2).sum()
    return float(np.sqrt(var_diff)), float(np.sqrt(var_log)) if p_a > 0 and p_b > 0 else math.nan


def katz_bounds(ratio: float, se_log: float, level: float) -> tuple[float, float]:
    """exp(log ratio ∓ z·se): the log interval of a ratio with standard error ``se_log`` of its log."""
    if not (np.isfinite(se_log) and ratio > 0):
        return math.nan, math.nan
    half = float(ndtri(0.5 + level / 2)) * se_log
    return ratio * math.exp(-half), ratio * math.exp(half)


def informing_units(members: np.ndarray, a: int, b: int) -> tuple[int, str]:
    """(the sample size the planner scales, its unit): the pools holding a or b (two or more), else the smaller
    category's applicants (one pool: applicants are the units)."""
    pools = int(((members[:, a] > 0) | (members[:, b] > 0)).sum())
    return (pools, "pools") if pools >= 2 else (int(min(members[:, a].sum(), members[:, b].sum())), "candidates")
