"""Exact allocation gaps against brute force over every pool (ties included), and Monte Carlo against exact."""
import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from helpers import score_table

from audit.metrics import MetricSuite, allocation_gaps, bias_metrics, simulate_gaps


def table(sizes, seed, levels=3, mode="pointwise", model="m", subtask="s"):
    """Small score table with heavy ties: group g has sizes[g] candidates, scores in {0, …, levels − 1}."""
    rng = np.random.default_rng(seed)
    groups = {}
    for g, n in zip("RABCDEFG", sizes):
        qualified = rng.random(n) < 0.5
        qualified[0] = True
        groups[g] = ([rng.integers(0, levels) for _ in qualified], qualified)
    return score_table(groups, model=model, subtask=subtask, mode=mode)


def share(pool_scores, i, k):
    """Selection share of member i: top k selected, members tied with the k-th score share the remaining slots."""
    s = pool_scores[i]
    kth = sorted(pool_scores, reverse=True)[k - 1]
    if s > kth:
        return Fraction(1)
    if s < kth:
        return Fraction(0)
    above = sum(x > kth for x in pool_scores)
    return Fraction(k - above, sum(x == kth for x in pool_scores))


def brute_force(scores, pools, reference):
    """ΔDP, ΔEO for every group and k, as exact fractions, from an explicit list of equally likely pools."""
    groups = sorted(scores.group.unique())
    size = len(pools[0])
    sel = {(g, k, q): Fraction(0) for g in groups for k in range(1, size + 1) for q in (0, 1)}
    seen = {(g, q): 0 for g in groups for q in (0, 1)}
    for pool in pools:
        values = [scores.score[i] for i in pool]
        for j, i in enumerate(pool):
            g, q = scores.group[i], scores.qualified[i]
            seen[g, q] += 1
            for k in range(1, size + 1):
                sel[g, k, q] += share(values, j, k)

    def phi(g, k, qualified_only):
        qs = (1,) if qualified_only else (0, 1)
        return sum(sel[g, k, q] for q in qs) / sum(seen[g, q] for q in qs)

    return pd.DataFrame([(g, k, float(phi(g, k, False) - phi(reference, k, False)),
                          float(phi(g, k, True) - phi(reference, k, True)))
                         for g in groups if g != reference for k in range(1, size + 1)],
                        columns=["group", "k", "dp_gap", "eo_gap"])


def compare(exact, expected):
    merged = exact.merge(expected, on=["group", "k"], suffixes=("", "_bf"))
    assert len(merged) == len(expected)
    np.testing.assert_allclose(merged.dp_gap, merged.dp_gap_bf, rtol=0, atol=1e-12)
    np.testing.assert_allclose(merged.eo_gap, merged.eo_gap_bf, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed,sizes,levels", [(0, (3, 2, 4), 2), (1, (2, 3, 3, 2), 3), (2, (4, 3, 2, 3, 2), 4),
                                               (3, (1, 2, 2, 3), 1)])
def test_per_group_pools_match_brute_force(seed, sizes, levels):
    scores = table(sizes, seed, levels)
    by_group = [list(scores.index[scores.group == g]) for g in sorted(scores.group.unique())]
    pools = list(itertools.product(*by_group))
    exact = allocation_gaps(scores, reference="R", ks=range(1, len(sizes) + 1))
    compare(exact, brute_force(scores, pools, "R"))


@pytest.mark.parametrize("seed,sizes,size", [(4, (3, 3, 3), 2), (5, (3, 2, 4), 4), (6, (2, 3, 2, 2), 5),
                                             (7, (3, 3, 2), 8)])
def test_random_pools_match_brute_force(seed, sizes, size):
    scores = table(sizes, seed, levels=3)
    pools = list(itertools.combinations(scores.index, size))
    exact = allocation_gaps(scores, reference="R", ks=range(1, size + 1), pool=f"random:{size}")
    compare(exact, brute_force(scores, pools, "R"))


