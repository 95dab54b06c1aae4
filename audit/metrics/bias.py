"""Bias metrics between the scores of a group A and a reference group B (paper sections 3.1 and 4.3, Appendix A)."""
from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import rel_entr

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


def histograms(a, b, *, bins: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Probability vectors of A's and B's scores on a shared binning derived from the pooled range of A ∪ B.

    If A ∪ B holds at most ``bins`` distinct values (Yes/No-only scores, grades 1..5, pairwise sums), each distinct
    value is its own bin (the exact discrete distributions); otherwise ``bins`` equal-width bins span
    [min(A ∪ B), max(A ∪ B)], the last bin closed. The binning does not depend on the score scale.
    """
    a, b = _scores(a, "A"), _scores(b, "B")
    pooled = np.unique(np.concatenate([a, b]))
    if pooled.size <= bins:
        p = np.bincount(np.searchsorted(pooled, a), minlength=pooled.size)
        q = np.bincount(np.searchsorted(pooled, b), minlength=pooled.size)
    else:
        edges = np.linspace(pooled[0], pooled[-1], bins + 1)
        p, q = np.histogram(a, edges)[0], np.histogram(b, edges)[0]
    return p / a.size, q / b.size


def jsd(a, b, *, bins: int = 20) -> float:
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
    """Earth mover's distance: the 1-D Wasserstein-1 distance ∫ |F_A(s) − F_B(s)| ds between the score distributions."""
    return float(stats.wasserstein_distance(_scores(a, "A"), _scores(b, "B")))


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
    """(RABBI, two-sided p-value) from SciPy's Mann–Whitney U test: R = 2U_A/(|A||B|) − 1 (Appendix A).

    With ``method="auto"`` the p-value is exact for small samples without ties and normal-approximated
    (tie-corrected) otherwise, as ``scipy.stats.mannwhitneyu`` chooses; ``"asymptotic"`` always approximates (the
    paper's code).
    """
    a, b = _scores(a, "A"), _scores(b, "B")
    test = stats.mannwhitneyu(a, b, alternative="two-sided", method=method)
    return float(2 * test.statistic / (a.size * b.size) - 1), float(test.pvalue)
