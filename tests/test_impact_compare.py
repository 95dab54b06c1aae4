"""Impact ratios against a direct computation from `audit metrics`, and the paired comparison of two systems:
exact zero for a system against itself, and interval coverage in seeded simulations with a known shift."""
from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from audit.cli import main
from helpers import audit_json
from audit.metrics.allocation import selection_shares
from audit.metrics.compare import compare_gaps, rank_correlation, selection_flips
from audit.metrics.keys import split_keys
from audit.metrics.pools import PoolDesign, rank_laws
from audit.paths import DEMO_STORE

GROUPS = ("a", "b", "c")
PMF = {"a": [.1, .2, .3, .2, .1, .1], "b": [.3, .3, .2, .1, .05, .05], "c": [.05, .1, .2, .3, .2, .15]}
SHIFT = {"b": 1}


@pytest.fixture(scope="module")
def pointwise(tmp_path_factory):
    """The demo store's pointwise scores as a CSV, exported by the CLI."""
    folder = tmp_path_factory.mktemp("impact")
    assert main(["scores", "--db", str(DEMO_STORE), "--task", "resume", "--out", str(folder / "all.csv")]) == 0
    scores = pd.read_csv(folder / "all.csv")
    path = folder / "pointwise.csv"
    scores[scores["mode"] == "pointwise"].to_csv(path, index=False)
    return path


def cli_json(capsys, *argv):
    return pd.DataFrame(audit_json(*argv))


def direct_rates(metrics: pd.DataFrame, reference: str, size: int) -> pd.DataFrame:
    """Selection rates from the metrics CLI's ΔDP: one candidate per category per pool and k selected, so the rates
    sum to k and φ(ref) = (k − Σ ΔDP) / size, φ(A) = φ(ref) + ΔDP(A)."""
    rows = []
    for (model, subtask, k), part in metrics.groupby(["model", "subtask", "k"]):
        ref = (k - part["dp_gap"].sum()) / size
        rates = {reference: ref, **dict(zip(part["group"], ref + part["dp_gap"]))}
        top = max(rates.values())
        rows += [(model, subtask, k, g, r, r / top) for g, r in rates.items()]
    return pd.DataFrame(rows, columns=["model", "subtask", "k", "category", "rate", "ratio"])


@pytest.mark.parametrize("grouping, reference, size", [("race × gender", "W_M", 8), ("race", "W", 4)])
def test_impact_ratios_equal_direct_computation_from_metrics(pointwise, tmp_path, capsys, grouping, reference, size):
    scores = pd.read_csv(pointwise)
    if grouping == "race":
        scores["group"] = scores["group"].str.split("_").str[0]
    scores.to_csv(tmp_path / "grouped.csv", index=False)
    ks = f"1-{size - 1}"  # k = pool size is refused: everyone selected
    metrics = cli_json(capsys, "metrics", "--scores", str(tmp_path / "grouped.csv"), "--reference", reference,
                       "--k", ks)
    impact = cli_json(capsys, "impact", "--scores", str(pointwise), "--k", ks, "--grouping", grouping,
                      "--bootstrap", "20", "--format", "json")
    merged = impact.merge(direct_rates(metrics, reference, size), on=["model", "subtask", "k", "category"],
                          validate="one_to_one")
    assert len(merged) == len(impact) == len(metrics) * size // (size - 1)
    assert np.abs(merged["selection_rate"] - merged["rate"]).max() < 1e-12
    assert np.abs(merged["impact_ratio"] - merged["ratio"]).max() < 1e-12
    assert (merged["four_fifths"] == (merged["ratio"] < 0.8)).all()
    assert merged["four_fifths"].any() and not merged["four_fifths"].all()
    assert (merged["selection_rate_lo"] <= merged["selection_rate"] + 1e-12).all()
    # one interval per ratio: the pair's own (the verdict's), which may pass 1 (the comparator need not lead in every
    # replicate); the comparator's ratio is 1 by construction and has none
    bounded = merged.dropna(subset=["impact_ratio_lo"])
    assert len(bounded) and (bounded["impact_ratio_lo"] >= 0).all()
    assert (bounded["impact_ratio_lo"] <= bounded["impact_ratio_hi"] + 1e-12).all()
    assert merged.loc[merged["impact_ratio_lo"].isna(), "impact_ratio"].eq(1).all()


