"""Tests and intervals that follow a recorded design: pools whose members compete for the same places.

**The decisions.** Each applicant of a recorded pool has a chance of being selected: 1 or 0 for a recorded decision
(the top k of a recorded ranking, a 0/1 decision, a score above the sample's median), and a fraction only where a
quota k cuts through members tied at the k-th place: then the tied members share the remaining places by a fair
lottery, each with the same chance m/d (the quota rule of :mod:`audit.metrics.pools`). :class:`PoolCounts` sums
these per pool and group: members, expected selected, selected for certain, and in the lottery.

**Exact conditional test, stratified by pool.** For categories a and b, pool i holds n_ai members of a and n_bi of
b. Under the null (the system treats a and b alike) the labels of the pool's a ∪ b members are exchangeable: every
choice of which n_ai of them carry label a is equally likely, whatever each member's chance. The statistic is
T = Σ_i x_i with x_i the summed chances of a's members (their expected number selected). Of the pool's a ∪ b members
c_i are selected for certain, t_i are in its lottery (chance f_i = m_i/d_i) and the rest are not selected, so
x_i = I_i + f_i·J_i where (I_i, J_i) — a's members among the certain and among the tied — is multivariate
hypergeometric: I_i ~ H(n_ai + n_bi, n_ai, c_i) and J_i | I_i ~ H(n_ai + n_bi − c_i, n_ai − I_i, t_i). Without a
lottery this is the hypergeometric law of Fisher's test. The law of T is the convolution over pools, exact on the
lattice of multiples of 1/D (D: the least common multiple of the lotteries' denominators; D = 1 without ties). Pools
are keyed on (n_a, n_b, c, t, m, d) itself, and pools sharing a key are convolved as one power, by repeated squaring.
Pools where a or b is absent, or whose a ∪ b members all have the same chance (all selected, none, or all in one
lottery), carry no information and are left out. The two-sided p-value sums the probabilities of every value no
more likely than the observed T (relative tolerance 1e−7, as Fisher's exact test and ``scipy.stats.binomtest`` do).
With one pool this *is* Fisher's exact test; with pools of one applicant per category at k = 1 it is the exact
binomial (sign) test on the pools where a or b was picked; a log where everyone is tied gives p = 1. A lattice of
more than :data:`MAX_LAW_CELLS` values (many different lotteries) is not built: the p-value is then estimated from
:data:`SAMPLED_DRAWS` seeded draws of the same null law (two-sided by distance from its mean).

**Interval of the pairwise ratio** r = p_a / p_b (p: selection rate = selected ÷ members): Katz's log interval
exp(log r ± z·se) with a pool-robust (sandwich) standard error, se² = P/(P − 1)·Σ_i u_i² with
u_i = (x_ai − p_a n_ai)/(p_a N_a) − (x_bi − p_b n_bi)/(p_b N_b) (N: members over all P pools), so the negative
correlation of two categories competing in one pool is counted; with a single pool (an unpooled decision log) the
applicants are independent and se² is Katz's (1 − p_a)/(N_a p_a) + (1 − p_b)/(N_b p_b). The standard error of the
difference p_a − p_b is made the same way (u_i without the division by the rates).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np
from numpy._core.multiarray import correlate as _correlate  # np.convolve's kernel (it flips the shorter array)
from scipy.special import ndtri  # norm.ppf's own kernel: imports fast, scipy.stats does not

from audit.design import PoolDesign
from audit.errors import AuditError
from audit.metrics.keys import KeyData
from audit.metrics.memo import ArrayCache
from audit.metrics.pools import pool_index, quota_fractions

#: relative tolerance of "no more likely than the observed statistic" (as in Fisher's and the binomial test)
RELATIVE_TOLERANCE = 1e-7
#: the longest null law built exactly; beyond it the p-value is estimated from seeded draws of the same law
MAX_LAW_CELLS = 20_000_000
SAMPLED_DRAWS = 20_000
_DIRECT_CELLS = 20_000_000  # longer convolutions go through the FFT
_null_laws = ArrayCache(64 * 2**20)  # null laws by their strata (see null_law)
_ONE = np.ones(1)


@dataclass(frozen=True)
class PoolCounts:
    """One quota's decisions summed per recorded pool: ``members``, ``certain`` (selected for sure) and ``tied`` (in
    the pool's lottery) as integers (pools, groups), ``selected`` the expected number selected (float, pools ×
    groups) and ``lottery`` each pool's lottery chance as a reduced fraction (pools, 2: numerator, denominator;
    0/1 where the pool has none)."""

    members: np.ndarray
    selected: np.ndarray
    certain: np.ndarray
    tied: np.ndarray
    lottery: np.ndarray

    @classmethod
    def of(cls, pool: np.ndarray, group: np.ndarray, numerator: np.ndarray, denominator: np.ndarray,
           shape: tuple[int, int]) -> "PoolCounts":
        """The counts of applicants in ``pool`` (0 … pools − 1) and ``group`` (0 … groups − 1), ``shape`` =
        (pools, groups), each selected with chance ``numerator / denominator`` (integers; one lottery chance per
        pool)."""
        size = shape[0] * shape[1]
        cell = pool * shape[1] + group
        count = lambda weights=None: np.bincount(cell, weights, minlength=size).reshape(shape)
        lottery = (numerator > 0) & (numerator < denominator)
        members = count()
        certain = np.rint(count(numerator >= denominator)).astype(np.int64)
        tied = np.rint(count(lottery)).astype(np.int64)
        fraction = np.tile(np.array([0, 1], dtype=np.int64), (shape[0], 1))
        if lottery.any():
            divisor = np.gcd(numerator[lottery], denominator[lottery])
            reduced = np.stack([numerator[lottery] // divisor, denominator[lottery] // divisor], axis=1)
            at = pool[lottery]
            fraction[at] = reduced
            if (fraction[at] != reduced).any():
                raise AuditError("a pool's lottery must give every tied member the same chance")
        return cls(members, count(numerator / denominator), certain, tied, fraction)

    @classmethod
    def decided(cls, members: np.ndarray, selected: np.ndarray) -> "PoolCounts":
        """Counts of 0/1 decisions (no lottery) from ``members`` and whole ``selected`` numbers (pools × groups)."""
        whole = np.rint(selected).astype(np.int64)
        if np.abs(selected - whole).max(initial=0) > 1e-9:
            raise AuditError("0/1 decisions must select whole numbers of applicants")
        return cls(members.astype(np.int64), selected.astype(float), whole, np.zeros_like(whole),
                   np.tile(np.array([0, 1], dtype=np.int64), (len(members), 1)))


def pool_tables(data: KeyData, design: PoolDesign, quotas: list[int],
                qualified_only: bool = False) -> list[PoolCounts]:
    """Each recorded pool's decisions at every quota of ``quotas`` (one :class:`PoolCounts` each): the top k of the
    pool, a lottery among members tied at the k-th place, or the recorded decision of a quota-free system (see
    :func:`audit.metrics.pools.quota_fractions`); with ``qualified_only``, qualified members only (selection still
    among the whole pool: ΔEO's comparison)."""
    del design  # recorded pools only: the quota rule reads the pools themselves
    pools = pool_index(data)
    keep = data.qualified if qualified_only else np.ones(pools.size, dtype=bool)
    shape = (int(pools.max()) + 1, len(data.groups))
    out = []
    for k in quotas:
        numerator, denominator = quota_fractions(data, k)
        out.append(PoolCounts.of(pools[keep], data.group[keep], numerator[keep], denominator[keep], shape))
    return out


def gap_pvalues(data: KeyData, design: PoolDesign) -> dict[str, np.ndarray]:
    """``dp_gap_p`` and ``eo_gap_p`` (groups, L) for recorded pools: the exact test stratified by pool of each group
    against the reference at k = 1 … L (ΔEO over qualified members); NaN for the reference. The gaps' counterpart of
    the verdict's test: a shuffle of labels across pools would ignore that members of one pool compete."""
    quotas = list(range(1, int(np.bincount(pool_index(data)).max()) + 1))
    out = {}
    for name, qualified_only in (("dp_gap_p", False), ("eo_gap_p", True)):
        tables = pool_tables(data, design, quotas, qualified_only)
        p = np.full((len(data.groups), len(quotas)), np.nan)
        for g in (g for g in range(len(data.groups)) if g != data.ref):
            p[g] = [pair_pvalue(counts, g, data.ref) for counts in tables]
        out[name] = p
    return out


def within_pool_pvalue(pool: np.ndarray, group: np.ndarray, chance: np.ndarray, a: int, b: int) -> float:
    """The exact test of groups ``a`` and ``b`` from one row per applicant: its ``pool`` and ``group`` (integers)
    and its ``chance`` of being selected (0/1, or a lottery's m/d with d at most the pool's size; one lottery chance
    per pool)."""
    pool, group = np.asarray(pool), np.asarray(group)
    codes, pools = np.unique(pool, return_inverse=True)
    size = int(np.bincount(pools).max())
    fractions = {value: Fraction(value).limit_denominator(size) for value in np.unique(chance).tolist()}
    numerator = np.array([fractions[c].numerator for c in np.asarray(chance).tolist()], dtype=np.int64)
    denominator = np.array([fractions[c].denominator for c in np.asarray(chance).tolist()], dtype=np.int64)
    shape = (codes.size, int(max(group.max(), a, b)) + 1)
    return pair_pvalue(PoolCounts.of(pools, group, numerator, denominator, shape), a, b)


def shares_a_pool(counts: PoolCounts, a: int, b: int) -> bool:
    """Whether some pool of ``counts`` holds members of both ``a`` and ``b`` (else their rates come from different
    pools and no within-pool comparison exists)."""
    return bool(((counts.members[:, a] > 0) & (counts.members[:, b] > 0)).any())


def pair_pvalue(counts: PoolCounts, a: int, b: int) -> float:
    """Two-sided exact p-value of equal selection of categories ``a`` and ``b`` within the pools of ``counts`` (see
    the module); 1 when no shared pool informs, NaN when the two never share a pool (not comparable)."""
    return float(pair_pvalues(counts, np.zeros(len(counts.members), dtype=np.int64), 1, a, b)[0])


def pair_pvalues(counts: PoolCounts, segment: np.ndarray, count: int, a: int, b: int) -> np.ndarray:
    """(count,): :func:`pair_pvalue` of ``a`` and ``b`` in each segment of the pools of ``counts`` (``segment``:
    each pool's segment, non-decreasing, 0 … count − 1: e.g. the systems whose pools are stacked), in one pass."""
    n_a, n_b = counts.members[:, a], counts.members[:, b]
    present = (n_a > 0) & (n_b > 0)
    out = np.where(np.bincount(segment[present], minlength=count) > 0, 1.0, math.nan)
    certain, tied = counts.certain[:, a] + counts.certain[:, b], counts.tied[:, a] + counts.tied[:, b]
    both = n_a + n_b
    inform = present & (certain + tied > 0) & (certain < both) & (tied < both)
    if not inform.any():
        return out
    has_lottery = tied[inform] > 0
    numerator = np.where(has_lottery, counts.lottery[inform, 0], 0)
    denominator = np.where(has_lottery, counts.lottery[inform, 1], 1)
    keys = np.stack([segment[inform], n_a[inform], n_b[inform], certain[inform], tied[inform], numerator,
                     denominator], axis=1)
    rows, times = distinct_rows(keys)
    starts = np.flatnonzero(np.r_[True, rows[1:, 0] != rows[:-1, 0]])
    segments = rows[starts, 0]
    lottery = np.maximum.reduceat(rows[:, 6], starts) > 1  # else the lattice is the integers (D = 1)
    plain = 1 + np.add.reduceat(times * np.minimum(rows[:, 1], rows[:, 3]), starts)  # law_cells where D = 1
    selected = segment_sums(counts.selected[inform, a], segment[inform], count)[segments]
    ends = np.r_[starts[1:], len(rows)].tolist()
    # (n_a, n_b, c, t, m, d, pools) per stratum, as tuples made column by column (no list per row)
    strata_rows = list(zip(*(column.tolist() for column in rows[:, 1:].T), times.tolist()))
    for s, start, end, lot, cells, x in zip(segments.tolist(), starts.tolist(), ends, lottery.tolist(),
                                            plain.tolist(), selected.tolist()):
        strata = tuple(strata_rows[start:end])
        scale = math.lcm(*(stratum[5] for stratum in strata)) if lot else 1
        observed = int(round(x * scale))
        out[s] = (sampled_pvalue(strata, observed) if (law_cells(strata) if lot else cells) > MAX_LAW_CELLS else
                  two_sided(_null_laws.get(strata, lambda: null_law(strata, scale)), observed))
    return out


def segment_sums(values: np.ndarray, segment: np.ndarray, count: int) -> np.ndarray:
    """(count,): the sum of ``values`` within each segment (``segment``: non-decreasing, 0 … count − 1; 0 where
    empty), each summed as NumPy sums that segment alone (pairwise), so a stacked pass gives every segment's sum to
    the last bit of its own pass."""
    lengths = np.bincount(segment, minlength=count)
    starts = np.cumsum(lengths) - lengths
    out = np.zeros(count, dtype=values.dtype)
    for length in np.unique(lengths[lengths > 0]).tolist():
        chosen = np.flatnonzero(lengths == length)
        out[chosen] = values[starts[chosen, None] + np.arange(length)].sum(axis=1)
    return out


def distinct_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct rows of the non-negative integer array ``keys``, sorted, and how often each occurs): each row
    packed into one integer with its own base per column (``np.ravel_multi_index``) where the product of the bases
    fits, ``np.unique`` over rows (slower) otherwise."""
    bases = tuple(int(b) for b in keys.max(axis=0) + 1)
    if math.prod(bases) >= 2**62:
        return np.unique(keys, axis=0, return_counts=True)
    codes, times = np.unique(np.ravel_multi_index(tuple(keys.T), bases), return_counts=True)
    return np.stack(np.unravel_index(codes, bases), axis=1), times


def stratified_pvalue(x: np.ndarray, n_a: np.ndarray, n_b: np.ndarray, s: np.ndarray) -> float:
    """:func:`pair_pvalue` of whole decisions given per pool: ``x`` of a's ``n_a`` members and ``s − x`` of b's
    ``n_b`` selected (arrays of integers, one entry a pool)."""
    members = np.stack([n_a, n_b], axis=1)
    return pair_pvalue(PoolCounts.decided(members, np.stack([x, s - x], axis=1).astype(float)), 0, 1)


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


def stratum_law(n_a: int, n_b: int, certain: int, tied: int, numerator: int, denominator: int,
                scale: int) -> np.ndarray:
    """The law of one pool's x = I + (m/d)·J on the lattice of multiples of 1/``scale`` (index = x·scale): I of
    a's members among the ``certain``, J among the ``tied`` (see the module)."""
    first = hypergeometric(n_a, n_b, certain)
    if tied == 0:
        law = np.zeros((first.size - 1) * scale + 1)
        law[::scale] = first
        return law
    step = numerator * scale // denominator
    law = np.zeros((first.size - 1) * scale + min(n_a, tied) * step + 1)
    rest = n_a + n_b - certain
    for i in np.flatnonzero(first).tolist():
        second = hypergeometric(n_a - i, rest - (n_a - i), tied)
        law[i * scale + np.arange(second.size) * step] += first[i] * second
    return law


