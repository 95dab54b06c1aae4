"""Seeded decision logs for the calibration tests: pools whose ranks follow a Plackett–Luce law (an applicant of
group g is first in its pool with chance ∝ weight[g]), as score tables the verdict reads with pool design
``observed``. Equal weights: no bias (ranks exchangeable within a pool)."""
from __future__ import annotations

import numpy as np
import pandas as pd

LETTERS = np.array(list("ABCDEFGH"))


def pool_logs(rng: np.random.Generator, *, systems: int, pools: int, groups: int, weights=None,
              per_pool: int | None = None, balanced: bool = False) -> pd.DataFrame:
    """``systems`` logs (models m0, m1, …) of ``pools`` pools each. Pools hold one applicant per group, or with
    ``per_pool`` that many applicants whose groups are drawn at random (an observational log), or with ``balanced``
    ``per_pool`` / groups of each group."""
    w = np.ones(groups) if weights is None else np.asarray(weights, dtype=float)
    size = groups if per_pool is None else per_pool
    count = systems * pools * size
    group = (np.tile(np.arange(groups), systems * pools) if per_pool is None
             else np.tile(np.arange(count // (systems * pools)) % groups, systems * pools) if balanced
             else rng.integers(0, groups, count))
    score = np.log(w)[group] + rng.gumbel(size=count)  # Gumbel-max: the first place ∝ weight
    return pd.DataFrame({"model": np.char.add("m", (np.arange(count) // (pools * size)).astype(str)), "task": "t",
                         "subtask": "s", "mode": "pointwise", "candidate_id": np.arange(count).astype(str),
                         "group": LETTERS[group], "qualified": 1, "score": score,
                         "pool": np.arange(count) // size})