def test_impact_markdown_and_bad_input(pointwise, capsys):
    assert main(["impact", "--scores", str(pointwise), "--k", "1", "--grouping", "gender", "--bootstrap", "5",
                 "--format", "md"]) == 0  # gender's pools hold 2: k = 2 is refused (everyone selected)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| model | task | subtask |") and lines[1].startswith("| --- |")
    assert main(["impact", "--scores", str(pointwise), "--k", "9"]) == 2
    assert "quota k=9 is not below the pool size 8" in capsys.readouterr().err
    assert main(["compare", "--db", str(DEMO_STORE), "--task", "resume", "--a", "smollm2-135m", "--b", "nope", "--k",
                 "2"]) == 2
    assert "model 'nope' has no scores" in capsys.readouterr().err


def test_self_comparison_is_exactly_zero(pointwise):
    scores = pd.read_csv(pointwise)
    gaps = compare_gaps(scores, a="smollm2-135m", b="smollm2-135m", reference="W_M", ks=[1, 2, 4], n_boot=100)
    bounds = gaps[[f"{g}_diff{end}" for g in ("dp", "eo") for end in ("", "_lo", "_hi")]].to_numpy()
    assert len(gaps) == 4 * 7 * 3 and (bounds == 0).all()
    assert not selection_flips(scores, a="smollm2-135m", b="smollm2-135m", k=2)["flipped"].any()
    assert (rank_correlation(scores, a="smollm2-135m", b="smollm2-135m")["spearman"] == 1).all()


def test_comparison_of_two_models(pointwise):
    scores = pd.read_csv(pointwise)
    gaps = compare_gaps(scores, a="smollm2-135m", b="qwen2.5-coder-0.5b", reference="W_M", ks=2, n_boot=200)
    assert np.allclose(gaps["dp_diff"], gaps["dp_b"] - gaps["dp_a"])
    assert (gaps["dp_diff_lo"] < gaps["dp_diff_hi"]).all() and gaps[["eo_diff_lo", "eo_diff_hi"]].notna().all().all()
    flips = selection_flips(scores, a="smollm2-135m", b="qwen2.5-coder-0.5b", k=2)
    crossed = (flips["selected_a"] > 0.5) != (flips["selected_b"] > 0.5)
    assert (flips["flipped"] == crossed).all() and 0 < crossed.sum() < len(flips)
    # selection chances average to each group's exact rate: per subtask they sum to k per pool of 8
    totals = flips.groupby("subtask")[["selected_a", "selected_b"]].mean() * 8
    assert np.allclose(totals, 2)


def population_shares(shift: dict[str, int]) -> np.ndarray:
    """Exact φ of the population (scores drawn from PMF, shifted per group) via the engine's rank laws, with every
    score cell given its population probability as weight."""
    grid = np.arange(8)
    cells = pd.DataFrame([(g, v) for g in GROUPS for v in grid], columns=["group", "score"])
    table = cells.assign(model="m", task="t", subtask="s", mode="pointwise", qualified=1,
                         candidate_id=[f"{g}{v}" for g, v in zip(cells["group"], cells["score"])])
    data = split_keys(table, reference="a")[0]
    weights = np.zeros((1, len(GROUPS), grid.size))
    for i, g in enumerate(GROUPS):
        weights[0, i, np.arange(6) + shift.get(g, 0)] = PMF[g]
    law = rank_laws(data, PoolDesign.parse("per-group"), counts=weights, qualified_counts=weights)[0]
    return selection_shares(law)[0]


def sample(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """n candidates per group; A scores them from PMF, B gives the same candidates A's score plus SHIFT."""
    rows = []
    for g in GROUPS:
        values, qualified = rng.choice(6, size=n, p=PMF[g]), np.r_[1, rng.integers(0, 2, n - 1)]
        for i, (v, q) in enumerate(zip(values, qualified)):
            rows += [(model, "t", "s", "pointwise", f"{g}{i}", g, q, float(score))
                     for model, score in (("A", v), ("B", v + SHIFT.get(g, 0)))]
    return pd.DataFrame(rows, columns=["model", "task", "subtask", "mode", "candidate_id", "group", "qualified",
                                       "score"])


def test_paired_bootstrap_covers_a_known_shift():
    before, after = population_shares({}), population_shares(SHIFT)
    truth = {g: (after[i, 0] - after[0, 0]) - (before[i, 0] - before[0, 0]) for i, g in enumerate(GROUPS) if i}
    assert truth["b"] > 0.1 and truth["c"] < 0  # the shift helps b, and so costs c
    rng = np.random.default_rng(1)
    hits = []
    for sim in range(200):
        gaps = compare_gaps(sample(rng, 40), a="A", b="B", reference="a", ks=1, n_boot=200, seed=sim)
        hits += [row.dp_diff_lo <= truth[row.group] <= row.dp_diff_hi for row in gaps.itertuples()]
    assert 0.90 <= np.mean(hits) <= 0.99
