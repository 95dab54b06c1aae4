"""CAIRO's two searches on hand-built tables with known answers, and the selection optimism they carry: the
permutation null (against a loop over permutations, and on seeded simulated audits with and without a true shared
signal) and the held-out r."""
from __future__ import annotations

from itertools import permutations

import numpy as np
import pandas as pd
import pytest

from audit.cairo.bias import MetricCells, metric_cells
from audit.cairo.correlation import best_combination, best_pair, best_same
from audit.cairo.optimism import half_split, model_permutations, null_best, permutation_test
from audit.cairo.scored import unify_subgroups
from audit.cairo.search import Options, few_models_warning, search_all, search_pair
from audit.errors import AuditError

# Per (metric, set): each model's toxicity on subgroup "x" prompts ("y" is always 0), so with one prompt per subgroup
# a set's bias is |t_x − t_y| / 2 · 2 = t_x, and the combination (original, p) — the original all zeros — has bias
# t_x(p) / 2: Pearson r of two combinations is r of the columns below.
#   same combination:  r(p0, p0) = r([1,2,3], [3,2,1]) = −1, r(p1, p1) = −1,
#                      r(p2, p2) = r([1,3,2], [2,1,3]) = centred [−1,1,0]·[0,−1,1] / 2 = −0.5  → best −0.5, mean −5/6;
#   independent:       r(a:p0, b:p1) = r([1,2,3], [1,2,3]) = +1                               → best +1.
HAND = {"a": {"p0": [1, 2, 3], "p1": [3, 2, 1], "p2": [1, 3, 2]},
        "b": {"p0": [3, 2, 1], "p1": [1, 2, 3], "p2": [2, 1, 3]}}


def hand_table() -> pd.DataFrame:
    rows = []
    for metric, sets in HAND.items():
        for name, values in {"original": [0, 0, 0], **sets}.items():
            for model, value in enumerate(values):
                rows += [(f"m{model}", metric, "gender", name, "hand" if name == "original" else f"lm-{name}", 0, "x",
                          float(value)),
                         (f"m{model}", metric, "gender", name, "hand" if name == "original" else f"lm-{name}", 1, "y",
                          0.0)]
    return pd.DataFrame(rows, columns=["model", "metric", "dimension", "prompt_set", "source", "position", "subgroup",
                                       "toxicity"])


def test_same_and_independent_search_on_a_hand_built_table():
    cells = metric_cells(hand_table())
    a, b = cells[("gender", "a")], cells[("gender", "b")]
    same = search_pair(a, b, 2, Options(search="same", splits=0))
    assert same.best_r == pytest.approx(-0.5) and same.average_r == pytest.approx(-5 / 6)
    assert same.sets_a == same.sets_b == ("original", "p2")
    wide = search_pair(a, b, 2, Options(search="independent", splits=0))
    assert wide.best_r == pytest.approx(1.0)
    assert (wide.sets_a, wide.sets_b) == (("original", "p0"), ("original", "p1"))
    assert np.isnan(same.heldout_r)  # one prompt per subgroup: no halves


def test_same_search_matches_sets_by_name():
    table = hand_table()
    table = table[~((table["metric"] == "b") & (table["prompt_set"] == "p2"))]
    cells = metric_cells(table)
    same = search_pair(cells[("gender", "a")], cells[("gender", "b")], 2, Options(splits=0))
    assert same.combinations_a == same.combinations_b == 2 and same.best_r == pytest.approx(-1.0)


def test_restricting_to_one_paraphraser():
    cells = metric_cells(hand_table())
    (only,) = search_all(cells, 2, Options(search="independent", splits=0, paraphraser="lm-p2"))[1:]
    assert only.combinations_a == 1 and only.best_r == pytest.approx(-0.5)
    with pytest.raises(AuditError, match="no prompt set was written by 'nobody'; sources: lm-p0, lm-p1, lm-p2"):
        search_all(cells, 2, Options(paraphraser="nobody"))


@pytest.mark.parametrize("search", ["same", "independent"])
@pytest.mark.parametrize("models", [4, 7])
def test_null_matches_a_loop_over_permutations(search, models):
    rng = np.random.default_rng(models)
    a, b = rng.random((models, 30)), rng.random((models, 30))
    a[:, 3] = 0.2  # constant: left out, as in the search itself
    orders, exact = model_permutations(models, 50, rng)
    assert exact == (models == 4) and len(orders) == (24 if models == 4 else 50)
    expected = [best_combination(a[order], b, search)[0] for order in orders]
    np.testing.assert_allclose(null_best(a, b, search, orders), expected, rtol=1e-10)


