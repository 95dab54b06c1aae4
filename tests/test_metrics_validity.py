"""Predictive validity (Pearson r), RMS model rankings and NDCG@N on hand-checkable inputs."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from audit.errors import AuditError
from audit.metrics import model_rankings, ndcg_at, ndcg_table, pearson, validity


def test_ndcg_by_hand():
    ideal = ["a", "b", "c"]  # relevance σ_max − σ⁻¹: a = 2, b = 1, c = 0
    assert ndcg_at(ideal, ideal, 3) == 1.0
    best = 2 + 1 / math.log2(3)
    assert ndcg_at(["c", "b", "a"], ideal, 3) == pytest.approx((1 / math.log2(3) + 2 / 2) / best)
    assert ndcg_at(["c", "b", "a"], ideal, 1) == 0.0
    assert ndcg_at(["b", "a", "c"], ideal, 1) == pytest.approx(1 / 2)
    assert ndcg_at(["b", "a", "c"], ideal, 2) == pytest.approx((1 + 2 / math.log2(3)) / best)
    assert ndcg_at(["b", "a", "c"], ideal, 10) == ndcg_at(["b", "a", "c"], ideal, 3)
    assert math.isnan(ndcg_at(["a"], ["a"], 1))
    with pytest.raises(AuditError, match="same models"):
        ndcg_at(["a", "x"], ["a", "b"], 2)


def metric_table(values):
    """Rows (model, subtask, group, dp_gap, rabbi); the other metrics derived so each has a known relation (the
    qualified JSD and EMD follow |ΔEO| exactly, the all-candidate ones do not)."""
    rows = []
    for model, subtask, group, gap, rabbi in values:
        rows.append(dict(model=model, subtask=subtask, mode="pointwise", group=group, k=2, delta=-gap, jsd=abs(rabbi),
                         emd=0.5, rabbi=rabbi, rabbi_pvalue=0.5, delta_qualified=gap, jsd_qualified=abs(gap) / 4,
                         emd_qualified=abs(gap) + 1, rabbi_qualified=rabbi, dp_gap=gap, eo_gap=gap * 2))
    return pd.DataFrame(rows)


def test_model_rankings_use_root_mean_square_over_groups():
    table = metric_table([("m1", "s", "A", 0.3, 0.1), ("m1", "s", "B", -0.4, 0.1),   # RMS gap √(0.125) ≈ 0.354
                          ("m2", "s", "A", 0.1, 0.5), ("m2", "s", "B", 0.1, -0.5),   # RMS gap 0.1, RMS rabbi 0.5
                          ("m3", "s", "A", 0.2, 0.0), ("m3", "s", "B", 0.2, 0.0)])   # RMS gap 0.2, RMS rabbi 0
    ranks = model_rankings(table)
    pick = lambda metric: ranks[(ranks.gap == "dp") & (ranks.metric == metric)].set_index("model")
    true = pick("true")
    assert true.loc["m1", "rms"] == pytest.approx(math.sqrt((0.09 + 0.16) / 2))
    assert true["rank"].to_dict() == {"m1": 3, "m2": 1, "m3": 2}
    assert pick("rabbi")["rank"].to_dict() == {"m1": 2, "m2": 3, "m3": 1}
    # RABBI ranking m3, m1, m2 against ideal m2, m3, m1: relevance 1, 0, 2
    ndcg = ndcg_table(table)
    rabbi = ndcg[(ndcg.gap == "dp") & (ndcg.metric == "rabbi")].set_index("n")["ndcg"]
    assert rabbi[1] == pytest.approx(1 / 2)
    assert rabbi[3] == pytest.approx((1 + 0 + 2 / 2) / (2 + 1 / math.log2(3)))


def test_ndcg_is_averaged_over_subtasks():
    rows = []
    for subtask, order in (("s1", [0.1, 0.2, 0.3]), ("s2", [0.3, 0.2, 0.1])):
        rows += [("m1", subtask, "A", order[0], 0.1), ("m2", subtask, "A", order[1], 0.2),
                 ("m3", subtask, "A", order[2], 0.3)]
    ndcg = ndcg_table(metric_table(rows))
    rabbi = ndcg[(ndcg.gap == "dp") & (ndcg.metric == "rabbi") & (ndcg.n == 1)].iloc[0]
    assert rabbi["ndcg"] == pytest.approx((1 + 0) / 2) and rabbi["subtasks"] == 2


def test_pearson_matches_scipy():
    rng = np.random.default_rng(13)
    for case in range(400):
        n = int(rng.integers(3, 60))
        x = rng.normal(size=n) if case % 2 else rng.integers(0, 4, n).astype(float)
        y = 0.5 * x + rng.normal(size=n) * [0.1, 1, 10][case % 3]
        if np.ptp(x) == 0:
            continue
        expected = stats.pearsonr(x, y)
        r, pvalue, size = pearson(x, y)
        assert r == pytest.approx(expected.statistic, abs=1e-12) and size == n
        assert pvalue == pytest.approx(expected.pvalue, rel=1e-12, abs=1e-300)
    assert all(math.isnan(v) for v in pearson([1, 2, 3], [2, 2, 2])[:2])


def test_validity_matches_pearson_overall_and_per_group():
    rng = np.random.default_rng(0)
    values = [(f"m{i}", s, g, rng.normal(), rng.normal()) for i in range(6) for s in ("s1", "s2") for g in "AB"]
    table = metric_table(values)
    table["rabbi"] = table["dp_gap"] * 2 + rng.normal(0, 0.5, len(table))
    out = validity(table).set_index(["scope", "gap", "metric"])
    expected = stats.pearsonr(table["rabbi"], table["dp_gap"])
    assert out.loc[("overall", "dp", "rabbi"), "r"] == pytest.approx(expected.statistic)
    assert out.loc[("overall", "dp", "rabbi"), "pvalue"] == pytest.approx(expected.pvalue)
    assert out.loc[("overall", "dp", "delta"), "r"] == pytest.approx(-1.0)
    assert out.loc[("overall", "eo", "delta"), "column"] == "delta_qualified"
    assert out.loc[("overall", "eo", "delta"), "r"] == pytest.approx(1.0)
    jsd = stats.pearsonr(table["jsd"], table["dp_gap"].abs()).statistic
    assert out.loc[("overall", "dp", "jsd"), "r"] == pytest.approx(jsd)
    group_a = table[table.group == "A"]
    per_group = stats.pearsonr(group_a["rabbi"], group_a["dp_gap"]).statistic
    assert out.loc[("A", "dp", "rabbi"), "r"] == pytest.approx(per_group)
    assert out.loc[("A", "dp", "rabbi"), "n"] == 12
    assert math.isnan(out.loc[("overall", "dp", "emd"), "r"])  # constant metric: undefined, not an error


def test_eo_validity_uses_jsd_and_emd_of_qualified_candidates():
    """ΔEO is compared with metrics on qualified candidates only (paper section 4.4), JSD and EMD included."""
    rng = np.random.default_rng(1)
    table = metric_table([(f"m{i}", "s", g, rng.normal(), rng.normal()) for i in range(5) for g in "AB"])
    out = validity(table).set_index(["scope", "gap", "metric"])
    for metric in ("jsd", "emd"):
        assert out.loc[("overall", "eo", metric), "column"] == f"{metric}_qualified"
        assert out.loc[("overall", "eo", metric), "r"] == pytest.approx(1.0)  # built to follow |ΔEO|
        assert out.loc[("overall", "dp", metric), "column"] == metric
    assert math.isnan(out.loc[("overall", "dp", "emd"), "r"])  # the all-candidate EMD is constant here
    ranks = model_rankings(table)
    qualified = ranks[(ranks.gap == "eo") & (ranks.metric == "jsd")].set_index("model")["rms"]
    expected = (table.jsd_qualified ** 2).groupby(table.model).mean() ** 0.5
    assert qualified.to_dict() == pytest.approx(expected.to_dict())
    with pytest.raises(AuditError, match="missing column.*emd_qualified"):
        validity(table.drop(columns="emd_qualified"))


def test_missing_metric_is_left_unranked():
    table = metric_table([("m1", "s", "A", 0.3, 0.1), ("m2", "s", "A", 0.1, 0.5)])
    table["delta"] = np.nan  # pairwise δ without a pair table
    ranks = model_rankings(table)
    assert ranks[(ranks.gap == "dp") & (ranks.metric == "delta")]["rank"].isna().all()
    assert "delta" not in set(ndcg_table(table).query("gap == 'dp'")["metric"])
