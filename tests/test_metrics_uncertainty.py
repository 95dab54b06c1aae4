"""Uncertainty on gaps and validity: coverage by simulation, permutation p-values, Holm/BH, bootstrap metric draws."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from audit.errors import AuditError
from audit.metrics import MetricSuite, allocation_gaps
from audit.metrics.bands import draws_table, ndcg_bands, validity_bands
from audit.metrics.bias_table import key_bias
from audit.metrics.inference import adjust, adjusted, gap_pvalues
from audit.metrics.keys import split_keys
from audit.metrics.weighted import weighted_delta, weighted_emd, weighted_jsd, weighted_rabbi

VALUES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
LOW, HIGH, SPLIT = np.array([6, 6, 4, 2, 2]) / 20, np.array([1, 2, 4, 6, 7]) / 20, np.array([9, 1, 0, 1, 9]) / 20
#: reference R and seven groups of different location and shape, so δ and ΔDP at k = 2 agree only partly
MIXES = {"R": (0.4, 0.2), "G0": (0.0, 0.0), "G1": (0.2, 0.6), "G2": (0.4, 0.1), "G3": (0.6, 0.4), "G4": (0.8, 0.0),
         "G5": (0.1, 0.3), "G6": (0.5, 0.5)}


def law(high: float, split: float) -> np.ndarray:
    """A score law on VALUES mixing LOW, HIGH and SPLIT (shares multiples of 1/20: 400 candidates reproduce it)."""
    return high * HIGH + split * SPLIT + (1 - high - split) * LOW


LAWS = {group: law(*mix) for group, mix in MIXES.items()}


def frame(model: str, subtask: str, group: str, scores, qualified) -> pd.DataFrame:
    """Candidates of one group; scores get a tiny group offset, so no score is shared across groups."""
    offset = 1e-3 * sorted(MIXES).index(group) if group in MIXES else 0.0
    return pd.DataFrame({"model": model, "task": "t", "subtask": subtask, "mode": "pointwise",
                         "candidate_id": [f"{model}-{subtask}-{group}-{i}" for i in range(len(scores))],
                         "group": group, "qualified": qualified, "score": np.asarray(scores) + offset})


def population(laws: dict[str, np.ndarray], model: str = "m") -> pd.DataFrame:
    """The score laws exactly, as 400 candidates per group (every other candidate qualified)."""
    return pd.concat([frame(model, "pop", g, np.repeat(VALUES, np.rint(p * 400).astype(int)), np.arange(400) % 2)
                      for g, p in laws.items()], ignore_index=True)


def sample(laws: dict[str, np.ndarray], n: int, rng, model: str, subtask: str) -> pd.DataFrame:
    return pd.concat([frame(model, subtask, g, rng.choice(VALUES, size=n, p=p), rng.random(n) < 0.5)
                      for g, p in laws.items()], ignore_index=True)


@pytest.fixture(scope="module")
def simulated():
    """(population metric table at k = 2, 200 seeded audits of 100 candidates per group, their table with 95 % CIs)."""
    truth = MetricSuite(population(LAWS), reference="R").table(2).set_index("group")
    rng = np.random.default_rng(8)
    audits = pd.concat([sample(LAWS, 100, rng, "m", f"audit{i}") for i in range(200)], ignore_index=True)
    return truth, audits, MetricSuite(audits, reference="R", ci=0.95, n_boot=200, seed=1).table(2)


def test_gap_cis_cover_the_exact_population_gap_in_200_simulated_audits(simulated):
    truth, _, table = simulated
    true_gap = table["group"].map(truth["dp_gap"])
    covered = (table["dp_gap_lo"] <= true_gap) & (true_gap <= table["dp_gap_hi"])
    assert truth["dp_gap"].abs().max() > 0.05  # real gaps, not all zero
    for group, hits in covered.groupby(table["group"]):
        assert 0.90 <= hits.mean() <= 0.99, (group, hits.mean())


def test_pearson_r_ci_covers_the_population_r_in_200_simulated_audits(simulated):
    truth, audits, table = simulated
    index, draws = draws_table(audits, reference="R", n_boot=100, seed=2)
    bands = validity_bands(table, index, draws, by=("subtask", "k"))
    for metric in ("delta", "rabbi"):
        r_true = stats.pearsonr(truth[metric], truth["dp_gap"]).statistic
        assert 0.5 < r_true < 0.9  # partial agreement: the interval has something to find
        rows = bands[(bands["scope"] == "overall") & (bands["gap"] == "dp") & (bands["metric"] == metric)]
        assert len(rows) == 200
        covered = ((rows["r_lo"] <= r_true) & (r_true <= rows["r_hi"])).mean()
        assert 0.90 <= covered <= 0.99, (metric, r_true, covered)


def test_permutation_pvalues_are_uniform_under_a_true_null():
    rng = np.random.default_rng(3)
    audits = pd.concat([frame("m", f"audit{i}", g, rng.beta(2, 3, 15), rng.random(15) < 0.5)
                        for i in range(200) for g in "RAB"], ignore_index=True)
    pvalues = gap_pvalues(audits, reference="R", n_perm=199, seed=5)
    at_two = pvalues[(pvalues["k"] == 2) & (pvalues["group"] == "A")]
    assert len(at_two) == 200
    assert stats.kstest(at_two["dp_gap_p"], "uniform").pvalue > 0.01
    assert stats.kstest(at_two["eo_gap_p"], "uniform").pvalue > 0.01


def test_permutation_pvalues_find_a_real_gap_and_match_a_python_loop():
    rng = np.random.default_rng(4)
    scores = pd.concat([frame("m", "s", "R", rng.beta(2, 2, 30), np.arange(30) % 2),
                        frame("m", "s", "A", rng.beta(2, 2, 30) - 0.4, np.arange(30) % 2)], ignore_index=True)
    pvalues = gap_pvalues(scores, reference="R", n_perm=199, seed=0)
    assert (pvalues.loc[pvalues["k"] == 1, "dp_gap_p"] == 1 / 200).all()
    assert (pvalues.loc[pvalues["k"] == 2, "dp_gap_p"] == 1).all()  # both selected: no gap at k = pool size
    # the same statistic by a plain loop over shuffles: exact gaps of relabelled tables
    observed = allocation_gaps(scores, reference="R", ks=1)["dp_gap"].iloc[0]
    null = []
    for _ in range(60):
        shuffled = scores.assign(group=rng.permutation(scores["group"].to_numpy()))
        null.append(allocation_gaps(shuffled, reference="R", ks=1)["dp_gap"].iloc[0])
    assert abs(observed) > np.max(np.abs(null))


def test_suite_permutation_columns_and_their_checks():
    rng = np.random.default_rng(5)
    scores = pd.concat([frame("m", "s", g, rng.random(12), np.arange(12) % 2) for g in "RAB"], ignore_index=True)
    table = MetricSuite(scores, reference="R", n_perm=99).table([1, 2])
    assert table[["dp_gap_p", "eo_gap_p"]].notna().all().all()
    assert ((table["dp_gap_p"] >= 0.01) & (table["dp_gap_p"] <= 1)).all()
    with pytest.raises(AuditError, match="permutations"):
        MetricSuite(scores, reference="R", n_perm=0)


def test_holm_and_benjamini_hochberg_by_hand():
    p = [0.01, 0.04, 0.03, 0.2, np.nan]
    assert np.allclose(adjust(p, "holm")[:4], [0.04, 0.09, 0.09, 0.2])
    assert np.isnan(adjust(p, "holm")[4])
    assert np.allclose(adjust(p, "bh")[:4], [0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.2])
    with pytest.raises(AuditError, match="method"):
        adjust(p, "bonferroni-ish")
    table = pd.DataFrame({"model": ["a", "a", "b"], "mode": "p", "k": 2, "dp_gap_p": [0.01, 0.04, 0.04],
                          "eo_gap_p": [0.5, 0.5, 0.5]})
    out = adjusted(table, "holm")
    assert list(out["dp_gap_padj"]) == [0.02, 0.04, 0.04]  # each model is its own family


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(0, 2**32 - 1), st.sampled_from(["holm", "bh"]))
def test_adjusted_adjusts_each_family_on_its_own(rows, seed, method):
    """Every family (model, mode, k) adjusted alone equals the table adjusted at once; rows with a missing key stay
    NaN, NaN p-values stay NaN and do not count."""
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({"model": rng.choice(["a", "b", None], rows), "mode": rng.choice(["p", "q"], rows),
                          "k": rng.integers(1, 4, rows), "dp_gap_p": np.where(rng.random(rows) < 0.2, np.nan,
                                                                              rng.random(rows)),
                          "eo_gap_p": rng.choice([0.01, 0.5, 1.0, np.nan], rows)})
    out = adjusted(table, method)
    for column in ("dp_gap_p", "eo_gap_p"):
        expected = np.full(rows, np.nan)
        for key in {(m, d, k) for m, d, k in zip(table["model"], table["mode"], table["k"]) if isinstance(m, str)}:
            members = np.flatnonzero([(m, d, k) == key for m, d, k in zip(table["model"], table["mode"], table["k"])])
            expected[members] = adjust(table[column].to_numpy()[members], method)
        assert np.array_equal(out[f"{column}adj"].to_numpy(), expected, equal_nan=True)


def test_weighted_metrics_on_the_original_counts_match_the_candidate_metrics():
    rng = np.random.default_rng(6)
    many = pd.concat([frame("m", "s", g, rng.random(40), np.arange(40) % 3 == 0) for g in "RAB"], ignore_index=True)
    few = pd.concat([frame("m", "s", g, rng.choice(VALUES, 40), np.arange(40) % 3 == 0) for g in "RAB"],
                    ignore_index=True)
    for scores in (many, few):  # binned JSD (many distinct values) and one bin per value
        data = split_keys(scores, reference="R")[0]
        expected = key_bias(data).set_index("group")
        others = [g for g in range(3) if g != data.ref]
        for name, grid in (("delta", weighted_delta), ("emd", weighted_emd), ("jsd", weighted_jsd)):
            got = grid(data.counts[None], data.ref, data.values)[0, others]
            assert np.allclose(got, expected.loc[["A", "B"], name], atol=1e-12), name
        assert np.allclose(weighted_rabbi(data.counts[None], data.ref)[0, others], expected.loc[["A", "B"], "rabbi"])


def test_bands_on_a_small_table_and_ndcg_bands():
    rng = np.random.default_rng(9)
    scores = pd.concat([sample({"R": law(0.5, 0), "A": law(a, 0), "B": law(1 - a, 0)}, 30, rng, f"m{i}", s)
                        for i, a in enumerate([0.1, 0.4, 0.8]) for s in ("s1", "s2")], ignore_index=True)
    table = MetricSuite(scores, reference="R").table([1, 2])
    index, draws = draws_table(scores, reference="R", n_boot=50)
    bands = validity_bands(table, index, draws)
    assert {"r_lo", "r_hi"} <= set(bands.columns)
    finite = bands.dropna(subset=["r", "r_lo"])
    assert len(finite) and ((finite["r_lo"] <= finite["r_hi"]) & finite["r_lo"].between(-1, 1)).all()
    ndcg = ndcg_bands(table, index, draws)
    assert (ndcg["ndcg_lo"] <= ndcg["ndcg_hi"]).all() and ndcg["ndcg_hi"].le(1 + 1e-9).all()


def test_pvalues_do_not_depend_on_memory_chunking(monkeypatch):
    rng = np.random.default_rng(10)
    scores = pd.concat([frame("m", "s", g, rng.random(20), np.arange(20) % 2) for g in "RAB"], ignore_index=True)
    whole = gap_pvalues(scores, reference="R", n_perm=150, seed=3)
    monkeypatch.setattr("audit.metrics.inference._CELLS_PER_CHUNK", 500)
    chunked = gap_pvalues(scores, reference="R", n_perm=150, seed=3)
    pd.testing.assert_frame_equal(whole, chunked)


def test_suite_keeps_the_draws_behind_its_intervals():
    rng = np.random.default_rng(11)
    scores = pd.concat([frame("m", s, g, rng.random(15), np.arange(15) % 2) for s in ("s1", "s2") for g in "RAB"],
                       ignore_index=True)
    suite = MetricSuite(scores, reference="R", ci=0.9, n_boot=60, seed=4, keep_draws=True)
    index, draws = suite.draws
    alone_index, alone = draws_table(scores, reference="R", n_boot=60, seed=4)
    pd.testing.assert_frame_equal(index.reset_index(drop=True), alone_index)
    for name in alone:
        np.testing.assert_array_equal(draws[name], alone[name])
    table = suite.table(range(1, 4))
    assert np.allclose(np.quantile(draws["dp_gap"], 0.05, axis=1), table["dp_gap_lo"])
    with pytest.raises(AuditError, match="confidence level"):
        MetricSuite(scores, reference="R", keep_draws=True)


@pytest.mark.parametrize("pool", ["per-group", "random:4"])
def test_shuffled_label_gaps_equal_the_exact_gaps_of_the_relabelled_table(pool):
    from audit.metrics.inference import group_shares
    from audit.design import PoolDesign
    from audit.metrics.pools import candidate_laws, pool_size
    rng = np.random.default_rng(12)
    scores = pd.concat([frame("m", "s", g, rng.choice(VALUES, 9), np.arange(9) % 2) for g in "RABC"],
                       ignore_index=True)
    data = split_keys(scores, reference="R")[0]
    design = PoolDesign.parse(pool)
    labels = np.stack([rng.permutation(data.group) for _ in range(3)])
    chances = np.cumsum(candidate_laws(data, design, labels), axis=0)
    phi = group_shares(labels, chances, np.ones(data.group.size), len(data.groups))
    psi = group_shares(labels, chances, data.qualified.astype(float), len(data.groups))
    size = pool_size(design, data)
    for b in range(3):
        relabelled = pd.DataFrame({"model": "m", "task": "t", "subtask": "s", "mode": "pointwise",
                                   "candidate_id": data.candidate_id, "group": np.asarray(data.groups)[labels[b]],
                                   "qualified": data.qualified, "score": data.score})
        exact = allocation_gaps(relabelled, reference="R", ks=range(1, size + 1), pool=pool)
        others = [g for g in range(len(data.groups)) if g != data.ref]
        assert np.allclose((phi[b] - phi[b, data.ref])[others].ravel(), exact["dp_gap"], atol=1e-12)
        assert np.allclose((psi[b] - psi[b, data.ref])[others].ravel(), exact["eo_gap"], atol=1e-12)


@pytest.mark.parametrize("pool", ["random:4", "observed"])
def test_label_free_shares_of_a_relabelling_equal_the_exact_shares_of_the_relabelled_table(pool):
    """Issue 19: for designs whose rank laws do not depend on the labels (random:N, recorded pools) a shuffle's shares
    follow from how many rows of each group hold each (law, qualified) cell; for any relabelling they equal the
    exact shares of the relabelled table."""
    from audit.design import PoolDesign
    from audit.metrics.inference import label_free_cells, table_shares
    rng = np.random.default_rng(13)
    scores = pd.concat([frame("m", "s", g, rng.choice(VALUES, 8), np.arange(8) % 2) for g in "RABC"],
                       ignore_index=True)
    scores["pool"] = np.tile(np.arange(8), 4)  # eight recorded pools of one candidate per group
    data = split_keys(scores, reference="R")[0]
    cells = label_free_cells(data, PoolDesign.parse(pool))
    relabellings = np.stack([rng.permutation(data.group) for _ in range(3)])
    tables = np.stack([np.bincount(labels * len(cells[1]) + cells[2], minlength=len(data.groups) * len(cells[1]))
                       .reshape(len(data.groups), -1) for labels in relabellings])
    phi, psi = table_shares(cells, tables)
    others = [g for g in range(len(data.groups)) if g != data.ref]
    for b, labels in enumerate(relabellings):
        relabelled = scores.iloc[:0].reindex(range(data.group.size)).assign(
            model="m", task="t", subtask="s", mode="pointwise", candidate_id=data.candidate_id,
            group=np.asarray(data.groups)[labels], qualified=data.qualified, score=data.score,
            pool=np.asarray(data.pool))
        exact = allocation_gaps(relabelled, reference="R", ks=range(1, phi.shape[2] + 1), pool=pool)
        assert np.allclose((phi[b] - phi[b, data.ref])[others].ravel(), exact["dp_gap"], atol=1e-12)
        assert np.allclose((psi[b] - psi[b, data.ref])[others].ravel(), exact["eo_gap"], atol=1e-12)


def test_shuffled_tables_have_the_law_of_a_uniform_shuffle():
    """Each drawn table keeps both margins, and its cells have the mean and variance of the counts a uniform
    permutation of the labels gives (here against 100,000 real shuffles); the 2 × 2 case is hypergeometric."""
    from audit.metrics.inference import shuffled_tables
    rng = np.random.default_rng(5)
    small = shuffled_tables(rng, np.array([2, 2]), np.array([2, 2]), 60_000)[:, 0, 0]
    assert np.allclose(np.bincount(small) / small.size, [1 / 6, 4 / 6, 1 / 6], atol=0.01)
    totals, sizes, n = np.array([3, 5, 2]), np.array([4, 1, 5]), 100_000
    tables = shuffled_tables(rng, totals, sizes, n)
    assert (tables.sum(axis=2) == totals).all() and (tables.sum(axis=1) == sizes).all() and (tables >= 0).all()
    labels, cells = np.repeat(np.arange(3), totals), np.repeat(np.arange(3), sizes)
    shuffled = rng.permuted(np.broadcast_to(labels, (n, labels.size)), axis=1)
    counts = np.stack([(shuffled == g)[:, cells == c].sum(axis=1) for g in range(3) for c in range(3)], axis=1)
    drawn = tables.reshape(n, 9)
    assert np.allclose(drawn.mean(axis=0), counts.mean(axis=0), atol=0.02)
    assert np.allclose(drawn.var(axis=0), counts.var(axis=0), atol=0.03)
