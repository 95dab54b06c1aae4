"""Benchmark: CAIRO bias of every prompt combination (matrix product) against a per-combination pandas concat.

Setting (the paper's scale): 15 paraphrase sets + the original, combinations of m = 1 … 6 sets (original + m − 1
paraphrase sets with replacement: 15,504 per metric), 10 models × 3 metrics, 4 subgroups, 10 prompts per
(set, subgroup), random toxicities. The baseline concatenates the combination's data frames and takes group means,
as a straightforward implementation would; it is timed on a sample of combinations and scaled to all of them, and
its biases are checked against the engine's on that sample.

    .venv/bin/python bench/cairo.py [--sample 300]
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
from audit.cairo.search import search_all  # noqa: E402

PARAPHRASE_SETS, MODELS, METRICS, SUBGROUPS, PROMPTS, MAX_M = 15, 10, 3, 4, 10, 6


def toxicity_table(seed: int = 0) -> pd.DataFrame:
    """One row per continuation: model, metric, dimension, prompt_set, source, subgroup, toxicity."""
    rng = np.random.default_rng(seed)
    sets = ["original"] + [f"p{i:02d}" for i in range(PARAPHRASE_SETS)]
    index = pd.MultiIndex.from_product([[f"model{i}" for i in range(MODELS)], [f"metric{i}" for i in range(METRICS)],
                                        sets, [f"g{i}" for i in range(SUBGROUPS)], range(PROMPTS)],
                                       names=["model", "metric", "prompt_set", "subgroup", "prompt"])
    table = index.to_frame(index=False)
    return table.assign(dimension="gender", source=table["prompt_set"], toxicity=rng.beta(1, 6, len(table)))


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

    started = time.perf_counter()
    results = search_all(cells, MAX_M)
    search_s = time.perf_counter() - started
    print(f"engine: best / average / original Pearson r for {len(results)} (metric pair, m) in {search_s:.2f} s "
          f"(the best pair of combinations among {sum(r.combinations_a * r.combinations_b for r in results):,})")

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


if __name__ == "__main__":
    main()
