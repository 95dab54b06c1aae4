"""A brute-force reference for the exact within-pool test, written apart from ``audit/metrics/exact.py``.

Everything is exact rational arithmetic (:class:`fractions.Fraction`): the chance of each applicant of being among
the top k of its pool with ties broken uniformly at random, and the null law of a group's summed chances when, within
every pool, the labels of two groups' members are exchangeable — enumerated subset by subset with
:func:`itertools.combinations` and convolved pool by pool. Slow on purpose: the point is to be obviously right.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from fractions import Fraction
from itertools import combinations
from typing import TypeVar

import numpy as np

TOLERANCE = Fraction(1) + Fraction(1, 10**7)  # two-sided: every outcome as likely as the observed one, up to this
Law = dict[Fraction, Fraction]
Key = TypeVar("Key", Fraction, float)
Ints = Sequence[int] | np.ndarray  # a pool id or group code per applicant
Numbers = Sequence[float] | np.ndarray  # a score, chance or recorded outcome per applicant


def exact(value: float | Fraction) -> Fraction:
    """A chance as a fraction: chances are rationals with small denominators, so a float is read as the nearest
    fraction whose denominator is at most 10**6 (1/3 stored as a float is 1/3 again)."""
    return value if isinstance(value, Fraction) else Fraction(float(value)).limit_denominator(10**6)


def members(pool: Ints) -> dict[int, list[int]]:
    """pool id → the row indices of its members, in row order."""
    found: dict[int, list[int]] = defaultdict(list)
    for row, p in enumerate(pool):
        found[int(p)].append(row)
    return dict(found)


def quota_chances(pool: Ints, score: Numbers, k: int) -> list[Fraction]:
    """Per applicant, the chance of being among the top ``k`` of its pool by score (higher first), ties broken
    uniformly at random: the ``slots = clip(k - above, 0, tied)`` places left to the applicant's tie block go to a
    uniformly random subset of the block, so the chance is (subsets of the block holding it) / (subsets)."""
    score = [Fraction(float(s)) for s in score]
    chance = [Fraction(0)] * len(score)
    for rows in members(pool).values():
        for i in rows:
            above = sum(score[j] > score[i] for j in rows)
            tied = sum(score[j] == score[i] for j in rows)  # the block, i included
            slots = min(max(k - above, 0), tied)
            chance[i] = Fraction(math.comb(tied - 1, slots - 1), math.comb(tied, slots)) if slots else Fraction(0)
    return chance


def pool_law(chances: list[Fraction], n_a: int) -> Law:
    """The law of the summed chances of ``n_a`` members drawn without replacement from ``chances`` (every subset of
    that size equally likely), by enumerating the subsets."""
    counts = Counter(sum(subset, Fraction(0)) for subset in combinations(chances, n_a))
    total = math.comb(len(chances), n_a)
    return {t: Fraction(n, total) for t, n in counts.items()}


def convolve(first: Law, second: Law) -> Law:
    """The law of the sum of two independent variables."""
    out: Law = defaultdict(Fraction)
    for s, p in first.items():
        for t, q in second.items():
            out[s + t] += p * q
    return dict(out)


def strata(pool: Ints, group: Ints, a: int, b: int) -> list[tuple[list[int], int]]:
    """Per pool: (the rows of its a ∪ b members, how many of them are a's)."""
    out = []
    for rows in members(pool).values():
        pair = [i for i in rows if int(group[i]) in (a, b)]
        out.append((pair, sum(int(group[i]) == a for i in pair)))
    return out


def within_pool_law(pool: Ints, group: Ints, chance: Numbers, a: int, b: int) -> Law:
    """The exact null law of T = Σ chance over a's members: within every pool every choice of which of its a ∪ b
    members carry label a is equally likely, pools independent."""
    law: Law = {Fraction(0): Fraction(1)}
    for rows, n_a in strata(pool, group, a, b):
        law = convolve(law, pool_law([exact(chance[i]) for i in rows], n_a))
    return law


def observed(group: Ints, chance: Numbers, a: int) -> Fraction:
    """T as recorded: the summed chances of a's members."""
    return sum((exact(c) for g, c in zip(group, chance) if int(g) == a), Fraction(0))


def two_sided(law: Mapping[Key, Fraction], t_obs: Key) -> Fraction:
    """Σ P(t) over every t no more likely than the observed one (relative tolerance 1e-7), capped at 1."""
    cut = law.get(t_obs, Fraction(0)) * TOLERANCE
    return min(Fraction(1), sum((p for p in law.values() if p <= cut), Fraction(0)))


def tested(pool: Ints, group: Ints, a: int, b: int) -> bool:
    """Whether some pool holds both an a and a b member (else there is nothing to test)."""
    return any(0 < n_a < len(rows) for rows, n_a in strata(pool, group, a, b))


def within_pool_pvalue(pool: Ints, group: Ints, chance: Numbers, a: int, b: int) -> float:
    """The two-sided exact p-value of T = Σ chance over a's members; NaN when no pool holds both an a and a b (the
    two are not comparable within pools)."""
    if not tested(pool, group, a, b):
        return math.nan
    return float(two_sided(within_pool_law(pool, group, chance, a, b), observed(group, chance, a)))


def subset_count(pool: Ints, group: Ints, a: int, b: int) -> int:
    """How many subsets the enumeration visits: Σ over pools of C(|a ∪ b|, n_a) (the convolution is cheap)."""
    return sum(math.comb(len(rows), n_a) for rows, n_a in strata(pool, group, a, b))


def monte_carlo_pvalue(pool: Ints, group: Ints, chance: Numbers, a: int, b: int, *, draws: int = 20_000,
                       seed: int = 0) -> tuple[float, float]:
    """(p, standard error) of the same two-sided test, the law of T estimated from ``draws`` seeded within-pool
    permutations of the a/b labels (for designs too big to enumerate). Only for a coarse law (0/1 or half chances):
    where T takes thousands of values, each one's probability is too noisy to decide which are as likely as t_obs."""
    if not tested(pool, group, a, b):
        return math.nan, 0.0
    rng = np.random.default_rng(seed)
    total = np.zeros(draws)
    for rows, n_a in strata(pool, group, a, b):
        labels = np.tile(np.arange(len(rows)) < n_a, (draws, 1))
        total += rng.permuted(labels, axis=1) @ np.array([float(chance[i]) for i in rows])
    values, counts = np.unique(np.round(total, 9), return_counts=True)
    law = {float(v): Fraction(int(n), draws) for v, n in zip(values, counts)}
    p = float(two_sided(law, round(float(observed(group, chance, a)), 9)))
    return p, math.sqrt(p * (1 - p) / draws)


def recorded_selection(outcome: str, values: Numbers, k: int | None = None) -> list[int]:
    """What a decision log of one system and subtask selects: ``rank`` (1 = first in its pool, so already within
    pools) → rank ≤ k; ``selected`` → the recorded 0/1 (no quota); ``score`` → strictly above the median of all its
    values (no quota, ties at the median not selected)."""
    values = [float(v) for v in values]
    if outcome == "rank":
        return [int(v <= k) for v in values]
    if outcome == "selected":
        return [int(v) for v in values]
    if outcome == "score":
        median = float(np.median(values))
        return [int(v > median) for v in values]
    raise ValueError(f"unknown outcome {outcome!r}")
