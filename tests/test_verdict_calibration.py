"""Null simulations of the verdict rule (issue 29): seeded decision logs with no bias are called "adverse impact"
in at most 5 % of audits plus twice the Monte Carlo error, per family; a true ratio of 0.6 is found.

Each replicate audit is one system (model) of one score table, judged by :func:`audit.engine.verdict.measure` and
:func:`decide` directly (the CLI's computation without its I/O). With one grouping per system the ``grouping`` and
``system`` families coincide; the ``audit`` family would pool the replicates, so it is checked on one audit of
several systems instead (its adjustment covers more comparisons, so it never rejects more)."""
import numpy as np
import pytest

from audit.engine.verdict import ADVERSE, decide, measure
from audit.metrics.simulate import pool_logs

REPLICATES = 200
BOUND = 0.05 + 2 * np.sqrt(0.05 * 0.95 / REPLICATES)  # 8.1 %


def adverse_share(scores, family: str = "system", k: int = 1) -> float:
    """The share of systems of ``scores`` with at least one adverse-impact verdict at quota ``k``."""
    rows, pairs = measure(scores, grouping="group", k=k, pool="observed", n_boot=2, n_perm=1)
    table = decide(rows, pairs, family=family)
    return float(table.groupby("model")["verdict"].apply(lambda v: (v == ADVERSE).any()).mean())


@pytest.mark.parametrize("groups, pools", [(2, 100), (4, 100), (8, 100), (2, 1000), (4, 1000), (8, 1000)])
def test_no_bias_in_pools_of_one_per_group_is_rarely_called_adverse(groups, pools):
    scores = pool_logs(np.random.default_rng([groups, pools]), systems=REPLICATES, pools=pools, groups=groups)
    assert adverse_share(scores) <= BOUND


@pytest.mark.parametrize("groups", [2, 4, 8])
def test_no_bias_in_observational_logs_is_rarely_called_adverse(groups):
    """Pools of 6 applicants whose groups are drawn at random (some pools lack a group, some hold several)."""
    scores = pool_logs(np.random.default_rng([groups, 6]), systems=REPLICATES, pools=200, groups=groups,
                       per_pool=6)
    assert adverse_share(scores) <= BOUND


@pytest.mark.parametrize("k", [3, 5])
def test_no_bias_at_quotas_above_one_in_pools_of_several_per_group(k):
    """Pools of 8 applicants, 4 of each of two groups, judged at k = 3 and 5: a pool selects more members of a ∪ b
    than either group holds (the design whose strata were once decoded wrongly: 15.5 % adverse at k = 5)."""
    scores = pool_logs(np.random.default_rng([k, 8]), systems=REPLICATES, pools=100, groups=2, per_pool=8,
                       balanced=True)
    assert adverse_share(scores, k=k) <= BOUND


@pytest.mark.parametrize("groups, k", [(2, 1), (3, 2)])
def test_no_bias_with_ties_at_the_quota_is_rarely_called_adverse(groups, k):
    """Scores on a coarse grid, so most quotas cut through tied applicants (a fair lottery among them): pools of 6
    whose groups are drawn at random."""
    scores = pool_logs(np.random.default_rng([groups, k, 3]), systems=REPLICATES, pools=100, groups=groups,
                       per_pool=6)
    scores["score"] = np.floor(scores["score"])
    assert adverse_share(scores, k=k) <= BOUND


def test_a_fully_tied_log_is_never_adverse():
    """Everyone tied: pools of (a, b, b) and of 9 a + 1 b at k = 1 (once p = 3.7e-5 and adverse impact)."""
    rows = [("A", p) for p in range(60)] + [("B", p) for p in range(60) for _ in range(2)]
    rows += [("A", p) for p in range(60, 70) for _ in range(9)] + [("B", p) for p in range(60, 70)]
    scores = pool_logs(np.random.default_rng(0), systems=1, pools=1, groups=2).iloc[:0]
    scores = scores.reindex(range(len(rows))).assign(
        model="m0", task="t", subtask="s", mode="pointwise", candidate_id=[str(i) for i in range(len(rows))],
        group=[g for g, _ in rows], qualified=1, score=0.0, pool=[p for _, p in rows])
    rows, pairs = measure(scores, grouping="group", k=1, pool="observed", n_boot=2, n_perm=1)
    table = decide(rows, pairs)
    assert (table["p"].dropna() == 1.0).all() and not (table["verdict"] == ADVERSE).any()


