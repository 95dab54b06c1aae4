"""The verdict rule's operating characteristic: P(adverse impact) and P(no evidence) against the true impact ratio.

    python bench/operating.py [--replicates 100] [--groups 2 [4 …]] [--seed 0]

Seeded decision logs (:func:`audit.metrics.simulate.pool_logs`): pools of one applicant per group, k = 1, one group
(B) first in its pool with r times the chance of each other group (its true impact ratio at k = 1), n pools = n
applicants per group. Each replicate audit is judged by :func:`audit.engine.verdict.measure` and ``decide`` (family
``system``, α = 0.05, threshold 0.8) under both readings: ``practice`` (ratio below 0.8 and the adjusted exact test
rejects) and ``strict`` (also the ratio's upper 95 % bound below 0.8). Prints a Markdown table per group count.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit.metrics.simulate import pool_logs  # noqa: E402
from audit.engine.verdict import ADVERSE, NO_EVIDENCE, decide, measure  # noqa: E402

RATIOS = (0.5, 0.6, 0.7, 0.78, 0.8, 0.82, 0.9, 1.0)
SIZES = (100, 500, 2000)


def shares(ratio: float, pools: int, groups: int, replicates: int, seed: int) -> dict[str, tuple[float, float]]:
    """Per reading: (P(adverse impact), P(no evidence)) of group B over ``replicates`` seeded audits."""
    weights = np.ones(groups)
    weights[1] = ratio
    scores = pool_logs(np.random.default_rng([seed, groups, pools, int(ratio * 1000)]), systems=replicates,
                       pools=pools, groups=groups, weights=weights)
    rows, pairs = measure(scores, grouping="group", k=1, pool="observed", n_boot=2, n_perm=1)
    out = {}
    for rule in ("practice", "strict"):
        verdict = decide(rows, pairs, rule=rule).query("category == 'B'")["verdict"]
        out[rule] = (float((verdict == ADVERSE).mean()), float((verdict == NO_EVIDENCE).mean()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--groups", type=int, nargs="+", default=[2])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    for groups in args.groups:
        print(f"\n{groups} groups (pools of one applicant per group, k = 1, {args.replicates} audits per cell); "
              "cells: P(adverse impact) / P(no evidence), practice reading [strict reading]\n")
        print("| true ratio | " + " | ".join(f"{n:,} per group" for n in SIZES) + " |")
        print("|---:|" + "---|" * len(SIZES))
        for ratio in RATIOS:
            cells = []
            for n in SIZES:
                found = shares(ratio, n, groups, args.replicates, args.seed)
                (a, e), (sa, se) = found["practice"], found["strict"]
                cells.append(f"{a:.2f} / {e:.2f} [{sa:.2f} / {se:.2f}]")
            print(f"| {ratio:g} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
