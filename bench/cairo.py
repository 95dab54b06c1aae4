"""Benchmark: CAIRO bias of every prompt combination (matrix product) against a per-combination pandas concat, and
the permutation null of the best combination (blocked matrix products) against a loop over permutations.

Setting (the paper's scale): 15 paraphrase sets + the original, combinations of m = 1 … 6 sets (original + m − 1
paraphrase sets with replacement: 15,504 per metric), 10 models × 3 metrics, 4 subgroups, 10 prompts per
(set, subgroup), random toxicities. The bias baseline concatenates the combination's data frames and takes group
means, as a straightforward implementation would; it is timed on a sample of combinations and scaled to all of them,
and its biases are checked against the engine's on that sample. The null baseline loops over permutations and
combinations with one Pearson r each (as the CAIRO code scores each combination), timed on a few permutations of one
(metric pair, m), scaled to 200 permutations of every pair and m, and its best r checked against the engine's.

    .venv/bin/python bench/cairo.py [--sample 300] [--permutations 200]
"""
from __future__ import annotations

import argparse
import sys
import time
from itertools import combinations_with_replacement
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from audit.cairo.bias import combination_bias, combination_weights, metric_cells  # noqa: E402
from audit.cairo.optimism import model_permutations, null_best  # noqa: E402
from audit.cairo.search import Options, search_all  # noqa: E402

PARAPHRASE_SETS, MODELS, METRICS, SUBGROUPS, PROMPTS, MAX_M = 15, 10, 3, 4, 10, 6


def toxicity_table(seed: int = 0) -> pd.DataFrame:
    """One row per continuation: model, metric, dimension, prompt_set, source, subgroup, toxicity."""
    rng = np.random.default_rng(seed)
    sets = ["original"] + [f"p{i:02d}" for i in range(PARAPHRASE_SETS)]
    index = pd.MultiIndex.from_product([[f"model{i}" for i in range(MODELS)], [f"metric{i}" for i in range(METRICS)],
                                        sets, [f"g{i}" for i in range(SUBGROUPS)], range(PROMPTS)],
                                       names=["model", "metric", "prompt_set", "subgroup", "prompt"])
    table = index.to_frame(index=False)
    return table.assign(dimension="gender", source=table["prompt_set"], toxicity=rng.beta(1, 6, len(table)),
                        position=table["subgroup"].str[1:].astype(int) * PROMPTS + table["prompt"])