def test_observed_pools_match_a_direct_count():
    rng = np.random.default_rng(8)
    rows = []
    for pool in range(6):
        for g in "RAB":
            rows.append(dict(model="m", task="t", subtask="s", mode="pairwise", candidate_id=f"{g}{pool % 3}",
                             group=g, qualified=int(pool % 2 == 0 or g == "A"), score=float(rng.integers(0, 3)),
                             pool=pool))
    scores = pd.DataFrame(rows)
    pools = [list(scores.index[scores.pool == p]) for p in range(6)]
    exact = allocation_gaps(scores, reference="R", ks=[1, 2, 3], pool="observed")
    compare(exact, brute_force(scores, pools, "R"))


def test_gaps_vanish_for_identical_groups_and_full_quota():
    scores = table((4, 4, 4), seed=9)
    reference = scores.loc[scores.group == "R", ["score", "qualified"]].to_numpy()
    for g in "AB":
        scores.loc[scores.group == g, ["score", "qualified"]] = reference
    gaps = allocation_gaps(scores, reference="R", ks=[1, 2, 3])
    np.testing.assert_allclose(gaps[["dp_gap", "eo_gap"]], 0, atol=1e-15)
    full = allocation_gaps(table((3, 4, 5), seed=10), reference="R", ks=[3])
    np.testing.assert_allclose(full[["dp_gap", "eo_gap"]], 0, atol=1e-12)


@pytest.mark.parametrize("pool", ["per-group", "random:4"])
def test_monte_carlo_converges_to_exact(pool):
    scores = table((12, 9, 14, 10, 8), seed=11, levels=5)
    ks = range(1, 5)
    exact = allocation_gaps(scores, reference="R", ks=ks, pool=pool)
    mc = simulate_gaps(scores, reference="R", ks=ks, pool=pool, rounds=40_000, seed=1)
    for column in ("dp_gap", "eo_gap"):
        error = (mc[column] - exact[column]).abs()
        assert (error <= 4 * mc[f"{column}_se"] + 1e-12).all()
        assert mc[f"{column}_se"].max() < 0.01
    few = simulate_gaps(scores, reference="R", ks=ks, pool=pool, rounds=200, seed=1)
    partial = mc["k"] < 4  # at k = pool size everyone is selected and the SE is 0
    assert (few["dp_gap_se"][partial] > mc["dp_gap_se"][partial] * 5).all()  # SE shrinks like 1/√rounds


def test_monte_carlo_is_seeded():
    scores = table((5, 5, 5), seed=12)
    one = simulate_gaps(scores, reference="R", ks=[1], rounds=500, seed=3)
    assert one.equals(simulate_gaps(scores, reference="R", ks=[1], rounds=500, seed=3))
    assert not one.equals(simulate_gaps(scores, reference="R", ks=[1], rounds=500, seed=4))


def test_suite_table_joins_bias_metrics_and_gaps_for_every_key():
    scores = pd.concat([table((4, 5, 3), seed=13, model="m1"), table((4, 5, 3), seed=14, model="m2"),
                        table((4, 5, 3), seed=15, model="m1", mode="pairwise")], ignore_index=True)
    suite = MetricSuite(scores, reference="R")
    one = suite.table([2])
    assert list(one.columns) == ["model", "task", "subtask", "mode", "group", "k", "delta", "jsd", "emd", "rabbi",
                                 "rabbi_pvalue", "delta_qualified", "jsd_qualified", "emd_qualified",
                                 "rabbi_qualified", "dp_gap", "eo_gap"]
    assert len(one) == 3 * 2 and set(one.k) == {2}
    both = suite.table([1, 2, 3])
    assert len(both) == 3 * 2 * 3
    gaps = allocation_gaps(scores, reference="R", ks=[2])
    bias = bias_metrics(scores, reference="R")
    pd.testing.assert_frame_equal(one[gaps.columns], gaps)
    pd.testing.assert_frame_equal(one[bias.columns], bias)
