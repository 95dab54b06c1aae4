"""The verdict's null rate on every design: the share of fair systems called "adverse impact" (family-wise over
each system's categories), which must stay within α = 5 % plus twice the Monte Carlo error.

    python bench/calibration.py [--replicates 200] [--seed 0]

Each row is a design of seeded fair logs (:mod:`audit.metrics.simulate`; no group is favoured), each replicate one
system judged by :func:`audit.engine.verdict.measure` and ``decide`` (threshold 0.8, α = 0.05) under the family
``grouping`` (the design's groups in one grouping) and, for the designs of 4 groups read as 2 × 2, ``system`` (sex, race and their intersection
judged together: a system is adverse when any of its 4 + 2 + 2 categories is). Rank designs read the top k of each
pool (ties at the quota a fair lottery); 0/1 logs their recorded decisions; score logs the scoring rate (above the
sample's median). Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit.metrics.keys import selection_keys, with_decisions  # noqa: E402
from audit.metrics.simulate import decision_log, pool_logs  # noqa: E402
from audit.engine.verdict import ADVERSE, decide, measure  # noqa: E402

NO_OUTCOMES = pd.DataFrame(columns=["model", "task", "subtask", "outcome"])


def rank_design(rng: np.random.Generator, replicates: int, *, pools: int, groups: int, per_pool: int | None = None,
                balanced: bool = False, ties: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fair ranked pools (Plackett–Luce with equal weights); ``ties``: scores on a coarse grid."""
    scores = pool_logs(rng, systems=replicates, pools=pools, groups=groups, per_pool=per_pool, balanced=balanced)
    if ties:
        scores["score"] = np.floor(scores["score"])
    return scores, NO_OUTCOMES


#: name → (k, a maker of (scores, outcomes) from (rng, replicates))
DESIGNS = {
    "one applicant per group, k = 1": (1, lambda rng, n: rank_design(rng, n, pools=200, groups=4)),
    "pools of 4 + 4 (two groups), k = 3": (3, lambda rng, n: rank_design(rng, n, pools=100, groups=2, per_pool=8,
                                                                          balanced=True)),
    "pools of 4 + 4 (two groups), k = 5": (5, lambda rng, n: rank_design(rng, n, pools=100, groups=2, per_pool=8,
                                                                          balanced=True)),
    "observational pools of 6, k = 2": (2, lambda rng, n: rank_design(rng, n, pools=150, groups=4, per_pool=6)),
    "ties at the quota (coarse scores), k = 2": (2, lambda rng, n: rank_design(rng, n, pools=150, groups=4,
                                                                               per_pool=6, ties=True)),
    "0/1 log in pools of 6": (1, lambda rng, n: decision_log(rng, systems=n, pools=150, per_pool=6, groups=4,
                                                             outcome="selected")),
    "0/1 log, unpooled (900 applicants)": (1, lambda rng, n: decision_log(rng, systems=n, pools=1, per_pool=900,
                                                                          groups=4, outcome="selected")),
    "score log, unpooled (scoring rate)": (1, lambda rng, n: decision_log(rng, systems=n, pools=1, per_pool=900,
                                                                          groups=4, outcome="score")),
}
#: the 2 × 2 reading of groups A–D as sex_race codes, and the groupings the system family judges together
CODES = {"A": "F_W", "B": "F_B", "C": "M_W", "D": "M_B"}
GROUPINGS = {"sex": 0, "race": 1, "intersection": None}


def adverse_share(scores: pd.DataFrame, outcomes: pd.DataFrame, k: int, family: str) -> float:
    """The share of systems with at least one adverse-impact cell under ``family``."""
    if family == "grouping":
        parts = {"group": scores}
    else:
        codes = scores["group"].map(CODES)
        parts = {name: scores.assign(group=codes if part is None else codes.str.split("_").str[part])
                 for name, part in GROUPINGS.items()}
    measured = [measure(part, grouping=name, k=k, pool="observed", n_boot=2, n_perm=1,
                        keys=with_decisions(selection_keys(part), outcomes)) for name, part in parts.items()]
    table = decide(pd.concat([m[0] for m in measured]), pd.concat([m[1] for m in measured]), family=family)
    return float(table.groupby("model")["verdict"].apply(lambda v: (v == ADVERSE).any()).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    bound = 0.05 + 2 * np.sqrt(0.05 * 0.95 / args.replicates)
    start = time.perf_counter()
    print(f"\nShare of fair systems called adverse impact ({args.replicates} per cell; bound {bound:.1%})\n")
    print("| design | family grouping | family system (2 × 2) |\n|---|---:|---:|")
    for i, (name, (k, make)) in enumerate(DESIGNS.items()):
        scores, outcomes = make(np.random.default_rng([args.seed, i]), args.replicates)
        families = ("grouping", "system") if scores["group"].nunique() == len(CODES) else ("grouping",)
        cells = [f"{c:.1%}{' (over)' if c > bound else ''}" for c in
                 (adverse_share(scores, outcomes, k, family) for family in families)]
        print(f"| {name} | " + " | ".join(cells + ["—"] * (2 - len(cells))) + " |")
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