def baseline_bias(frames: dict[str, pd.DataFrame], combination: tuple[str, ...]) -> pd.Series:
    """Bias per model of one combination: concatenate its sets' rows, Σ_g |mean_g − mean| per model."""
    pooled = pd.concat([frames[name] for name in combination], ignore_index=True)
    overall = pooled.groupby("model")["toxicity"].mean()
    per_group = pooled.groupby(["model", "subgroup"])["toxicity"].mean()
    return (per_group - overall.reindex(per_group.index.get_level_values("model")).to_numpy()).abs().groupby(
        "model").sum()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=300, help="combinations timed for the baseline (default 300)")
    parser.add_argument("--permutations", type=int, default=200, help="permutations of the null (default 200)")
    args = parser.parse_args()
    table = toxicity_table()
    combos = [("original", *picks) for m in range(1, MAX_M + 1)
              for picks in combinations_with_replacement([f"p{i:02d}" for i in range(PARAPHRASE_SETS)], m - 1)]
    total = len(combos) * METRICS
    print(f"{len(table):,} continuations; {len(combos):,} combinations per metric (m ≤ {MAX_M}) × {METRICS} metrics "
          f"× {MODELS} models")

    started = time.perf_counter()
    cells = metric_cells(table)
    engine = {key: np.concatenate([combination_bias(c, combination_weights(len(c.sets) - 1, m))
                                   for m in range(1, MAX_M + 1)], axis=1) for key, c in cells.items()}
    engine_s = time.perf_counter() - started
    print(f"engine: every combination's bias for every model and metric in {engine_s * 1000:.1f} ms "
          f"(sums and counts per cell included)")

    for search in ("same", "independent"):
        started = time.perf_counter()
        results = search_all(cells, MAX_M, Options(search=search, permutations=0, splits=0))
        search_s = time.perf_counter() - started
        searched = sum(r.combinations_a * (r.combinations_b if search == "independent" else 1) for r in results)
        print(f"engine, {search} search: best / average / original Pearson r for {len(results)} (metric pair, m) in "
              f"{search_s:.2f} s (the best of {searched:,} combinations)")

    rng = np.random.default_rng(1)
    sample = rng.choice(len(combos), size=min(args.sample, len(combos)), replace=False)
    frames = {key: dict(tuple(rows.groupby("prompt_set"))) for key, rows in table.groupby("metric")}
    started = time.perf_counter()
    checked = {metric: [baseline_bias(frames[metric], combos[i]) for i in sample] for metric in frames}
    per_combination = (time.perf_counter() - started) / (len(sample) * METRICS)
    baseline_s = per_combination * total
    for metric, series in checked.items():
        got = engine[("gender", metric)][:, sample]
        expected = np.stack([s.loc[list(cells[("gender", metric)].models)].to_numpy() for s in series], axis=1)
        np.testing.assert_allclose(got, expected, rtol=1e-9)
    print(f"baseline: pandas concat per combination, {per_combination * 1000:.2f} ms each (timed on "
          f"{len(sample) * METRICS} of {total:,}, same biases) ≈ {baseline_s:.1f} s for all")
    print(f"ratio: {baseline_s / engine_s:,.0f}× faster")
    null_check(cells, args.permutations)


def null_check(cells: dict, permutations: int) -> None:
    """Time the same-combination search with its permutation null and held-out r, and a naive null loop."""
    started = time.perf_counter()
    results = search_all(cells, MAX_M, Options(permutations=permutations, splits=0))
    null_s = time.perf_counter() - started
    print(f"engine: same-combination search + permutation null ({permutations} model orders) for {len(results)} "
          f"(metric pair, m ≤ {MAX_M}) in {null_s:.2f} s")
    started = time.perf_counter()
    wide = search_all(cells, MAX_M - 1, Options(search="independent", permutations=permutations, splits=0))
    print(f"engine: independent search + permutation null ({permutations} model orders) for {len(wide)} "
          f"(metric pair, m ≤ {MAX_M - 1}) in {time.perf_counter() - started:.2f} s (every permutation scores "
          f"{sum(r.combinations_a * r.combinations_b for r in wide):,} pairs of combinations)")
    started = time.perf_counter()
    search_all(cells, MAX_M, Options(permutations=0, splits=10))
    print(f"engine: held-out r (10 random prompt halvings, both directions) for every (metric pair, m) in "
          f"{time.perf_counter() - started:.2f} s")

    a, b = cells[("gender", "metric0")], cells[("gender", "metric1")]
    weights = combination_weights(PARAPHRASE_SETS, 4)
    bias_a, bias_b = combination_bias(a, weights), combination_bias(b, weights)
    orders, _ = model_permutations(MODELS, 5, np.random.default_rng(2))
    started = time.perf_counter()
    naive = [max(np.corrcoef(bias_a[order, c], bias_b[:, c])[0, 1] for c in range(len(weights))) for order in orders]
    per_r = (time.perf_counter() - started) / (len(orders) * len(weights))
    np.testing.assert_allclose(null_best(bias_a, bias_b, "same", orders), naive, rtol=1e-9)
    total = permutations * sum(r.combinations_a for r in results)
    print(f"baseline: loop over permutations × combinations, one np.corrcoef each, {per_r * 1e6:.1f} µs each (timed "
          f"on {len(orders)} permutations × {len(weights)} combinations, same best r) ≈ {per_r * total:.1f} s for "
          f"all {total:,}")
    print(f"ratio: {per_r * total / null_s:,.0f}× faster")


if __name__ == "__main__":
    main()
