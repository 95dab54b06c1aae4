"""Anytime-valid monitoring of a deployed system's decisions, look after look (a look: one period's decisions).

**The evidence of one look** for categories a and b. Each pool of the look (a whole period of an unpooled 0/1 log is
one pool) holds n_a members of a and n_b of b, s of whom were selected for certain (a tied lottery at the quota
carries no information and is left out, as in :mod:`audit.metrics.exact`), x of them of a. Under the null (the
system treats a and b alike: the labels of a pool's a ∪ b members are exchangeable) x is hypergeometric, as in
Fisher's test. Against the alternative "a's odds of selection are ω times b's" x follows Fisher's noncentral
hypergeometric law, and the likelihood ratio of the two is ω^x / M(ω) with M(ω) = E₀[ω^X] (the hypergeometric
law's generating function). Its null expectation is 1 whatever the pool, so the product over a look's pools, and
over looks, is an e-process (a nonnegative martingale under the null).

**The detector.** A system fair for a year and biased since last month should raise an alarm within weeks, so the
evidence may not be read from the first look on: each look starts a new product, and the detector is the
Shiryaev–Roberts statistic R_t = (R_{t−1} + 1)·e_t (the sum of the products started at every look), averaged over a
grid of alternatives ω (:data:`ODDS`, both directions). Under the null R_t − t is a martingale, so by Ville's
inequality the chance that R ever reaches A within H looks is at most H / A: the alarm level
A = H · m / α gives, over a horizon of H looks and a family of m pairs, a chance of any false alarm of at most α
(Bonferroni over the family). Past the horizon the bound grows by α per H looks (the average run length of a fair
system is at least H/α looks).

**The alarm** of category a against its comparator b follows ``verdict``'s rule of practice: the detector of the pair
is at or above its level (the evidence) and the ratio of a's selection rate to b's over the last looks (the window)
is below the threshold (the size). Only the evidence can be raised by chance, so the bound above holds for the
alarms. The detector's exact guarantee needs no model of the rates: they may change from look to look.

**The band** of the cumulative ratio r = p_a / p_b is an asymptotic confidence sequence (Waudby-Smith et al.,
time-uniform central limit theory, 2024): Robbins' normal mixture on the log ratio, log r̂ ± √((v + ρ)(log((v + ρ)/ρ)
+ 2 log(1/α))) / v with v = 1 / Katz's variance of log r̂ (the information so far) and ρ = :data:`MIXTURE_PRECISION`;
it holds at every look at once as the counts grow.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import logsumexp

from audit.errors import AuditError
from audit.metrics.exact import hypergeometric

#: the alternatives mixed by the detector: odds ratios of a's selection against b's, both directions
ODDS = np.array([0.4, 0.55, 0.7, 1 / 0.7, 1 / 0.55, 1 / 0.4])
#: looks over which the chance of any false alarm is bounded (a year of weekly looks)
HORIZON = 52
#: looks whose pooled counts give the recent ratio that an alarm needs below the threshold
WINDOW = 4
#: ρ of the band's normal mixture: tightest near an information of ρ (a log-ratio variance of 1/ρ)
MIXTURE_PRECISION = 10.0


@dataclass(frozen=True)
class LookCounts:
    """One pair's counts at every look: per look a's and b's members and selected, and the arrays of the looks'
    pools (``look`` gives each pool's look, 0 … looks − 1)."""

    look: np.ndarray
    n_a: np.ndarray
    n_b: np.ndarray
    selected: np.ndarray
    x: np.ndarray
    looks: int

    def totals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(a's members, a's selected, b's members, b's selected) per look."""
        count = lambda values: np.bincount(self.look, values, minlength=self.looks)  # noqa: E731
        return count(self.n_a), count(self.x), count(self.n_b), count(self.selected - self.x)


def alarm_level(alpha: float, horizon: int = HORIZON, family: int = 1) -> float:
    """The detector's level A = horizon · family / α: any false alarm within ``horizon`` looks has chance ≤ α."""
    if not 0 < alpha < 1:
        raise AuditError(f"alpha {alpha} must lie strictly between 0 and 1")
    if horizon < 1 or family < 1:
        raise AuditError(f"the horizon ({horizon} looks) and the family ({family} pairs) must be at least 1")
    return horizon * family / alpha


@lru_cache(maxsize=65536)
def _log_generating(n_a: int, n_b: int, selected: int) -> np.ndarray:
    """log M(ω) = log E₀[ω^X] at every ω of :data:`ODDS` for X ~ H(n_a + n_b, n_a, selected)."""
    law = hypergeometric(n_a, n_b, selected)
    support = np.flatnonzero(law)
    return logsumexp(np.log(law[support])[None, :] + np.outer(np.log(ODDS), support), axis=1)


def log_evidence(counts: LookCounts) -> np.ndarray:
    """(looks, len(ODDS)): the log likelihood ratio of each look against the null, per alternative ω (0 for a look
    without an informative pool)."""
    informative = (counts.n_a > 0) & (counts.n_b > 0) & (counts.selected > 0) & (
        counts.selected < counts.n_a + counts.n_b)
    shapes = np.stack([counts.n_a, counts.n_b, counts.selected])[:, informative].astype(np.int64)
    distinct, inverse = np.unique(shapes, axis=1, return_inverse=True)
    generating = np.array([_log_generating(*map(int, shape)) for shape in distinct.T]).reshape(-1, ODDS.size)
    out = np.zeros((counts.looks, ODDS.size))
    np.add.at(out, counts.look[informative],
              counts.x[informative, None] * np.log(ODDS) - generating[inverse.ravel()])
    return out


def detector(log_e: np.ndarray) -> np.ndarray:
    """The Shiryaev–Roberts detector after each look, R_t = (R_{t−1} + 1)·e_t per alternative, averaged over them."""
    state = np.zeros(log_e.shape[1])
    out = np.empty(log_e.shape[0])
    for t, row in enumerate(np.exp(np.minimum(log_e, 700.0))):
        state = (state + 1.0) * row
        out[t] = state.mean()
    return out


def pooled_ratio(x_a: np.ndarray, n_a: np.ndarray, x_b: np.ndarray, n_b: np.ndarray) -> np.ndarray:
    """p_a / p_b of summed counts (NaN where a rate is undefined or b selected nobody)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (x_a / n_a) / (x_b / n_b)
    return np.where(np.isfinite(ratio), ratio, np.nan)


def window_ratio(x_a: np.ndarray, n_a: np.ndarray, x_b: np.ndarray, n_b: np.ndarray,
                 window: int = WINDOW) -> np.ndarray:
    """At each look, the ratio of the counts of the last ``window`` looks (fewer at the start)."""
    if window < 1:
        raise AuditError(f"the window ({window} looks) must be at least 1")
    summed = [np.convolve(values, np.ones(window))[:values.size] for values in (x_a, n_a, x_b, n_b)]
    return pooled_ratio(*summed)


def ratio_sequence(x_a: np.ndarray, n_a: np.ndarray, x_b: np.ndarray, n_b: np.ndarray, alpha: float,
                   precision: float = MIXTURE_PRECISION) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ratio, low, high) of the cumulative counts after each look: the asymptotic confidence sequence of the
    module (NaN bounds until both categories have a selection and a rejection)."""
    a_x, a_n, b_x, b_n = (np.cumsum(values, dtype=float) for values in (x_a, n_a, x_b, n_b))
    ratio = pooled_ratio(a_x, a_n, b_x, b_n)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = 1 / a_x - 1 / a_n + 1 / b_x - 1 / b_n
        information = np.where((a_x > 0) & (b_x > 0) & (a_x < a_n) & (b_x < b_n), 1 / variance, np.nan)
        radius = np.sqrt((information + precision) * (np.log((information + precision) / precision)
                                                      + 2 * math.log(1 / alpha))) / information
        log_ratio = np.log(ratio)
    return ratio, np.exp(log_ratio - radius), np.exp(log_ratio + radius)


@dataclass(frozen=True)
class PairWatch:
    """One pair's monitoring after each look: the looks' rates, the cumulative ratio and its band, the recent
    (window) ratio, the detector and its level, and the alarm."""

    rate_a: np.ndarray
    rate_b: np.ndarray
    ratio: np.ndarray
    ratio_lo: np.ndarray
    ratio_hi: np.ndarray
    recent: np.ndarray
    detector: np.ndarray
    level: float
    alarm: np.ndarray

    @property
    def first_alarm(self) -> int | None:
        """The first look with an alarm (None: never)."""
        raised = np.flatnonzero(self.alarm)
        return int(raised[0]) if raised.size else None


def watch_pair(counts: LookCounts, *, alpha: float = 0.05, threshold: float = 0.8, horizon: int = HORIZON,
               family: int = 1, window: int = WINDOW) -> PairWatch:
    """The monitoring of category a against b (the module's detector, band and alarm rule) after every look."""
    level = alarm_level(alpha, horizon, family)
    a_n, a_x, b_n, b_x = counts.totals()
    with np.errstate(invalid="ignore", divide="ignore"):
        rate_a, rate_b = a_x / a_n, b_x / b_n
    ratio, low, high = ratio_sequence(a_x, a_n, b_x, b_n, alpha)
    recent = window_ratio(a_x, a_n, b_x, b_n, window)
    evidence = detector(log_evidence(counts))
    return PairWatch(rate_a, rate_b, ratio, low, high, recent, evidence, level,
                     (evidence >= level) & (recent < threshold))
