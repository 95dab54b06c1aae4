"""The exact within-pool test against an independent brute-force oracle (``tests/oracle.py``).

The oracle is checked against scipy first (Fisher's and the binomial test), then the tool's
``audit.metrics.exact.within_pool_pvalue`` and ``audit.metrics.pools.quota_chances`` against the oracle on random designs drawn by
hypothesis (1–4 pools of 1–12, 2–8 groups, groups missing from pools, tied scores, every k, 0/1 chances), on a
statistician's regression cases, and end to end: decision logs of every outcome kind imported with the CLI, whose
``verdict`` p-values and rates equal the oracle's and whose ``ll144`` table agrees with ``verdict`` cell for cell.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction
from itertools import combinations, permutations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest, fisher_exact

import oracle
from helpers import audit, audit_json

MAX_SUBSETS = 3_000  # subsets the oracle enumerates per example: a few tenths of a second at most
PROPERTY = settings(max_examples=100, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def tool_pvalue(pool, group, chance, a: int, b: int) -> float:
    """The tool's p-value (imported here so the module collects while the tool is being written)."""
    from audit.metrics.exact import within_pool_pvalue
    return within_pool_pvalue(np.asarray(pool, dtype=int), np.asarray(group, dtype=int),
                              np.asarray(chance, dtype=float), a, b)


def tool_chances(pool, score, k: int) -> np.ndarray:
    """The tool's top-k chances."""
    from audit.metrics.pools import quota_chances
    return np.asarray(quota_chances(np.asarray(pool, dtype=int), np.asarray(score, dtype=float), k), dtype=float)


def oracle_chances(pool, score, k: int) -> np.ndarray:
    """The oracle's top-k chances as floats."""
    return np.array([float(c) for c in oracle.quota_chances(pool, score, k)])


def same_p(tool: float, expected: float) -> bool:
    """Equal to 1e-9 relative, or 1e-12 absolute when both are tiny."""
    return math.isclose(tool, expected, rel_tol=1e-9, abs_tol=1e-12)


def fisher(selected, group, a: int, b: int) -> float:
    """Fisher's two-sided exact test of a against b on one pool of 0/1 selections."""
    table = [[sum(s for s, g in zip(selected, group) if g == x), sum(1 - s for s, g in zip(selected, group) if g == x)]
             for x in (a, b)]
    return float(fisher_exact(table).pvalue)


# --- the oracle against scipy and against itself ---------------------------------------------------------------------

def chances_by_orders(score: list[int], k: int) -> list[Fraction]:
    """One pool's top-k chances by enumerating every tie-break order: sort by score, then by a random priority."""
    hits = [0] * len(score)
    orders = list(permutations(range(len(score))))
    for priority in orders:
        for i in sorted(range(len(score)), key=lambda i: (-score[i], priority[i]))[:k]:
            hits[i] += 1
    return [Fraction(h, len(orders)) for h in hits]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from([0, 1, 2]), min_size=2, max_size=6), st.data())
def test_oracle_chances_are_the_tie_break_enumeration(score, data):
    k = data.draw(st.integers(1, len(score) - 1))
    assert oracle.quota_chances([0] * len(score), score, k) == chances_by_orders(score, k)


def test_oracle_law_of_a_design_computed_by_hand():
    """Pools (b1 a0 a0), (b0 a1 c0), (b1 a0 c0), chance in the digits: T = B1 + B2 + B3 with B1 = 1 w.p. 2/3 (two of
    three a-labels), B2, B3 fair coins; T = 1 observed, P(1) = 1/3, so p = P(0) + P(1) + P(3) = 1/12 + 4/12 + 2/12."""
    pool, group, chance = [0, 0, 0, 1, 1, 1, 2, 2, 2], [1, 0, 0, 1, 0, 2, 1, 0, 2], [1, 0, 0, 0, 1, 0, 1, 0, 0]
    law = oracle.within_pool_law(pool, group, chance, 0, 1)
    assert law == {0: Fraction(1, 12), 1: Fraction(1, 3), 2: Fraction(5, 12), 3: Fraction(1, 6)}
    assert oracle.within_pool_pvalue(pool, group, chance, 0, 1) == 7 / 12
    assert math.isnan(oracle.within_pool_pvalue(pool, group, chance, 0, 3))  # no pool holds both: not comparable


