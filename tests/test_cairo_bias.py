"""CAIRO bias and combination search against direct pandas / NumPy computations on small random data."""
from __future__ import annotations

from itertools import combinations_with_replacement
from math import comb

import numpy as np
import pandas as pd
import pytest

from audit.cairo.bias import combination_bias, combination_count, combination_weights, metric_cells, subgroup_bias
from audit.cairo.correlation import best_pair
from audit.cairo.search import correlation_table, ranking_table, search_all, search_pair, source_table
from audit.errors import AuditError

SUBGROUPS = ("a", "b", "c")


def tidy(seed: int, *, models: int = 4, sets: int = 3, metrics: tuple[str, ...] = ("bold", "honest")) -> pd.DataFrame:
    """Random toxicities with unequal prompt counts per (set, subgroup), one row per continuation."""
    rng = np.random.default_rng(seed)
    rows = []
    for metric in metrics:
        for model in range(models):
            for s in ["original"] + [f"p{i}" for i in range(sets)]:
                for g, subgroup in enumerate(SUBGROUPS):
                    for k in range(1 + (g + len(s)) % 3):
                        rows.append((f"model{model}", metric, "gender", s, "hand" if s == "original" else f"lm{s[-1]}",
                                     10 * g + k, subgroup, rng.beta(1 + g, 4)))
    return pd.DataFrame(rows, columns=["model", "metric", "dimension", "prompt_set", "source", "position", "subgroup",
                                       "toxicity"])


def direct_bias(rows: pd.DataFrame) -> pd.Series:
    """Σ_g |mean toxicity of subgroup g − mean toxicity of all rows|, per model, straight from the rows."""
    out = {}
    for model, part in rows.groupby("model"):
        overall = part["toxicity"].mean()
        out[model] = sum(abs(sub["toxicity"].mean() - overall) for _, sub in part.groupby("subgroup"))
    return pd.Series(out)


def test_subgroup_bias_matches_the_formula_on_rows():
    table = tidy(1)
    rows = table[(table["metric"] == "bold") & (table["prompt_set"] == "original")]
    grid = rows.groupby(["model", "subgroup"])["toxicity"].agg(["sum", "count"]).unstack()
    got = subgroup_bias(grid["sum"].to_numpy(), grid["count"].to_numpy())
    np.testing.assert_allclose(got, direct_bias(rows).loc[grid.index].to_numpy(), rtol=1e-12)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_combination_bias_matches_concatenated_frames(m):
    table = tidy(2)
    cells = metric_cells(table)[("gender", "honest")]
    weights = combination_weights(len(cells.sets) - 1, m)
    got = combination_bias(cells, weights)
    rows = table[table["metric"] == "honest"]
    frames = {name: part for name, part in rows.groupby("prompt_set")}
    for c, picks in enumerate(combinations_with_replacement(cells.sets[1:], m - 1)):
        pooled = pd.concat([frames["original"], *(frames[p] for p in picks)])
        expected = direct_bias(pooled).loc[list(cells.models)].to_numpy()
        np.testing.assert_allclose(got[:, c], expected, rtol=1e-12)
        assert list(weights[c]) == [1] + [picks.count(s) for s in cells.sets[1:]]


@pytest.mark.parametrize("s,m", [(1, 1), (1, 4), (3, 2), (5, 3), (15, 6), (4, 1)])
def test_combination_count_is_multisets_of_paraphrase_sets(s, m):
    weights = combination_weights(s, m)
    assert len(weights) == comb(s + m - 2, m - 1) == combination_count(s, m)
    assert len({tuple(row) for row in weights}) == len(weights)
    assert (weights.sum(axis=1) == m).all() and (weights[:, 0] == 1).all()


def test_best_pair_and_average_match_a_brute_force_loop():
    rng = np.random.default_rng(3)
    a, b = rng.random((5, 7)), rng.random((5, 9))
    a[:, 2] = 0.5  # constant over models: no correlation defined, left out
    r = np.array([[np.corrcoef(a[:, i], b[:, j])[0, 1] for j in range(9)] for i in range(7) if i != 2])
    best, col_a, col_b, average = best_pair(a, b)
    assert best == pytest.approx(r.max())
    assert np.corrcoef(a[:, col_a], b[:, col_b])[0, 1] == pytest.approx(best)
    assert average == pytest.approx(r.mean())


def test_search_reports_original_best_and_average():
    cells = metric_cells(tidy(4, models=5))
    m1, m3 = (search_pair(cells[("gender", "bold")], cells[("gender", "honest")], m) for m in (1, 3))
    bold = tidy(4, models=5).query("metric == 'bold' and prompt_set == 'original'")
    honest = tidy(4, models=5).query("metric == 'honest' and prompt_set == 'original'")
    original = np.corrcoef(direct_bias(bold), direct_bias(honest))[0, 1]
    assert m1.original_r == pytest.approx(original) == pytest.approx(m1.best_r) == pytest.approx(m3.original_r)
    assert m3.best_r >= m3.average_r and m3.best_r >= m1.best_r - 1e-12
    assert len(m3.sets_a) == 3 and m3.sets_a[0] == "original" and m3.combinations_a == comb(3 + 1, 2)
    ranks = ranking_table(m3)
    assert set(ranks["prompts"]) == {"original prompts", "CAIRO (m = 3)"}
    assert ranks.groupby(["metric", "prompts"])["normalised_bias"].max().eq(1).all()
    assert source_table(m3).groupby("metric")["sets"].sum().eq(3).all()


def test_correlation_table_covers_every_pair_and_m():
    table = correlation_table(search_all(metric_cells(tidy(5, metrics=("bold", "honest", "holisticbias"))), 3))
    assert len(table) == 3 * 3
    assert set(zip(table["metric_a"], table["metric_b"])) == {("bold", "holisticbias"), ("bold", "honest"),
                                                             ("holisticbias", "honest")}


def test_fewer_than_three_models_is_refused():
    cells = metric_cells(tidy(6, models=2))
    with pytest.raises(AuditError, match="needs ≥ 3 models"):
        search_pair(cells[("gender", "bold")], cells[("gender", "honest")], 2)


def test_models_missing_a_cell_are_left_out():
    table = tidy(7)
    table = table[~((table["model"] == "model1") & (table["prompt_set"] == "p0") & (table["subgroup"] == "b")
                    & (table["metric"] == "bold"))]
    cells = metric_cells(table)
    assert "model1" not in cells[("gender", "bold")].models
    assert "model1" in cells[("gender", "honest")].models
