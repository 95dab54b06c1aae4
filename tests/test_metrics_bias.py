"""Bias metrics against their definitions: RABBI by the pair loop and SciPy's Mann–Whitney, δ, JSD, EMD, pairwise δ."""
import itertools

import numpy as np
import pandas as pd
import pytest
from helpers import score_table
from scipy import stats
from scipy.spatial.distance import jensenshannon

from audit.errors import AuditError
from audit.metrics import bias_metrics, delta, emd, histograms, jsd, pair_preferences, rabbi, rabbi_test
from audit.metrics.bias import mann_whitney


def pair_loop_rabbi(a, b):
    return sum(int(x > y) - int(x < y) for x in a for y in b) / (len(a) * len(b))


@pytest.mark.parametrize("seed", range(6))
def test_rabbi_equals_pair_definition_with_ties(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, size=rng.integers(1, 40)).astype(float)
    b = rng.integers(0, 4, size=rng.integers(1, 40)).astype(float)
    assert rabbi(a, b) == pytest.approx(pair_loop_rabbi(a, b), abs=1e-12)
    assert rabbi_test(a, b)[0] == pytest.approx(pair_loop_rabbi(a, b), abs=1e-12)


def test_rabbi_is_rank_biserial_of_mann_whitney():
    rng = np.random.default_rng(7)
    a, b = rng.normal(0.3, 1, 300).round(1), rng.normal(0, 1, 250).round(1)
    test = stats.mannwhitneyu(a, b, alternative="two-sided")
    value, pvalue = rabbi_test(a, b)
    assert value == pytest.approx(2 * test.statistic / (a.size * b.size) - 1, abs=1e-12)
    assert value == pytest.approx(rabbi(a, b), abs=1e-12)
    assert pvalue == pytest.approx(test.pvalue, rel=1e-12)
    assert pvalue < 0.01


def samples(rng: np.random.Generator, case: int) -> tuple[np.ndarray, np.ndarray]:
    """Two samples of a random kind: small or large, continuous, on a few levels (many ties) or rounded."""
    n1, n2 = rng.integers(1, 14, 2) if case % 2 else rng.integers(1, 200, 2)
    kind = case % 3
    if kind == 0:
        return rng.normal(size=n1), rng.normal(size=n2) + rng.normal()
    if kind == 1:
        return rng.integers(0, 5, n1).astype(float), rng.integers(0, 6, n2).astype(float)
    return rng.random(n1).round(2), rng.random(n2).round(1)


@pytest.mark.parametrize("method", ["auto", "asymptotic"])
def test_mann_whitney_matches_scipy(method):
    rng = np.random.default_rng(11)
    for case in range(600):
        a, b = samples(rng, case)
        expected = stats.mannwhitneyu(a, b, alternative="two-sided", method=method)
        u, pvalue = mann_whitney(a, b, method=method)
        assert u == expected.statistic
        assert pvalue == pytest.approx(expected.pvalue, rel=1e-12, abs=1e-300)
    for n1, n2 in ((1, 1), (8, 8), (3, 700), (8, 1500)):  # exact law up to SciPy's float switch (> 2⁶⁴ pools)
        a, b = rng.random(n1), rng.random(n2) + 0.01
        assert mann_whitney(a, b, method=method)[1] == pytest.approx(
            stats.mannwhitneyu(a, b, method=method).pvalue, rel=1e-12)
    assert mann_whitney(np.ones(5), np.ones(7), method=method) == (17.5, 1.0)  # all tied: no spread


def test_emd_matches_scipy():
    rng = np.random.default_rng(12)
    for case in range(600):
        a, b = samples(rng, case)
        assert emd(a, b) == pytest.approx(stats.wasserstein_distance(a, b), rel=1e-12, abs=1e-15)


def test_rabbi_extremes_and_antisymmetry():
    low, high = np.array([0.1, 0.2, 0.2]), np.array([0.5, 0.9])
    assert rabbi(high, low) == 1.0 and rabbi(low, high) == -1.0
    assert rabbi(low, low) == 0.0
    rng = np.random.default_rng(1)
    a, b = rng.random(50).round(1), rng.random(60).round(1)
    assert rabbi(a, b) == pytest.approx(-rabbi(b, a), abs=1e-15)


def test_delta_and_emd():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 5.0, 7.0])
    assert delta(a, b) == pytest.approx(2.0 - 4.0)
    rng = np.random.default_rng(2)
    x, y = rng.random(100), rng.random(100) + 0.2
    assert emd(x, y) == pytest.approx(np.abs(np.sort(x) - np.sort(y)).mean(), abs=1e-12)