@pytest.mark.parametrize(("n_a", "n_b", "picked", "picked_a"), [(5, 7, 4, 0), (5, 7, 4, 3), (8, 8, 8, 6), (3, 9, 2, 1),
                                                                (10, 4, 13, 10), (6, 6, 6, 3)])
def test_oracle_on_one_pool_of_0_1_chances_is_fishers_test(n_a, n_b, picked, picked_a):
    group = [0] * n_a + [1] * n_b + [2] * 3  # a third group in the pool is left out of the test
    chance = [int(i < picked_a) for i in range(n_a)] + [int(i < picked - picked_a) for i in range(n_b)] + [1, 0, 1]
    p = oracle.within_pool_pvalue([0] * len(group), group, chance, 0, 1)
    assert same_p(p, fisher(chance, group, 0, 1))


@pytest.mark.parametrize(("pools", "a_first"), [(12, 9), (15, 2), (10, 5), (14, 14)])
def test_oracle_on_pools_of_one_a_one_b_at_k1_is_the_binomial_test(pools, a_first):
    pool = np.repeat(np.arange(pools), 2)
    group = np.tile([0, 1], pools)
    score = np.array([[1, 0] if p < a_first else [0, 1] for p in range(pools)]).ravel()
    chance = oracle.quota_chances(pool, score, 1)
    assert same_p(oracle.within_pool_pvalue(pool, group, chance, 0, 1), binomtest(a_first, pools).pvalue)


def test_oracle_monte_carlo_agrees_with_its_enumeration():
    rng = np.random.default_rng(7)
    pool = np.repeat(np.arange(4), [7, 9, 6, 8])
    group, score = rng.integers(0, 3, pool.size), rng.integers(0, 3, pool.size)
    chance = oracle.quota_chances(pool, score, 3)
    exact = oracle.within_pool_pvalue(pool, group, chance, 0, 1)
    p, se = oracle.monte_carlo_pvalue(pool, group, chance, 0, 1, draws=40_000, seed=1)
    assert 0.001 < exact < 1 and abs(p - exact) < 4 * se + 1e-3


def test_recorded_selection_of_each_outcome():
    assert oracle.recorded_selection("rank", [1, 2, 3, 1, 2], k=2) == [1, 1, 0, 1, 1]
    assert oracle.recorded_selection("selected", [0, 1, 1, 0]) == [0, 1, 1, 0]
    assert oracle.recorded_selection("score", [1, 2, 2, 2, 3, 5]) == [0, 0, 0, 0, 1, 1]  # median 2: ties not picked


# --- the tool against the oracle on random designs --------------------------------------------------------------------