def test_the_audit_family_never_keeps_more_than_the_system_family():
    scores = pool_logs(np.random.default_rng(11), systems=20, pools=300, groups=4, weights=[1, 0.75, 0.9, 1])
    rows, pairs = measure(scores, grouping="group", k=1, pool="observed", n_boot=2, n_perm=1)
    by_system, by_audit = (decide(rows, pairs, family=f) for f in ("system", "audit"))
    tested = by_system["p_adj"].notna()
    assert by_audit["p_adj"].notna().eq(tested).all()
    assert (by_audit["p_adj"][tested] >= by_system["p_adj"][tested] - 1e-12).all()
    assert (by_audit["verdict"] == ADVERSE).sum() <= (by_system["verdict"] == ADVERSE).sum()
    assert set(by_audit["family_size"]) == {20 * 6} and set(by_system["family_size"]) == {6}


def test_a_true_ratio_of_06_over_400_pools_of_8_is_called_adverse():
    """400 pools of 8 applicants, 4 of each of two groups (as the study's pools by sex), k = 1; an applicant of B
    is first with 0.6 times the chance of one of A (B's true impact ratio at k = 1): B is called adverse in at least
    90 % of 50 seeded audits. (With 8 groups of one applicant each, B's 32 expected picks against the winner of
    seven are found in about half the audits after the all-pairs adjustment: stated in docs/verdict.md's table.)"""
    scores = pool_logs(np.random.default_rng(6), systems=50, pools=400, groups=2, weights=[1, 0.6], per_pool=8,
                       balanced=True)
    rows, pairs = measure(scores, grouping="group", k=1, pool="observed", n_boot=2, n_perm=1)
    table = decide(rows, pairs)
    found = table[table["category"] == "B"]["verdict"].eq(ADVERSE).mean()
    assert found >= 0.9


def test_a_category_never_in_a_pool_with_its_comparator_is_not_comparable():
    """a in pools of 1 a + 9 c, b in pools of 1 b + 1 c, each ranked at random at k = 1: a's rate (0.1) against
    b's (0.5) is no within-pool comparison. Once ratio 0.22 [0.16, 0.30], p = 1, inconclusive forever with "+1 pool";
    now no test, no interval and no planner figure, and the cell says why."""
    rng = np.random.default_rng(4)
    groups = [["A"] + ["C"] * 9] * 200 + [["B", "C"]] * 200
    pool = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    scores = pool_logs(rng, systems=1, pools=1, groups=2).iloc[:0].reindex(range(pool.size)).assign(
        model="m0", task="t", subtask="s", mode="pointwise", candidate_id=np.arange(pool.size).astype(str),
        group=np.concatenate(groups), qualified=1, score=rng.random(pool.size), pool=pool)
    rows, pairs = measure(scores, grouping="group", k=1, pool="observed", n_boot=2, n_perm=1)
    table = decide(rows, pairs).set_index("category")
    assert table.loc["A", "comparator"] == "B"
    assert np.isnan(table.loc["A", "p"]) and np.isnan(table.loc["A", "impact_ratio_lo"])
    assert table.loc["A", "verdict"] == "inconclusive" and np.isnan(table.loc["A", "needed_per_group"])
    assert "never in a pool with B" in table.loc["A", "evidence"]
    assert table.loc["A", "plan"] == "not comparable within pools"
    assert np.isfinite(table.loc["C", "p"])  # C shares B's pools