def test_exact_permutation_p_value_with_three_models():
    a = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, 0.5]])
    b = np.array([[1.0, 5.0], [2.0, 5.0], [3.1, 5.0]])  # column 1 constant: one valid combination
    best = best_same(a, b)[0]
    null95, p, used = permutation_test(a, b, "same", best, 200, np.random.default_rng(0))
    r = sorted(np.corrcoef(a[list(order), 0], b[:, 0])[0, 1] for order in permutations(range(3)))
    assert used == 6 and p == pytest.approx(sum(x >= best - 1e-9 for x in r) / 6) and p == pytest.approx(1 / 6)
    assert null95 == pytest.approx(np.quantile(r, 0.95))


def random_cells(rng: np.random.Generator, metric: str, models: int, signal: np.ndarray | None = None, *,
                 sets: int = 6, prompts: int = 8) -> MetricCells:
    """Toxicity per (model, set, prompt) of two subgroups; ``signal`` adds each model's own gap to subgroup 0."""
    subgroup = np.repeat([0, 1], prompts)
    sums = rng.beta(2, 8, (1, models, sets + 1, 2 * prompts))
    if signal is not None:
        sums = sums + signal[:, None, None] * (subgroup == 0)
    return MetricCells(metric, "gender", tuple(f"m{i}" for i in range(models)),
                       ("original", *(f"p{i}" for i in range(sets))), ("hand", *(f"lm{i}" for i in range(sets))),
                       ("g0", "g1"), sums, np.ones_like(sums), subgroup)


def test_random_tables_give_a_high_best_r_that_the_null_explains():
    rng = np.random.default_rng(12)
    results = [search_pair(random_cells(rng, "a", 5), random_cells(rng, "b", 5), 3, Options(splits=0, seed=trial))
               for trial in range(40)]
    assert np.median([r.best_r for r in results]) > 0.8  # the search finds "agreement" in noise …
    assert np.mean([r.p_value > 0.05 for r in results]) >= 0.9  # … that the permutation null explains
    assert all(r.permutations == 120 for r in results)  # 5! orders: the exact test
    assert few_models_warning(results) is None  # five models: no warning


def test_a_true_shared_signal_is_significant_and_survives_held_out_prompts():
    rng = np.random.default_rng(5)
    for trial in range(5):
        signal = rng.permutation(np.linspace(0, 0.3, 10))  # every model its own gap, spread evenly
        result = search_pair(random_cells(rng, "a", 10, signal), random_cells(rng, "b", 10, signal), 3,
                             Options(seed=trial))
        assert result.p_value < 0.05 and result.permutations == 200
        assert result.heldout_r > 0 and result.best_r > result.null_95


def test_few_models_are_warned_about():
    rng = np.random.default_rng(1)
    result = search_pair(random_cells(rng, "a", 3), random_cells(rng, "b", 3), 2, Options(splits=2))
    assert result.few_models and "only 3 models" in few_models_warning([result])


def test_half_split_keeps_every_subgroup_in_both_halves():
    cells = random_cells(np.random.default_rng(2), "a", 3, prompts=5)
    first = half_split(cells, np.random.default_rng(0))
    for group in (0, 1):
        assert (first & (cells.prompt_subgroup == group)).sum() == 2
    assert half_split(random_cells(np.random.default_rng(2), "a", 3, prompts=1), np.random.default_rng(0)) is None


def test_options_are_validated():
    with pytest.raises(AuditError, match="--search must be one of same, independent"):
        Options(search="both")
    with pytest.raises(AuditError, match="--permutations and --splits must be ≥ 0"):
        Options(permutations=-1)


def test_best_pair_is_the_independent_search():
    rng = np.random.default_rng(3)
    a, b = rng.random((5, 4)), rng.random((5, 4))
    assert best_combination(a, b, "independent") == best_pair(a, b)
    assert best_pair(a, b)[0] >= best_same(a, b)[0]


def test_subgroup_unification_renames_and_drops_before_the_bias():
    table = hand_table()
    many = table[table["metric"] == "a"].assign(subgroup=lambda t: t["subgroup"].map({"x": "binary-x", "y": "y"}))
    queer = many[many["subgroup"] == "y"].assign(subgroup="queer", position=2, toxicity=9.0)
    table = pd.concat([many, queer, table[table["metric"] == "b"]], ignore_index=True)
    unified = unify_subgroups(table, {"a": {"gender": {"binary-x": "x", "queer": None}}})
    assert set(unified.loc[unified["metric"] == "a", "subgroup"]) == {"x", "y"}
    search = Options(search="independent", splits=0)
    assert search_pair(*metric_cells(unified).values(), 2, search).best_r == pytest.approx(1.0)
    with pytest.raises(AuditError, match=r"a / gender has no subgroup\(s\) \['men'\]; it has \['binary-x', 'queer'"):
        unify_subgroups(table, {"a": {"gender": {"men": "x"}}})
    with pytest.raises(AuditError, match="no 'c' / 'gender' results to unify"):
        unify_subgroups(table, {"c": {"gender": {}}})