@st.composite
def designs(draw, binary: bool | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int, int, np.ndarray]:
    """(pool, group, score, k, a, b, chance): 1–4 pools of 1–12 applicants (arbitrary pool ids, rows in any order),
    2–8 groups (a or b often missing from a pool), scores from {0, 1, 2} (ties everywhere) tilted for or against a
    (small p-values too), k from 1 to the largest pool's size − 1, and the chances either the top-k chances of the
    scores or tilted 0/1 chances."""
    n_groups = draw(st.integers(2, 8))
    a, b = draw(st.lists(st.integers(0, n_groups - 1), min_size=2, max_size=2, unique=True))
    sizes = draw(st.lists(st.integers(1, 12), min_size=1, max_size=4))
    assume(max(sizes) >= 2)
    n = sum(sizes)
    ids = draw(st.lists(st.integers(0, 10**6), min_size=len(sizes), max_size=len(sizes), unique=True))
    pool = np.repeat(ids, sizes)[draw(st.permutations(range(n)))]
    label = st.one_of(st.sampled_from([a, b]), st.integers(0, n_groups - 1))  # a and b common, the rest present
    group = np.array(draw(st.lists(label, min_size=n, max_size=n)))
    assume(oracle.subset_count(pool, group, a, b) <= MAX_SUBSETS)
    tilt = draw(st.sampled_from([-1, 0, 1])) * (group == a)
    score = np.clip(np.array(draw(st.lists(st.sampled_from([0, 1, 2]), min_size=n, max_size=n))) + tilt, 0, 2)
    k = draw(st.integers(1, max(sizes) - 1))
    if binary if binary is not None else draw(st.booleans()):
        chance = np.clip(np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))) + tilt, 0, 1).astype(float)
    else:
        chance = oracle_chances(pool, score, k)
    return pool, group, score, k, a, b, chance


@PROPERTY
@given(designs())
def test_tool_quota_chances_equal_the_oracles(design):
    pool, _, score, k, *_ = design
    np.testing.assert_allclose(tool_chances(pool, score, k), oracle_chances(pool, score, k), rtol=0, atol=1e-12)


@PROPERTY
@given(designs())
def test_tool_pvalue_equals_the_oracles(design):
    pool, group, _, _, a, b, chance = design
    assume(oracle.tested(pool, group, a, b))  # the untestable: test_nothing_to_test_is_not_comparable
    tool, expected = tool_pvalue(pool, group, chance, a, b), oracle.within_pool_pvalue(pool, group, chance, a, b)
    assert same_p(tool, expected), (tool, expected)


@PROPERTY
@given(designs(binary=False))
def test_tool_pvalue_on_its_own_chances_of_tied_scores_equals_the_oracles(design):
    pool, group, score, k, a, b, chance = design
    assume(oracle.tested(pool, group, a, b))
    tool = tool_pvalue(pool, group, tool_chances(pool, score, k), a, b)
    assert same_p(tool, oracle.within_pool_pvalue(pool, group, chance, a, b))


@pytest.mark.parametrize(("pool", "group", "chance"), [
    pytest.param([0, 0], [0, 0], [0.5, 0.5], id="a only"),
    pytest.param([0, 0], [1, 2], [1, 0], id="b only"),
    pytest.param([0, 0], [2, 2], [1, 0], id="neither"),
    pytest.param([0, 0, 1, 1], [0, 2, 1, 2], [1, 0, 0, 1], id="a and b in different pools"),
])
def test_nothing_to_test_is_not_comparable(pool, group, chance):
    """No pool holds both a and b: no within-pool comparison exists, and the p-value says so (NaN), never 1."""
    assert math.isnan(oracle.within_pool_pvalue(pool, group, chance, 0, 1))
    assert math.isnan(tool_pvalue(pool, group, chance, 0, 1))


def test_tool_on_a_design_too_big_to_enumerate_agrees_with_monte_carlo():
    """6 pools of 30 (C(20, 10) subsets a pool), distinct scores tilted towards group 0, k = 10: 0/1 chances, so the
    law's support is coarse and every value's probability is well estimated by the draws."""
    rng = np.random.default_rng(3)
    pool = np.repeat(np.arange(6), 30)
    group = rng.integers(0, 3, pool.size)
    score = rng.normal(size=pool.size) + 0.5 * (group == 0)
    chance = oracle_chances(pool, score, 10)
    assert oracle.subset_count(pool, group, 0, 1) > 100_000
    p, se = oracle.monte_carlo_pvalue(pool, group, chance, 0, 1, draws=40_000, seed=2)
    assert 0.001 < p < 0.5 and abs(tool_pvalue(pool, group, chance, 0, 1) - p) < 4 * se + 1e-3


