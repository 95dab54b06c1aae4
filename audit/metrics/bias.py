"""Bias metrics between the scores of a group A and a reference group B (paper sections 3.1 and 4.3, Appendix A)."""
from __future__ import annotations

import numpy as np
from scipy.special import binom, ndtr, rel_entr

from audit.errors import AuditError


def _scores(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float).ravel()
    if array.size == 0:
        raise AuditError(f"scores of group {name} are empty")
    if not np.isfinite(array).all():
        raise AuditError(f"scores of group {name} contain NaN or infinite values")
    return array


def delta(a, b) -> float:
    """Average performance gap δ(A, B) = (1/|A|) Σ_{a∈A} s_a − (1/|B|) Σ_{b∈B} s_b (pointwise)."""
    return float(_scores(a, "A").mean() - _scores(b, "B").mean())


STURGES = "sturges"
Bins = "int | str"


def sturges(n: "int | np.ndarray") -> "int | np.ndarray":
    """Sturges' bin count for a pooled sample of ``n`` scores: ⌈log₂ n⌉ + 1 (at least 1)."""
    return np.maximum(np.ceil(np.log2(np.maximum(n, 1))).astype(int) + 1, 1)


def bin_count(bins: Bins, n: int) -> int:
    """``bins`` itself, or Sturges' count for ``n`` pooled scores when ``bins`` is ``"sturges"``."""
    if bins == STURGES:
        return int(sturges(n))
    if isinstance(bins, (int, np.integer)) and bins >= 1:
        return int(bins)
    raise AuditError(f"JSD bins {bins!r} must be a positive whole number or {STURGES!r}")


def histograms(a, b, *, bins: Bins = STURGES) -> tuple[np.ndarray, np.ndarray]:
    """Probability vectors of A's and B's scores on a shared binning derived from the pooled range of A ∪ B.

    The bin count is Sturges' rule on the pooled sample, ⌈log₂(|A| + |B|)⌉ + 1 (or ``bins`` when a number is
    given). If A ∪ B holds at most that many distinct values (Yes/No-only scores, grades 1..5, pairwise sums), each
    distinct value is its own bin (the exact discrete distributions); otherwise that many equal-width bins span
    [min(A ∪ B), max(A ∪ B)], the last bin closed. So tens of continuous scores share bins — JSD stays below 1 unless
    the groups truly separate — and the binning does not depend on the score scale.
    """
    a, b = _scores(a, "A"), _scores(b, "B")
    count = bin_count(bins, a.size + b.size)
    pooled = np.unique(np.concatenate([a, b]))
    if pooled.size <= count:
        p = np.bincount(np.searchsorted(pooled, a), minlength=pooled.size)
        q = np.bincount(np.searchsorted(pooled, b), minlength=pooled.size)
    else:
        edges = np.linspace(pooled[0], pooled[-1], count + 1)
        p, q = np.histogram(a, edges)[0], np.histogram(b, edges)[0]
    return p / a.size, q / b.size


def jsd(a, b, *, bins: Bins = STURGES) -> float:
    """Jensen–Shannon divergence in bits, JSD(P‖Q) = ½ KL(P‖M) + ½ KL(Q‖M), M = ½(P + Q), in [0, 1].

    P and Q are the binned score distributions of A and B (see :func:`histograms` for the binning).
    """
    p, q = histograms(a, b, bins=bins)
    m = (p + q) / 2
    return float((rel_entr(p, m).sum() + rel_entr(q, m).sum()) / (2 * np.log(2)))


def jsd_paper_code(a, b, *, bins: int = 10) -> float:
    """JSD as the RABBI paper's code estimates it (the ``paper-exact`` preset), in nats, in [0, ln 2].

    ``bins`` equal-width bins span A's range only ([min A, max A]; a constant A gets [A − ½, A + ½]); P and Q are
    the bin counts of A and of B divided by |A| and |B| (B's scores outside A's range fall in no bin); only the bins
    where both P and Q are non-zero are kept, and JSD = ½ Σ P ln(P/M) + ½ Σ Q ln(Q/M), M = ½(P + Q), over them
    (0 when no bin is shared). Unlike :func:`jsd`, the result depends on which group is A.
    """
    a, b = _scores(a, "A"), _scores(b, "B")
    edges = np.histogram_bin_edges(a, bins)
    p, q = np.histogram(a, edges)[0] / a.size, np.histogram(b, edges)[0] / b.size
    shared = (p > 0) & (q > 0)
    p, q = p[shared], q[shared]
    m = (p + q) / 2
    return float((rel_entr(p, m).sum() + rel_entr(q, m).sum()) / 2)


