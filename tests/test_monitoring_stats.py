"""The monitoring statistics (audit/metrics/monitoring.py) against computations written apart from them: the
likelihood ratio by enumeration of every labelling and by scipy's noncentral hypergeometric law, the detector by its
defining sum over start looks, and the guarantees (false alarms, band coverage, delay after a drift) by seeded
simulation of fair and biased systems, 0/1 logs and ranked pools."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from audit.errors import AuditError
from audit.metrics.monitoring import (ODDS, LookCounts, alarm_level, detector, log_evidence, ratio_sequence,
                                      watch_pair, window_ratio)


def one_pool(n_a: int, n_b: int, selected: int, x: int) -> LookCounts:
    return LookCounts(np.array([0]), np.array([n_a]), np.array([n_b]), np.array([selected]), np.array([x]), 1)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.data())
def test_each_alternative_has_null_expectation_one_by_enumerating_every_labelling(n_a: int, n_b: int, data) -> None:
    """Under the null every choice of which members carry label a is equally likely: the mean of the likelihood
    ratio over all of them is 1, for every pool and alternative."""
    selected = data.draw(st.integers(1, n_a + n_b - 1))
    members = range(n_a + n_b)
    labellings = list(itertools.combinations(members, n_a))  # the a members; the first `selected` are selected
    ratios = [np.exp(log_evidence(one_pool(n_a, n_b, selected, sum(m < selected for m in labels)))[0])
              for labels in labellings]
    assert np.allclose(np.mean(ratios, axis=0), 1.0, rtol=1e-10)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.integers(1, 30), st.data())
def test_the_ratio_is_scipys_noncentral_over_central_hypergeometric(n_a: int, n_b: int, data) -> None:
    selected = data.draw(st.integers(1, n_a + n_b - 1))
    x = data.draw(st.integers(max(0, selected - n_b), min(selected, n_a)))
    found = np.exp(log_evidence(one_pool(n_a, n_b, selected, x))[0])
    central = stats.hypergeom.pmf(x, n_a + n_b, n_a, selected)
    expected = [stats.nchypergeom_fisher.pmf(x, n_a + n_b, n_a, selected, odds) / central for odds in ODDS]
    assert np.allclose(found, expected, rtol=1e-8)


def test_a_looks_pools_multiply_and_uninformative_pools_count_nothing() -> None:
    pools = LookCounts(np.array([0, 0, 1, 1]), np.array([3, 2, 4, 0]), np.array([3, 5, 4, 3]),
                       np.array([2, 3, 8, 1]), np.array([0, 1, 4, 0]), 2)
    found = log_evidence(pools)
    assert np.allclose(found[0], log_evidence(one_pool(3, 3, 2, 0))[0] + log_evidence(one_pool(2, 5, 3, 1))[0])
    assert np.all(found[1] == 0)  # everyone selected; no a members


def test_the_detector_is_the_sum_of_the_products_started_at_every_look() -> None:
    log_e = np.random.default_rng(1).normal(0, 1, (12, ODDS.size))
    expected = [np.mean([sum(math.exp(log_e[s:t + 1, j].sum()) for s in range(t + 1)) for j in range(ODDS.size)])
                for t in range(12)]
    assert np.allclose(detector(log_e), expected, rtol=1e-12)


def test_window_and_band_read_the_counts() -> None:
    x_a, n_a, x_b, n_b = (np.array(values) for values in ([1, 2, 3], [10, 10, 10], [2, 2, 2], [10, 10, 10]))
    assert np.allclose(window_ratio(x_a, n_a, x_b, n_b, 2), [0.5, 0.75, 1.25])
    ratio, low, high = ratio_sequence(x_a, n_a, x_b, n_b, 0.05)
    assert np.allclose(ratio, [0.5, 0.75, 1.0]) and np.all(low < ratio) and np.all(ratio < high)
    assert high[2] - low[2] < high[0] - low[0]
    with pytest.raises(AuditError, match="window"):
        window_ratio(x_a, n_a, x_b, n_b, 0)
    for bad in ({"alpha": 0}, {"alpha": 0.05, "horizon": 0}):
        with pytest.raises(AuditError):
            alarm_level(**bad)


def zero_one_looks(rng: np.random.Generator, looks: int, per_look: int, rate_b: float, ratios: np.ndarray
                   ) -> LookCounts:
    """A 0/1 log: each look's applicants split at random between a and b, a selected at ratio × b's rate."""
    n_a = rng.binomial(per_look, 0.5, looks)
    n_b = per_look - n_a
    x_a, x_b = rng.binomial(n_a, rate_b * ratios), rng.binomial(n_b, rate_b)
    return LookCounts(np.arange(looks), n_a, n_b, x_a + x_b, x_a, looks)


def ranked_looks(rng: np.random.Generator, looks: int, pools: int, weights: np.ndarray) -> LookCounts:
    """Pools of 4 + 4 ranked by Plackett–Luce with a's weight ``weights[look]`` against b's 1; the first is picked
    (at k = 1 the ratio of a's rate to b's is the weight)."""
    look = np.repeat(np.arange(looks), pools)
    picked_a = rng.random(look.size) < weights[look] / (weights[look] + 1)
    return LookCounts(look, np.full(look.size, 4), np.full(look.size, 4), np.ones(look.size, int),
                      picked_a.astype(int), looks)


@pytest.mark.parametrize("kind", ["0/1", "ranked"])
def test_fair_systems_raise_the_detector_within_its_bound(kind: str) -> None:
    """The bound without the size condition (any threshold passes): at a level for 12 looks and α = 0.2, fair
    systems reach it in at most 20 % of 600 (+ 3 Monte Carlo errors)."""
    rng = np.random.default_rng(7)
    raised = 0
    for _ in range(600):
        counts = (zero_one_looks(rng, 12, 60, 0.3, np.ones(12)) if kind == "0/1"
                  else ranked_looks(rng, 12, 8, np.ones(12)))
        raised += watch_pair(counts, alpha=0.2, horizon=12, threshold=math.inf).first_alarm is not None
    assert raised / 600 <= 0.2 + 3 * math.sqrt(0.2 * 0.8 / 600)


def test_the_band_covers_the_true_ratio_at_every_look_at_once() -> None:
    rng = np.random.default_rng(3)
    missed = 0
    for _ in range(300):
        counts = zero_one_looks(rng, 30, 200, 0.3, np.full(30, 0.7))
        a_n, a_x, b_n, b_x = counts.totals()
        _, low, high = ratio_sequence(a_x, a_n, b_x, b_n, 0.05)
        missed += bool(np.any((low > 0.7) | (high < 0.7)))
    assert missed / 300 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 300)


@pytest.mark.parametrize("kind", ["0/1", "ranked"])
def test_a_drift_after_half_a_fair_year_is_found_within_weeks(kind: str) -> None:
    """26 fair weekly looks, then a's rate falls to 0.6 of b's: the alarm comes within 8 looks in nearly every
    system, while the cumulative ratio stays above 0.8 for weeks."""
    rng = np.random.default_rng(11)
    ratios = np.where(np.arange(52) < 26, 1.0, 0.6)
    delays = []
    for _ in range(40):
        counts = (zero_one_looks(rng, 52, 400, 0.3, ratios) if kind == "0/1"
                  else ranked_looks(rng, 52, 50, ratios))
        watch = watch_pair(counts)
        delays.append(watch.first_alarm - 25 if watch.first_alarm is not None else 99)
        assert watch.first_alarm is None or watch.first_alarm >= 26
    assert np.median(delays) <= 6 and np.mean(np.array(delays) <= 8) >= 0.9
