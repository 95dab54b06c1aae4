"""Benchmark of the metric suite against naive baselines, run side by side; prints ratios from one run.

(a) exact gaps for k = 1..8 on 10 models × 4 subtasks × 8 groups × 600 candidates vs a paper-style per-round pandas
    simulation (timed on a few hundred rounds, scaled linearly to 12,000 rounds per setting);
(b) RABBI on 10^5 × 10^5 scores vs the pair loop (timed on a subsample, scaled to 10^10 pairs);
(c) one quota k over the whole table (the dashboard slider) with a prebuilt MetricSuite.

Usage: python bench/metrics.py [--rounds 300]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit.metrics import MetricSuite, allocation_gaps, metric_table, rabbi, rabbi_test  # noqa: E402

GROUPS = ["W_M", "W_F", "B_M", "B_F", "A_M", "A_F", "H_M", "H_F"]
PAPER_ROUNDS = 12_000


def synthetic_scores(models: int = 10, subtasks: int = 4, per_group: int = 600, seed: int = 0) -> pd.DataFrame:
    """P(Yes)-like scores in [0, 1] with a model/group shift; 30 % rounded to one decimal, so ties are common."""
    rng = np.random.default_rng(seed)
    frames = []
    for m in range(models):
        for s in range(subtasks):
            for g, group in enumerate(GROUPS):
                score = rng.beta(2 + 0.05 * g * (m % 3), 2, per_group)
                score = np.where(rng.random(per_group) < 0.3, np.round(score, 1), score)
                frames.append(pd.DataFrame({
                    "model": f"model{m}", "task": "resume", "subtask": f"job{s}", "mode": "pointwise",
                    "candidate_id": [f"{group}-{i}" for i in range(per_group)], "group": group,
                    "qualified": (rng.random(per_group) < 1 / 3).astype(int), "score": score}))
    return pd.concat(frames, ignore_index=True)


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def paper_rounds(setting: pd.DataFrame, rounds: int, seed: int = 0) -> float:
    """Seconds for ``rounds`` paper-style rounds: draw one candidate per group, rank, select the top k (k = 1..8)."""
    rng = np.random.default_rng(seed)
    ks = np.arange(1, 9)
    selected, qualified_selected = np.zeros((len(GROUPS), ks.size)), np.zeros((len(GROUPS), ks.size))
    seen, qualified_seen = np.zeros(len(GROUPS)), np.zeros(len(GROUPS))
    start = time.perf_counter()
    for _ in range(rounds):
        pool = setting.groupby("group").sample(n=1, random_state=rng)
        chosen = pool["score"].rank(method="first", ascending=False).to_numpy()[:, None] <= ks
        qualified = pool["qualified"].to_numpy()
        selected += chosen
        qualified_selected += chosen * qualified[:, None]
        seen += 1
        qualified_seen += qualified
    return time.perf_counter() - start


def pair_loop(a: np.ndarray, b: np.ndarray) -> float:
    total = 0
    for x in a:
        for y in b:
            total += (x > y) - (x < y)
    return total / (len(a) * len(b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300, help="baseline rounds actually timed (default 300)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, numpy {np.__version__}, pandas {pd.__version__}")

    scores = synthetic_scores()
    settings = scores.groupby(["model", "subtask"]).ngroups
    exact = best_of(3, lambda: allocation_gaps(scores, reference="W_M", ks=range(1, 9)))
    per_round = paper_rounds(scores[(scores.model == "model0") & (scores.subtask == "job0")], args.rounds) / args.rounds
    simulated = per_round * PAPER_ROUNDS * settings
    print(f"(a) exact gaps k=1..8, {len(scores):,} candidates in {settings} settings: {exact:.3f} s; "
          f"paper-style simulation {per_round * 1e3:.2f} ms/round × {PAPER_ROUNDS:,} rounds × {settings} settings "
          f"≈ {simulated:,.0f} s (timed on {args.rounds} rounds); ratio {simulated / exact:,.0f}×")

    rng = np.random.default_rng(1)
    a, b = rng.random(100_000).round(3), rng.random(100_000).round(3)
    fast = best_of(5, lambda: rabbi(a, b))
    with_p = best_of(5, lambda: rabbi_test(a, b))
    sub = 1_000
    loop = best_of(1, lambda: pair_loop(a[:sub].tolist(), b[:sub].tolist())) * (a.size * b.size) / sub**2
    print(f"(b) RABBI 10^5 × 10^5: {fast * 1e3:.1f} ms (with Mann–Whitney p-value {with_p * 1e3:.1f} ms); "
          f"pair loop ≈ {loop:,.0f} s (timed on {sub}×{sub}); ratio {loop / fast:,.0f}×")

    start = time.perf_counter()
    suite = MetricSuite(scores, reference="W_M")
    build = time.perf_counter() - start
    slider = np.median([best_of(1, lambda k=k: suite.table([k])) for k in list(range(1, 9)) * 5])
    cold = best_of(1, lambda: metric_table(scores, reference="W_M", ks=[3]))
    print(f"(c) one k over the whole table ({len(suite.table([3]))} rows): {slider * 1e3:.2f} ms per slider move "
          f"(MetricSuite built once in {build:.2f} s; a cold metric_table call {cold:.2f} s); "
          f"budget 50 ms: {'met' if slider < 0.05 else 'MISSED'}")

    one = scores[(scores.model == "model0") & (scores.subtask == "job0")]
    boot = best_of(1, lambda: MetricSuite(one, reference="W_M", ci=0.95, n_boot=200))
    print(f"(d) bootstrap CIs, 200 replicates, one setting of {len(one):,} candidates: {boot:.2f} s")


if __name__ == "__main__":
    main()