def emd(a, b) -> float:
    """Earth mover's distance: the 1-D Wasserstein-1 distance ∫ |F_A(s) − F_B(s)| ds between the score distributions
    (computed as ``scipy.stats.wasserstein_distance`` does)."""
    a, b = np.sort(_scores(a, "A")), np.sort(_scores(b, "B"))
    pooled = np.sort(np.concatenate([a, b]), kind="mergesort")
    cdf_a = a.searchsorted(pooled[:-1], "right") / a.size
    cdf_b = b.searchsorted(pooled[:-1], "right") / b.size
    return float(np.vecdot(np.abs(cdf_a - cdf_b), np.diff(pooled)))


def rabbi(a, b) -> float:
    """RABBI R(A, B) = (1/(|A||B|)) Σ_{(a,b)∈A×B} [I(s_a > s_b) − I(s_a < s_b)], in [−1, 1].

    Computed in O(n log n) without a loop over pairs: with A and B sorted, #{b < a} and #{b > a} come from binary
    search, so the numerator is Σ_a (#{b < a} − #{b > a}) = 2·U_A − |A||B| (U_A the Mann–Whitney statistic, ties
    counted ½), i.e. the rank-biserial correlation 2U_A/(|A||B|) − 1 of Appendix A.
    """
    a, b = np.sort(_scores(a, "A")), np.sort(_scores(b, "B"))
    below = np.searchsorted(b, a, side="left").sum()
    above = (b.size - np.searchsorted(b, a, side="right")).sum()
    return float((below - above) / (a.size * b.size))


def rabbi_test(a, b, *, method: str = "auto") -> tuple[float, float]:
    """(RABBI, two-sided p-value) from the Mann–Whitney U test: R = 2U_A/(|A||B|) − 1 (Appendix A).

    With ``method="auto"`` the p-value is exact for small samples without ties and normal-approximated
    (tie-corrected) otherwise, as ``scipy.stats.mannwhitneyu`` chooses; ``"asymptotic"`` always approximates (the
    paper's code).
    """
    a, b = _scores(a, "A"), _scores(b, "B")
    u, pvalue = mann_whitney(a, b, method=method)
    return float(2 * u / (a.size * b.size) - 1), pvalue


def mann_whitney(a: np.ndarray, b: np.ndarray, *, method: str = "auto") -> tuple[float, float]:
    """(U_A, two-sided p-value): ``scipy.stats.mannwhitneyu(a, b, alternative="two-sided", method=method)`` with the
    same arithmetic, without SciPy's per-call overhead (``method`` ``auto`` or ``asymptotic``).

    ``auto`` takes the exact null law of U when a sample has at most 8 scores and no score occurs twice in A ∪ B
    (SciPy's rule), else the normal approximation that ``asymptotic`` always takes (tie- and continuity-corrected).
    """
    if method not in ("auto", "asymptotic"):
        raise AuditError(f"Mann–Whitney method {method!r} not known; use auto or asymptotic")
    n1, n2 = a.size, b.size
    pooled = np.sort(np.concatenate([a, b]))
    ties = np.unique(pooled, return_counts=True)[1].astype(float)
    ranks = (pooled.searchsorted(a, "left") + pooled.searchsorted(a, "right") + 1) / 2  # mean rank of each a
    u1 = ranks.sum() - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    if method == "auto" and (n1 <= 8 or n2 <= 8) and (ties == 1).all():
        p = 2 * _exact_u_cdf(n1, n2, int(n1 * n2 - u))
    else:
        n = n1 + n2
        spread = np.sqrt(n1 * n2 / 12 * ((n + 1) - (ties ** 3 - ties).sum() / (n * (n - 1))))
        with np.errstate(divide="ignore", invalid="ignore"):
            p = 2 * ndtr(-((u - n1 * n2 / 2 - 0.5) / spread))
    return float(u1), float(np.clip(p, 0.0, 1.0))


def _exact_u_cdf(n1: int, n2: int, u: int) -> float:
    """P(U ≤ u) under the null hypothesis without ties: the frequencies of U by the recurrence of Löffler (1983), step
    by step as ``scipy.stats.mannwhitneyu``'s exact method computes them."""
    n1, n2 = min(n1, n2), max(n1, n2)
    sigma = np.zeros(u + 1, dtype=int)
    for d in range(1, n1 + 1):
        sigma[d::d] += d
    for d in range(n2 + 1, n2 + n1 + 1):
        sigma[d::d] -= d
    frequencies = np.zeros(u + 1, dtype=np.uint64)
    frequencies[0] = 1
    for v in range(1, u + 1):
        value = np.dot(frequencies[:v], sigma[v:0:-1]) / v
        if value > np.iinfo(np.uint64).max and frequencies.dtype == np.uint64:
            frequencies = frequencies.astype(float)
        frequencies[v] = value
    return float(np.cumsum(frequencies / binom(n1 + n2, n1))[u])