# --- a statistician's regression cases --------------------------------------------------------------------------------

def test_one_pool_of_50_and_50_with_51_selected_is_fishers_test_not_zero():
    group = np.array([0] * 50 + [1] * 50)
    chance = np.array([1.0] * 20 + [0.0] * 30 + [1.0] * 31 + [0.0] * 19)
    expected = fisher(chance.astype(int), group, 0, 1)
    assert expected == pytest.approx(0.045, abs=0.005)
    assert same_p(tool_pvalue(np.zeros(100, dtype=int), group, chance, 0, 1), expected)


@pytest.mark.parametrize(("members", "pools", "k"), [((0, 1, 1), 60, 1), ((0,) * 9 + (1,), 30, 1),
                                                     ((0,) * 9 + (1,), 30, 4)])
def test_a_fully_tied_fair_design_has_p_1(members, pools, k):
    pool, group = np.repeat(np.arange(pools), len(members)), np.tile(members, pools)
    score = np.zeros(pool.size)
    chance = oracle_chances(pool, score, k)
    assert np.allclose(chance, k / len(members), atol=1e-12)
    assert oracle.within_pool_pvalue(pool, group, chance, 0, 1) == 1.0
    assert tool_pvalue(pool, group, chance, 0, 1) == pytest.approx(1.0, abs=1e-12)
    assert tool_pvalue(pool, group, tool_chances(pool, score, k), 0, 1) == pytest.approx(1.0, abs=1e-12)


def test_a_rotating_fair_pattern_at_k5_in_pools_of_4_and_4_is_not_significant():
    pools = 20
    pool, group = np.repeat(np.arange(pools), 8), np.tile([0] * 4 + [1] * 4, pools)
    picks = [[1, 1, 1, 0, 1, 1, 0, 0] if p % 2 else [1, 1, 0, 0, 1, 1, 1, 0] for p in range(pools)]  # 3a+2b, 2a+3b
    score = np.array(picks, dtype=float).ravel()
    chance = oracle_chances(pool, score, 5)
    np.testing.assert_array_equal(chance, score)
    expected = oracle.within_pool_pvalue(pool, group, chance, 0, 1)
    assert expected > 0.01 and same_p(tool_pvalue(pool, group, chance, 0, 1), expected)
    np.testing.assert_array_equal(tool_chances(pool, score, 5), score)


# --- end to end: decision logs through the command line ---------------------------------------------------------------

GROUPINGS = {"sex": ["sex"], "race": ["race"], "sex × race": ["sex", "race"]}  # verdict's names → the log's columns
LL144_NAMES = {"sex": "sex", "race/ethnicity": "race", "intersection": "sex × race"}  # ll144's names → verdict's
SPECS = {
    "rank": "applicant: id\ndemographics: [sex, race]\npool: req\nsubtask: job\noutcome: {rank: place}\n",
    "selected": "applicant: id\ndemographics: [sex, race]\npool: req\nsubtask: job\noutcome: {selected: hired}\n",
    "selected-unpooled": "applicant: id\ndemographics: [sex, race]\nsubtask: job\noutcome: {selected: hired}\n",
    "score": "applicant: id\ndemographics: [sex, race]\nsubtask: job\noutcome: {score: points}\n",
}
FAST = ["--bootstrap", "40", "--permutations", "40"]