def test_jsd_bounds_and_discrete_bins():
    assert jsd([1, 1, 2], [1, 1, 2]) == pytest.approx(0.0, abs=1e-15)
    assert jsd([0.0, 0.1], [0.9, 1.0]) == pytest.approx(1.0)
    # two distinct values -> one bin each: P = (1, 0), Q = (½, ½)
    expected = jensenshannon([1.0, 0.0], [0.5, 0.5], base=2) ** 2
    assert jsd([1, 1, 1, 1], [1, 1, 5, 5]) == pytest.approx(expected, abs=1e-12)


def test_jsd_binning_follows_the_pooled_range():
    rng = np.random.default_rng(3)
    a, b = rng.beta(2, 5, 400), rng.beta(3, 3, 300)
    p, q = histograms(a, b, bins=10)
    assert p.size == q.size == 10 and p.sum() == pytest.approx(1) and q.sum() == pytest.approx(1)
    # 1..5 grades or pairwise sums: the same distributions on another scale give the same JSD
    assert jsd(a * 4 + 1, b * 4 + 1) == pytest.approx(jsd(a, b), abs=1e-12)
    assert jsd(a, b, bins=5) != pytest.approx(jsd(a, b, bins=40))


def pair_rows(outcomes, mode="pairwise"):
    """Pair table rows (candidate_a, group_a, candidate_b, group_b, outcome[, wins_a, wins_b])."""
    return pd.DataFrame([dict(model="m", task="t", subtask="s", mode=mode, pool=i, candidate_a=row[0],
                              candidate_b=row[2], group_a=row[1], group_b=row[3], outcome=row[4],
                              **(dict(wins_a=row[5], wins_b=row[6]) if len(row) > 5 else {}))
                         for i, row in enumerate(outcomes)])


def test_pairwise_delta_is_signed_prompts_won_by_a_minus_prompts_won_by_b():
    pairs = pair_rows([
        ("x1", "A", "r1", "R", "a", 2, 0),             # A wins both prompts: +2
        ("r2", "R", "x2", "A", "b", 0, 2),             # A wins both prompts as candidate_b: +2
        ("x1", "A", "r2", "R", "inconsistent", 1, 1),  # flipped: +1 − 1 = 0
        ("r1", "R", "x2", "A", "a", 2, 0),             # R wins both: −2
        ("x2", "A", "r1", "R", "inconsistent", 0, 1),  # one tie/irregular answer, R chosen once: −1
        ("x1", "A", "x2", "A", "a", 2, 0),             # not an A-vs-R pair
    ])
    qualified = pd.Series({("m", "t", "s", "pairwise", "x1"): True, ("m", "t", "s", "pairwise", "x2"): False,
                           ("m", "t", "s", "pairwise", "r1"): True, ("m", "t", "s", "pairwise", "r2"): True})
    out = pair_preferences(pairs, reference="R", qualified=qualified).set_index("group")
    assert out.loc["A", "delta"] == pytest.approx((2 + 2 + 0 - 2 - 1) / 10)  # 5 A–R pairs = 10 prompts
    assert out.loc["A", "delta_qualified"] == pytest.approx((2 + 0) / 4)  # pairs (x1, r1) and (x1, r2)


def test_pairwise_delta_of_the_reference_always_winning_is_negative():
    """The demo store's SmolLM2 / software_engineer / B_M case: of 6 B_M–W_M pairs, W_M wins 5 consistently and one
    is flipped, so B_M wins 1 of 12 prompts and W_M 11: δ = (1 − 11) / 12 = −0.833 (the unsigned share was 0)."""
    rows = [(f"b{i}", "B_M", f"w{i}", "W_M", "b", 0, 2) for i in range(5)] + [("b5", "B_M", "w5", "W_M",
                                                                             "inconsistent", 1, 1)]
    qualified = pd.Series({("m", "t", "s", "pairwise", c): c in ("b0", "w0", "b5", "w5")
                           for i in range(6) for c in (f"b{i}", f"w{i}")})
    out = pair_preferences(pair_rows(rows), reference="W_M", qualified=qualified).set_index("group")
    assert out.loc["B_M", "delta"] == pytest.approx(-10 / 12)
    assert out.loc["B_M", "delta_qualified"] == pytest.approx((-2 + 0) / 4)
    no_wins = pair_rows([row[:5] for row in rows])  # an older export: wins derived from the outcome
    assert pair_preferences(no_wins, reference="W_M", qualified=qualified)["delta"].iloc[0] == pytest.approx(-10 / 12)
    mirrored = pair_rows([(w, "W_M", b, "B_M", "a", 2, 0) for b, _, w, *_ in rows[:5]])
    assert pair_preferences(mirrored, reference="W_M", qualified=qualified)["delta"].iloc[0] == pytest.approx(-1)
    with pytest.raises(AuditError, match="wins_a \\+ wins_b exceeds the pair's 2 prompts"):
        pair_preferences(pair_rows([("b0", "B_M", "w0", "W_M", "b", 1, 2)]), reference="W_M", qualified=qualified)
    with pytest.raises(AuditError, match="column 'wins_b' has value 3; expected 0, 1 or 2"):
        pair_preferences(pair_rows([("b0", "B_M", "w0", "W_M", "b", 0, 3)]), reference="W_M", qualified=qualified)


