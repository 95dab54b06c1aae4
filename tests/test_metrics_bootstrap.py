"""Bootstrap intervals: weighted RABBI, resampled pool laws, and the sanity of the resulting bounds."""
import numpy as np
import pandas as pd
import pytest
from helpers import score_table

from audit.metrics import MetricSuite, PoolDesign, rabbi
from audit.metrics.allocation import shares
from audit.metrics.bootstrap import replicates, resampled_counts, weighted_rabbi
from audit.metrics.keys import split_keys
from audit.metrics.pools import rank_laws


def table(n, shift=0.0, seed=0, groups="RAB"):
    rng = np.random.default_rng(seed)
    return score_table({g: (np.round(rng.beta(2, 2, n) + (shift if g == "A" else 0.0), 2), [i % 3 == 0 for i in range(n)])
                        for g in groups})


def test_weighted_rabbi_on_the_original_counts_is_rabbi():
    data = split_keys(table(40, shift=0.1), reference="R")[0]
    values = weighted_rabbi(data.counts[None], data.ref)[0]
    for g in range(3):
        assert values[g] == pytest.approx(rabbi(data.of(g), data.of(data.ref)), abs=1e-12)


def test_resampled_counts_keep_group_sizes_and_qualified_subsets():
    data = split_keys(table(30), reference="R")[0]
    counts, qualified = resampled_counts(data, np.random.default_rng(0), 50)
    assert (counts.sum(axis=2) == 30).all()
    assert (qualified <= counts).all()
    qualified_cells = data.qualified_counts > 0
    assert (qualified[:, ~qualified_cells] == 0).all()


@pytest.mark.parametrize("pool", ["per-group", "random:4"])
def test_pool_laws_with_the_original_counts_are_exact(pool):
    data = split_keys(table(20, seed=1), reference="R")[0]
    design = PoolDesign.parse(pool)
    phi, psi = shares(data, design)
    law, qualified_law = rank_laws(data, design, counts=np.repeat(data.counts[None], 3, axis=0),
                                   qualified_counts=np.repeat(data.qualified_counts[None], 3, axis=0))
    np.testing.assert_allclose(np.cumsum(law, axis=-1), np.broadcast_to(phi, (3,) + phi.shape), atol=1e-14)
    np.testing.assert_allclose(np.cumsum(qualified_law, axis=-1), np.broadcast_to(psi, (3,) + psi.shape), atol=1e-14)


def bounds(scores, **options):
    return MetricSuite(scores, reference="R", ci=0.9, n_boot=300, seed=5, **options).table([1, 2])


def test_intervals_bracket_the_estimates_and_are_seeded():
    out = bounds(table(60, shift=0.15, seed=2))
    for name in ("rabbi", "rabbi_qualified", "dp_gap", "eo_gap"):
        assert (out[f"{name}_lo"] <= out[f"{name}_hi"]).all()
        assert ((out[f"{name}_lo"] <= out[name]) & (out[name] <= out[f"{name}_hi"])).all()
    assert out.equals(bounds(table(60, shift=0.15, seed=2)))
    assert not out.equals(MetricSuite(table(60, shift=0.15, seed=2), reference="R", ci=0.9, n_boot=300,
                                       seed=6).table([1, 2]))


def test_intervals_shrink_with_more_candidates_and_separate_a_real_gap():
    small, large = bounds(table(30, shift=0.3, seed=3)), bounds(table(480, shift=0.3, seed=3))
    width = lambda t, name: (t[f"{name}_hi"] - t[f"{name}_lo"]).mean()
    for name in ("rabbi", "dp_gap"):
        assert width(large, name) < width(small, name) / 2.5  # about 1/√16 = 1/4
    shifted = large[large.group == "A"]
    assert (shifted["rabbi_lo"] > 0).all() and (shifted["dp_gap_lo"] > 0).all()
    same = large[large.group == "B"]  # B is drawn like the reference group
    assert ((same["rabbi_lo"] < 0) & (same["rabbi_hi"] > 0)).all()


def test_observed_design_resamples_pools():
    rng = np.random.default_rng(4)
    rows = [dict(model="m", task="t", subtask="s", mode="pairwise", candidate_id=f"{g}{p}", group=g,
                 qualified=int(p % 2 == 0), score=float(rng.integers(0, 4)), pool=p) for p in range(40) for g in "RAB"]
    out = bounds(pd.DataFrame(rows), pool="observed")
    assert (out["dp_gap_lo"] <= out["dp_gap"]).all() and (out["dp_gap"] <= out["dp_gap_hi"]).all()
    assert (out["dp_gap_hi"] - out["dp_gap_lo"] > 0).all()


@pytest.mark.parametrize("pool", ["per-group", "random:4"])
def test_replicates_do_not_depend_on_how_many_are_computed_at_once(monkeypatch, pool):
    data = split_keys(table(20, shift=0.2), reference="R")[0]
    design = PoolDesign.parse(pool)
    whole = replicates(data, design, n_boot=120, seed=1, bins=20)
    monkeypatch.setattr("audit.metrics.bootstrap._PER_ROUND", 25)
    monkeypatch.setattr("audit.metrics.bootstrap._CELLS_PER_CHUNK", 400)
    chunked = replicates(data, design, n_boot=120, seed=1, bins=20)
    for name in whole:
        np.testing.assert_array_equal(whole[name], chunked[name], err_msg=name)