def decision_log(seed: int) -> pd.DataFrame:
    """360 applicants, 2 subtasks × 30 pools of 6: 3 F + 3 M and 3 W + 3 B a pool (every 25th sex unknown, every
    25th race blank); a merit favouring M and W gives the place 1–6 in the pool, hired (the first two places but one
    in four F_B hires dropped: never a top-1 share) and whole points 0–10 (ties at the median), tripled in the second
    subtask (so a median over both subtasks would select others)."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(60):
        sex, race = rng.permutation(["F", "M"] * 3), rng.permutation(["W", "B"] * 3)
        merit = rng.normal(size=6) + 0.5 * (sex == "M") + 0.5 * (race == "W")
        place = np.argsort(np.argsort(-merit)) + 1
        for j in range(6):
            i = 6 * p + j
            hired = int(place[j] <= 2 and not (sex[j] == "F" and race[j] == "B" and i % 4 == 0))
            points = int(np.clip(round(5 + 2 * merit[j]), 0, 10)) * (1 if p < 30 else 3)
            rows.append(dict(id=f"a{i}", sex="unknown" if i % 25 == 3 else sex[j], race="" if i % 25 == 7 else race[j],
                             req=f"req-{p}", job="eng" if p < 30 else "ops", place=place[j], hired=hired,
                             points=points))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    """outcome kind → a SQLite store holding the log (task ``T``) of that kind."""
    folder = tmp_path_factory.mktemp("oracle-logs")
    log = decision_log(11)
    log.to_csv(folder / "log.csv", index=False)
    out = {}
    for kind, spec in SPECS.items():
        (folder / f"{kind}.yaml").write_text(spec)
        out[kind] = folder / f"{kind}.db"
        audit("import", "--format", "decisions", "--data", folder / "log.csv", "--spec", folder / f"{kind}.yaml",
              "--task", "T", "--label", "sys", "--db", out[kind], check=True)
    return out


def known_categories(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of categories with every value known (verdict reports 'unknown', 'F_unknown' … untested)."""
    return table[~table["category"].str.split("_").apply(lambda parts: "unknown" in parts)]


@functools.cache
def verdict_table(db: Path, *extra: str) -> pd.DataFrame:
    """``verdict``'s categories of task T in the store ``db`` (run once per arguments: two tests read each)."""
    found = audit_json("verdict", "--db", db, "--task", "T", "--format", "json", *FAST, *extra)["categories"]
    return known_categories(pd.DataFrame(found))


def ll144_table(db: Path, *extra: str) -> pd.DataFrame:
    """``ll144``'s table of task T in the store ``db``, its groupings under verdict's names."""
    table = pd.DataFrame(audit_json("ll144", "--db", db, "--task", "T", "--format", "json", *extra))
    return known_categories(table).assign(grouping=lambda t: t["grouping"].map(LL144_NAMES))


def categories(log: pd.DataFrame, grouping: str) -> pd.Series:
    """Each row's category under ``grouping`` ('F_W' …), None where a value is unknown or blank."""
    columns = log[GROUPINGS[grouping]].fillna("").astype(str)
    known = ~columns.isin(["", "unknown"]).any(axis=1)
    return columns.agg("_".join, axis=1).where(known, None)


def selection(kind: str, system: pd.DataFrame, k: int | None) -> list[int]:
    """What one system and subtask of the log selects."""
    outcome, column = {"rank": ("rank", "place"), "score": ("score", "points")}.get(kind, ("selected", "hired"))
    return oracle.recorded_selection(outcome, system[column], k)


def expected_p(kind: str, system: pd.DataFrame, picked: list[int], category: pd.Series, a: str, b: str) -> float:
    """The oracle's within-pool p of a against b: the log's pools, or one pool (Fisher's test) without them."""
    code = category.map({a: 0, b: 1}).fillna(-1).astype(int).to_numpy()
    if kind in ("selected-unpooled", "score"):
        return 1.0 if not ((code == 0).any() and (code == 1).any()) else fisher(picked, code, 0, 1)
    pool = pd.factorize(system["req"])[0]
    return oracle.within_pool_pvalue(pool, code, np.array(picked, dtype=float), 0, 1)


CASES = [("rank", None), ("rank", 2), ("rank", 3), ("selected", None), ("selected-unpooled", None), ("score", None)]