def score_rows(groups, n, mode="pointwise", seed=0):
    rng = np.random.default_rng(seed)
    return score_table({g: ([rng.integers(0, 5) for _ in range(n)], [i % 2 == 0 for i in range(n)]) for g in groups},
                       mode=mode)


def test_bias_metrics_table_matches_the_array_functions():
    scores = score_rows(["A", "B", "R"], 10)
    out = bias_metrics(scores, reference="R").set_index("group")
    assert list(out.index) == ["A", "B"]
    a, r = (scores[scores.group == g] for g in ("A", "R"))
    aq, rq = a[a.qualified == 1], r[r.qualified == 1]
    assert out.loc["A", "rabbi"] == pytest.approx(pair_loop_rabbi(a.score, r.score))
    assert out.loc["A", "rabbi_qualified"] == pytest.approx(pair_loop_rabbi(aq.score, rq.score))
    assert out.loc["A", "delta_qualified"] == pytest.approx(aq.score.mean() - rq.score.mean())
    assert out.loc["A", "jsd"] == pytest.approx(jsd(a.score, r.score))


@pytest.mark.parametrize("mode", ["pairwise", "pairwise-likelihood"])
def test_pairwise_delta_is_missing_without_pairs_and_filled_with_them(mode):
    scores = score_rows(["A", "R"], 2, mode=mode)
    assert bias_metrics(scores, reference="R")["delta"].isna().all()
    outcomes = [(a, "A", r, "R", o) for (a, r), o in zip(itertools.product(["A0", "A1"], ["R0", "R1"]), "abab")]
    out = bias_metrics(scores, reference="R", pairs=pair_rows(outcomes, mode=mode))
    assert out["delta"].tolist() == [0.0]  # A wins two pairs, R two
    assert out["delta_qualified"].tolist() == [1.0]  # only (A0, R0) is qualified on both sides, outcome a


def test_default_jsd_on_tens_of_continuous_scores_reads_the_overlap():
    """Sturges' bins on the pooled sample: identical samples 0, disjoint 1, half overlap strictly between, and
    two independent draws of one law well below 1 (with one bin per distinct value they would read exactly 1)."""
    rng = np.random.default_rng(11)
    a = rng.uniform(0, 1, 24)
    assert histograms(a, a)[0].size == 7  # ⌈log₂ 48⌉ + 1
    assert jsd(a, a.copy()) == pytest.approx(0.0, abs=1e-15)
    assert jsd(a, a + 2.0) == pytest.approx(1.0)
    half = jsd(rng.uniform(0, 1, 400), rng.uniform(0.5, 1.5, 400))
    assert 0.3 < half < 0.7  # the true JSD of U(0,1) and U(½,1½) is ½ bit
    same_law = [jsd(rng.normal(0, 1, 24), rng.normal(0, 1, 24)) for _ in range(20)]
    assert max(same_law) < 0.5 and np.median(same_law) < 0.25
    assert jsd(a, a + 0.01, bins=1000) == pytest.approx(1.0)  # a number of bins still overrides the rule


def test_weighted_jsd_matches_the_candidate_list_estimator():
    from audit.metrics.weighted import weighted_jsd
    rng = np.random.default_rng(5)
    a, b = rng.normal(0, 1, 17), rng.normal(0.5, 1, 30)
    values = np.unique(np.concatenate([a, b]))
    counts = np.stack([np.bincount(np.searchsorted(values, x), minlength=values.size) for x in (b, a)])[None]
    assert weighted_jsd(counts.astype(float), 0, values)[0, 1] == pytest.approx(jsd(a, b), abs=1e-12)


def test_default_jsd_does_not_saturate_on_the_demo_store(capsys):
    from pathlib import Path
    from audit.cli import main
    demo = Path(__file__).resolve().parents[1] / "data" / "demo.db"
    if not demo.exists():
        pytest.skip("data/demo.db not built")
    assert main(["metrics", "--db", str(demo), "--task", "resume", "--k", "1", "--format", "json"]) == 0
    import json
    rows = [r for r in json.loads(capsys.readouterr().out) if r["mode"] == "pointwise"]
    saturated = sum(r["jsd_qualified"] >= 1 - 1e-9 for r in rows)
    assert rows and saturated < len(rows) / 4