def law_cells(strata: tuple[tuple[int, ...], ...]) -> int:
    """The length of the null law of ``strata`` (n_a, n_b, c, t, m, d, pools) on its lattice."""
    scale = math.lcm(*(stratum[5] for stratum in strata))
    return 1 + sum(times * (min(n_a, c) * scale + min(n_a, t) * m * scale // d)
                   for n_a, _, c, t, m, d, times in strata)


def null_law(strata: tuple[tuple[int, ...], ...], scale: int | None = None) -> np.ndarray:
    """The law of T under the null on its lattice (index = T·D): the convolution over ``strata`` (n_a, n_b, c, t,
    m, d, pools) of each stratum's law to the power of its pools, normalised. Whole strata are convolved first on
    the integers and spread onto the lattice once. Quotas, categories and groupings of one audit often share their
    strata, so :func:`pair_pvalue` keeps these laws. ``scale``: D, when the caller knows it."""
    scale = scale or math.lcm(*(stratum[5] for stratum in strata))
    whole, lotteries = _ONE, _ONE  # the law of no pools (convolving with it changes no bit: skipped)
    for n_a, n_b, certain, tied, numerator, denominator, times in strata:
        if tied == 0:
            law = stratum_power(n_a, n_b, certain, 0, 0, 1, 1, times)
            whole = law if whole is _ONE else convolve(whole, law)
        else:
            law = stratum_power(n_a, n_b, certain, tied, numerator, denominator, scale, times)
            lotteries = law if lotteries is _ONE else convolve(lotteries, law)
    if scale == 1:
        spread = whole
    else:
        spread = np.zeros((whole.size - 1) * scale + 1)
        spread[::scale] = whole
    law = convolve(spread, lotteries) if lotteries.size > 1 else spread
    return law / law.sum()


@lru_cache(maxsize=16384)
def stratum_power(n_a: int, n_b: int, certain: int, tied: int, numerator: int, denominator: int, scale: int,
                  times: int) -> np.ndarray:
    """The law of ``times`` pools of one stratum on the lattice of multiples of 1/``scale`` (cached: strata recur
    across the pairs, quotas and systems of an audit; read-only)."""
    law = power(stratum_law(n_a, n_b, certain, tied, numerator, denominator, scale), times)
    law.flags.writeable = False
    return law


def sampled_pvalue(strata: tuple[tuple[int, ...], ...], observed: int, draws: int = SAMPLED_DRAWS,
                   seed: int = 0) -> float:
    """The two-sided p-value of ``observed`` (on the lattice) estimated from ``draws`` seeded draws of the null law
    of ``strata``: the share of draws at least as far from the law's mean, (hits + 1)/(draws + 1)."""
    scale = math.lcm(*(stratum[5] for stratum in strata))
    rng = np.random.default_rng(seed)
    total, mean = np.zeros(draws), 0.0
    for n_a, n_b, certain, tied, numerator, denominator, times in strata:
        law = stratum_law(n_a, n_b, certain, tied, numerator, denominator, scale)
        values = np.flatnonzero(law)
        chances = law[values] / law[values].sum()
        total += rng.multinomial(times, chances, size=draws) @ values
        mean += times * float(chances @ values)
    far = np.abs(total - mean) >= abs(observed - mean) - 0.5
    return float((far.sum() + 1) / (draws + 1))


def convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The law of the sum of two independent counts with laws ``a`` and ``b`` (direct while small, so tiny tail
    probabilities keep their relative precision; FFT beyond, negative rounding clipped)."""
    if a.size * b.size <= _DIRECT_CELLS:  # np.convolve's own kernel and steps, without its checks of the input
        return _correlate(a, b[::-1], "full") if a.size >= b.size else _correlate(b, a[::-1], "full")
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


@dataclass(frozen=True)
class PairPools:
    """Categories a and b per pool: members (``n_a``, ``n_b``, integers) and expected selected (``x_a``, ``x_b``),
    the pools of ``count`` comparisons stacked, ``segment`` saying whose (non-decreasing, 0 … count − 1)."""

    n_a: np.ndarray
    n_b: np.ndarray
    x_a: np.ndarray
    x_b: np.ndarray
    segment: np.ndarray
    count: int

    @classmethod
    def of(cls, members: np.ndarray, selected: np.ndarray, a: int, b: int) -> "PairPools":
        """One comparison: columns ``a`` and ``b`` of ``members`` and ``selected`` (pools × groups)."""
        return cls(members[:, a], members[:, b], selected[:, a], selected[:, b],
                   np.zeros(len(members), dtype=np.int64), 1)

    def sums(self, values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """(count,): ``values`` (one per pool, or per pool of ``mask``) summed within each comparison."""
        return segment_sums(values, self.segment if mask is None else self.segment[mask], self.count)

    def pools(self, present: np.ndarray) -> np.ndarray:
        """(count,): how many pools of each comparison are ``present``."""
        return np.bincount(self.segment[present], minlength=self.count)


def pair_errors(members: np.ndarray, selected: np.ndarray, a: int, b: int) -> tuple[float, float]:
    """(se of p_a − p_b, se of log(p_a / p_b)): pool-robust with two pools or more, binomial (Katz) with one."""
    diff, log = pair_errors_of(PairPools.of(members, selected, a, b))
    return float(diff[0]), float(log[0])


def pair_errors_of(pairs: PairPools) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pair_errors` of every comparison of ``pairs``: (se of the difference, se of the log ratio), each
    (count,)."""
    n_a, n_b = pairs.sums(pairs.n_a), pairs.sums(pairs.n_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_a, p_b = pairs.sums(pairs.x_a) / n_a, pairs.sums(pairs.x_b) / n_b
        pools = pairs.pools((pairs.n_a > 0) | (pairs.n_b > 0))
        var_diff = p_a * (1 - p_a) / n_a + p_b * (1 - p_b) / n_b
        var_log = (1 - p_a) / (n_a * p_a) + (1 - p_b) / (n_b * p_b)
        at = pairs.segment
        da, db = pairs.x_a - p_a[at] * pairs.n_a, pairs.x_b - p_b[at] * pairs.n_b
        scale = pools / (pools - 1)
        pooled = pools >= 2
        var_diff = np.where(pooled, scale * pairs.sums((da / n_a[at] - db / n_b[at]) ** 2), var_diff)
        var_log = np.where(pooled, scale * pairs.sums((da / (p_a * n_a)[at] - db / (p_b * n_b)[at]) ** 2), var_log)
        empty = (n_a == 0) | (n_b == 0)
        return (np.where(empty, math.nan, np.sqrt(var_diff)),
                np.where(empty | ~((p_a > 0) & (p_b > 0)), math.nan, np.sqrt(var_log)))


def mantel_haenszel(counts: PoolCounts, a: int, b: int, level: float) -> tuple[float, float, float]:
    """(ratio, lower, upper): the pool-adjusted ratio of a's selection rate to b's, Mantel–Haenszel's common risk
    ratio over the pools holding both, R = Σ x_a n_b / N ÷ Σ x_b n_a / N (N = n_a + n_b of the pool), with the
    Greenland–Robins variance of log R, Var = Σ (n_a n_b (x_a + x_b) − x_a x_b N)/N² ÷ (Σ x_a n_b/N · Σ x_b n_a/N).
    It compares a and b within the same pools, so a difference in pool make-up between the two does not enter it;
    NaN where the two share no pool or the ratio is 0 or undefined."""
    return tuple(float(v[0]) for v in mantel_haenszel_of(PairPools.of(counts.members, counts.selected, a, b), level))


def mantel_haenszel_of(pairs: PairPools, level: float) -> np.ndarray:
    """(3, count): :func:`mantel_haenszel`'s (ratio, lower, upper) of every comparison of ``pairs``."""
    both = (pairs.n_a > 0) & (pairs.n_b > 0)
    n_a, n_b = pairs.n_a[both].astype(float), pairs.n_b[both].astype(float)
    x_a, x_b = pairs.x_a[both], pairs.x_b[both]
    total = n_a + n_b
    top, bottom = pairs.sums(x_a * n_b / total, both), pairs.sums(x_b * n_a / total, both)
    out = np.full((3, pairs.count), math.nan)
    fine = (pairs.pools(both) > 0) & (top > 0) & (bottom > 0)
    if not fine.any():
        return out
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = pairs.sums((n_a * n_b * (x_a + x_b) - x_a * x_b * total) / total**2, both) / (top * bottom)
        ratio = top / bottom
        out[0, fine] = ratio[fine]
        out[1:, fine] = katz_bounds_of(ratio[fine], np.sqrt(np.maximum(variance[fine], 0.0)), level)
    return out


def katz_bounds(ratio: float, se_log: float, level: float, upper: float | None = None) -> tuple[float, float]:
    """exp(log ratio ∓ z·se): the log interval of a ratio with standard error ``se_log`` of its log, the upper bound
    at level ``upper`` when given (else ``level``)."""
    low, high = katz_bounds_of(np.array([ratio], dtype=float), np.array([se_log], dtype=float), level, upper)
    return float(low[0]), float(high[0])


def katz_bounds_of(ratio: np.ndarray, se_log: np.ndarray, level: float, upper: float | None = None) -> np.ndarray:
    """(2, n): :func:`katz_bounds` of each ratio and its standard error (``math.exp`` per value: NumPy's vectorised
    exp may differ in the last bit)."""
    out = np.full((2, ratio.size), math.nan)
    fine = np.isfinite(se_log) & (ratio > 0)
    z_low = float(ndtri(0.5 + level / 2)) * se_log[fine]
    z_high = float(ndtri(0.5 + (level if upper is None else upper) / 2)) * se_log[fine]
    out[0, fine] = [r * math.exp(-z) for r, z in zip(ratio[fine].tolist(), z_low.tolist())]
    out[1, fine] = [r * math.exp(z) for r, z in zip(ratio[fine].tolist(), z_high.tolist())]
    return out


def informing_units(members: np.ndarray, a: int, b: int) -> tuple[int, str]:
    """(the sample size the planner scales, its unit): the pools holding a or b (two or more), else the smaller
    category's applicants (one pool: applicants are the units)."""
    units, unit = informing_units_of(PairPools.of(members, members.astype(float), a, b))
    return int(units[0]), str(unit[0])


def informing_units_of(pairs: PairPools) -> tuple[np.ndarray, np.ndarray]:
    """:func:`informing_units` of every comparison of ``pairs``: (units, unit names), each (count,)."""
    pools = pairs.pools((pairs.n_a > 0) | (pairs.n_b > 0))
    smaller = np.minimum(pairs.sums(pairs.n_a), pairs.sums(pairs.n_b))
    return (np.where(pools >= 2, pools, smaller),
            np.where(pools >= 2, "pools", "candidates").astype(object))