@pytest.mark.parametrize(("kind", "k"), CASES)
def test_verdict_p_and_rates_are_the_oracles(stores, kind, k):
    log = decision_log(11)
    table = verdict_table(stores[kind], "--family", "grouping", *(["--k", str(k)] if k else []))
    assert len(table) == 2 * (2 + 2 + 4)
    for row in table.itertuples():
        system = log[log["job"] == row.subtask].reset_index(drop=True)
        picked = selection(kind, system, k or 1)
        category = categories(system, row.grouping)
        mine = category == row.category
        assert row.candidates == mine.sum()
        assert row.selection_rate == pytest.approx(np.array(picked)[mine].mean(), abs=1e-12), row
        if row.category == row.comparator:
            assert pd.isna(row.p)
        else:
            assert same_p(row.p, expected_p(kind, system, picked, category, row.category, row.comparator)), row


FAMILIES = [pytest.param(kind, k, ("--family", "grouping"), id=f"{kind}-{k}-grouping") for kind, k in CASES] + [
    pytest.param(kind, None, (), id=f"{kind}-None-default") for kind in ("rank", "selected")]  # default: system


@pytest.mark.parametrize(("kind", "k", "family"), FAMILIES)
def test_ll144_and_verdict_agree_cell_for_cell(stores, kind, k, family):
    quota = ["--k", str(k)] if k else []
    keys = ["subtask", "grouping", "category"]
    judged = verdict_table(stores[kind], *family, *quota).set_index(keys)
    table = ll144_table(stores[kind], *family, *quota).set_index(keys)
    assert set(table.index) == set(judged.index)
    both = table.merge(judged, left_index=True, right_index=True, suffixes=("", "_verdict"))
    for column, theirs in (("selection_rate", "selection_rate_verdict"), ("p_value", "p"), ("p_holm", "p_adj")):
        np.testing.assert_allclose(both[column].astype(float), both[theirs].astype(float), rtol=1e-9, atol=1e-12,
                                   err_msg=column)
    given_ratio = both["impact_ratio"].notna()
    assert given_ratio.any()
    np.testing.assert_allclose(both.loc[given_ratio, "impact_ratio"], both.loc[given_ratio, "impact_ratio_verdict"],
                               rtol=1e-9, atol=1e-12)


@st.composite
def stacks(draw) -> tuple[pd.DataFrame, dict[str, str], int]:
    """(table, each system's outcome, largest pool size): 1–3 systems measured together, each a rank log (scores
    from {0, 1, 2}: ties at every quota), a 0/1 log or a score log (LL144's scoring rate), of 1–3 pools of
    1 … size members (its first pool of the largest size), 2–4 groups (each in every system, as the tool asks; often
    missing from a pool)."""
    n_groups, size = draw(st.integers(2, 4)), draw(st.integers(2, 7))
    parts, outcomes = [], {}
    for s in range(draw(st.integers(1, 3))):
        name, outcome = f"s{s}", draw(st.sampled_from(["rank", "selected", "score"]))
        binary = outcome == "selected"
        sizes = [size, *draw(st.lists(st.integers(1, size), max_size=2))]
        n = sum(sizes)
        assume(n >= n_groups)
        rest = draw(st.lists(st.integers(0, n_groups - 1), min_size=n - n_groups, max_size=n - n_groups))
        group = draw(st.permutations([*range(n_groups), *rest]))
        score = draw(st.lists(st.integers(0, 1 if binary else 2), min_size=n, max_size=n))
        parts.append(pd.DataFrame({"model": name, "task": "t", "subtask": "j", "mode": "pointwise",
                                   "candidate_id": [f"{name}-{i}" for i in range(n)],
                                   "group": [f"g{g}" for g in group], "qualified": 1, "score": np.array(score, float),
                                   "pool": np.repeat(np.arange(len(sizes)), sizes)}))
        outcomes[name] = outcome
    return pd.concat(parts, ignore_index=True), outcomes, size


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(stacks())
def test_every_quota_at_once_equals_the_oracle_at_each_quota(stack):
    """The verdict's pass over every quota (the Overview's, the quota strip's) of rank, 0/1 and score logs stacked
    together: each pair's raw p-value and each category's rate at each k equal the oracle's for that k (a 0/1 log's
    recorded decisions at every k, a score log's scoring above its median; a rank log's top-k chances with its ties'
    lottery)."""
    from audit.engine.verdict import measure
    from audit.metrics.keys import selection_keys, with_decisions

    table, outcomes, size = stack
    for name, rows in table.groupby("model"):
        for a, b in combinations(sorted(set(rows["group"])), 2):
            codes = rows["group"].str[1:].astype(int).to_numpy()
            assume(oracle.subset_count(rows["pool"].to_numpy(), codes, int(a[1:]), int(b[1:])) <= MAX_SUBSETS)
    recorded = pd.DataFrame([(name, "t", "j", outcome) for name, outcome in outcomes.items() if outcome != "rank"],
                            columns=["model", "task", "subtask", "outcome"])
    keys = with_decisions(selection_keys(table), recorded)
    quotas = list(range(1, size))
    rates, pairs = measure(table, grouping="group", k=quotas, pool="observed", n_boot=2, n_perm=1, keys=keys)
    for name, rows in table.groupby("model"):
        pool, score = rows["pool"].to_numpy(), rows["score"].to_numpy()
        group = rows["group"].str[1:].astype(int).to_numpy()
        for k in quotas:
            outcome = outcomes[name]
            chance = (oracle_chances(pool, score, k) if outcome == "rank" else
                      np.array(oracle.recorded_selection(outcome, score), dtype=float))
            found = pairs[(pairs["model"] == name) & (pairs["k"] == k)]
            for a, b, p in found[["a", "b", "p"]].itertuples(index=False):
                expected = oracle.within_pool_pvalue(pool, group, chance, int(a[1:]), int(b[1:]))
                assert (math.isnan(p) and math.isnan(expected)) or same_p(p, expected), (name, k, a, b, p, expected)
            shown = rates[(rates["model"] == name) & (rates["k"] == k)].set_index("category")["selection_rate"]
            for category, rate in shown.items():
                assert math.isclose(rate, chance[group == int(category[1:])].mean(), rel_tol=1e-12, abs_tol=1e-12)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(stacks())
def test_compare_gaps_equal_the_oracle_on_every_kind_of_log(stack):
    """``compare`` of two recorded systems (rank, 0/1 or score logs, in recorded pools): each system's ΔDP against
    g0 at every k is the oracle's gap in selection chances (a 0/1 log's recorded decisions, a score log's scoring
    above its median, a rank log's top-k chances with its ties' lottery)."""
    from audit.metrics.compare import compare_gaps

    table, outcomes, size = stack
    assume(len(outcomes) >= 2)
    a, b = "s0", "s1"
    recorded = pd.DataFrame([(name, "t", "j", outcome) for name, outcome in outcomes.items()],
                            columns=["model", "task", "subtask", "outcome"])
    quotas = list(range(1, size))
    gaps = compare_gaps(table[table["model"].isin([a, b])], a=a, b=b, reference="g0", ks=quotas, pool="observed",
                        n_boot=2, outcomes=recorded)
    for name, side in ((a, "dp_a"), (b, "dp_b")):
        rows = table[table["model"] == name]
        pool, score = rows["pool"].to_numpy(), rows["score"].to_numpy()
        group = rows["group"].str[1:].astype(int).to_numpy()
        for k in quotas:
            chance = (oracle_chances(pool, score, k) if outcomes[name] == "rank" else
                      np.array(oracle.recorded_selection(outcomes[name], score), dtype=float))
            for found in gaps[gaps["k"] == k].itertuples(index=False):
                expected = chance[group == int(found.group[1:])].mean() - chance[group == 0].mean()
                assert math.isclose(getattr(found, side), expected, abs_tol=1e-12), (name, k, found.group)
