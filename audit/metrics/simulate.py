"""Seeded Monte Carlo allocation gaps, the paper's simulation of random rounds: a cross-check for the exact values.

Each round draws a pool (per-group or random:N), selects the top k with tied candidates sharing the remaining slots,
and tallies, per group, selected shares and appearances. φ̂(X, k) = Σ_r selected_r / Σ_r appearances_r (ratio
estimator; likewise ψ̂ on qualified members). Standard errors of ΔDP̂ and ΔEÔ use the delta method on the per-round
tallies: z_r = (a_r − φ̂·b_r)/mean(b) for each group, SE = sd(z_A − z_B)/√rounds.

:func:`pool_logs` makes seeded decision logs for the verdict's calibration (tests, ``bench/operating.py``): pools
whose ranks follow a Plackett–Luce law (an applicant of group g is first in its pool with chance ∝ weight[g]), as
score tables the verdict reads with pool design ``observed``; equal weights: no bias.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from audit.design import PoolDesign, PoolKind
from audit.enums import Mode
from audit.errors import AuditError
from audit.metrics.allocation import quota_keys
from audit.metrics.keys import KeyData
from audit.metrics.pools import pool_size
from audit.metrics.schema import KEY

_DRAW_CHUNK = 4_000_000


def _draw_pools(data: KeyData, design: PoolDesign, rounds: int, rng: np.random.Generator) -> np.ndarray:
    """(rounds, pool size) row indices of the candidates in each drawn pool."""
    if design.kind == PoolKind.PER_GROUP:
        starts = np.searchsorted(data.group, np.arange(len(data.groups) + 1))
        return starts[:-1] + rng.integers(0, np.diff(starts), size=(rounds, len(data.groups)))
    chunk = max(1, _DRAW_CHUNK // data.score.size)
    return np.concatenate([np.argpartition(rng.random((min(chunk, rounds - i), data.score.size)), design.size - 1,
                                           axis=1)[:, :design.size] for i in range(0, rounds, chunk)])


def _ratio_se(selected: np.ndarray, present: np.ndarray, ref: int) -> tuple[np.ndarray, np.ndarray]:
    """Gap estimates (groups, k) and their delta-method standard errors from per-round tallies."""
    share = selected.sum(axis=0) / present.sum(axis=0)[:, None]
    influence = (selected - share * present[:, :, None]) / present.mean(axis=0)[:, None]
    rounds = selected.shape[0]
    se = (influence - influence[:, [ref]]).std(axis=0, ddof=1) / np.sqrt(rounds)
    return share - share[[ref]], se


def simulate_key(data: KeyData, design: PoolDesign, *, rounds: int, seed: int) -> dict[str, np.ndarray]:
    """dp_gap, eo_gap and their ``_se`` as (groups, L) arrays from ``rounds`` simulated pools of one key."""
    if design.kind == PoolKind.OBSERVED:
        raise AuditError("Monte Carlo needs a per-group or random:N pool design; observed pools are already exact")
    size = pool_size(design, data)
    pools = _draw_pools(data, design, rounds, np.random.default_rng(seed))
    score = data.score[pools]
    above = (score[:, None, :] > score[:, :, None]).sum(axis=2)
    tied = (score[:, None, :] == score[:, :, None]).sum(axis=2) - 1
    k = np.arange(1, size + 1)
    chosen = np.clip(k - above[..., None], 0, tied[..., None] + 1) / (tied[..., None] + 1)
    member = data.group[pools][..., None] == np.arange(len(data.groups))
    qualified = member & data.qualified[pools][..., None]
    out = {}
    for name, mask in (("dp_gap", member), ("eo_gap", qualified)):
        gap, se = _ratio_se(np.einsum("rpk,rpg->rgk", chosen, mask), mask.sum(axis=1).astype(float), data.ref)
        out[name], out[f"{name}_se"] = gap, se
    return out


def simulate_gaps(scores: pd.DataFrame, *, reference: str, ks: Iterable[int], pool: "str | PoolDesign" = "per-group",
                  rounds: int = 12_000, seed: int = 0) -> pd.DataFrame:
    """Monte Carlo ΔDP and ΔEO with standard errors: columns model, subtask, mode, group, k, dp_gap, eo_gap,
    dp_gap_se, eo_gap_se. Converges to :func:`audit.metrics.allocation.allocation_gaps` as ``rounds`` grows."""
    if rounds < 2:
        raise AuditError(f"Monte Carlo needs at least 2 rounds, got {rounds}")
    frames = []
    for data, design, quotas in quota_keys(scores, reference, pool, ks):
        result = simulate_key(data, design, rounds=rounds, seed=seed)
        others = [g for g in range(len(data.groups)) if g != data.ref]
        frame = pd.DataFrame({"group": np.repeat(np.asarray(data.groups)[others], len(quotas)),
                              "k": np.tile(quotas, len(others))})
        for name, values in result.items():
            frame[name] = values[others][:, np.asarray(quotas) - 1].ravel()
        for i, name in enumerate(KEY):
            frame.insert(i, name, data.key[i])
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


#: group codes of simulated logs
LETTERS = np.array(list("ABCDEFGH"))


def pool_logs(rng: np.random.Generator, *, systems: int, pools: int, groups: int, weights: Iterable[float] | None = None,
              per_pool: int | None = None, balanced: bool = False) -> pd.DataFrame:
    """``systems`` logs (models m0, m1, …) of ``pools`` pools each. Pools hold one applicant per group, or with
    ``per_pool`` that many applicants whose groups are drawn at random (an observational log), or with ``balanced``
    ``per_pool`` / groups of each group."""
    w = np.ones(groups) if weights is None else np.asarray(weights, dtype=float)
    size = groups if per_pool is None else per_pool
    count = systems * pools * size
    group = (np.tile(np.arange(size) % groups, systems * pools) if per_pool is None or balanced
             else rng.integers(0, groups, count))
    score = np.log(w)[group] + rng.gumbel(size=count)  # Gumbel-max: the first place ∝ weight
    return pd.DataFrame({"model": np.char.add("m", (np.arange(count) // (pools * size)).astype(str)), "task": "t",
                         "subtask": "s", "mode": Mode.POINTWISE, "candidate_id": np.arange(count).astype(str),
                         "group": LETTERS[group], "qualified": 1, "score": score,
                         "pool": np.arange(count) // size})


def decision_log(rng: np.random.Generator, *, systems: int, pools: int, per_pool: int, groups: int,
                 outcome: str, rate: float = 0.3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(scores, outcomes): ``systems`` fair logs of a quota-free outcome as the store reads them, ``pools`` pools
    of ``per_pool`` applicants whose groups are drawn at random (``pools=1``: an unpooled log). ``selected``: each
    applicant selected with chance ``rate`` whatever their group (the score is the 0/1 decision); ``score``: a
    normal score whatever the group (read as scoring above the sample's median). ``outcomes`` names each system's
    outcome kind (:func:`audit.metrics.keys.with_decisions`)."""
    count = systems * pools * per_pool
    score = (rng.random(count) < rate).astype(float) if outcome == "selected" else rng.normal(size=count)
    models = np.char.add("m", (np.arange(count) // (pools * per_pool)).astype(str))
    scores = pd.DataFrame({"model": models, "task": "t", "subtask": "s", "mode": Mode.POINTWISE,
                           "candidate_id": np.arange(count).astype(str), "group": LETTERS[rng.integers(0, groups, count)],
                           "qualified": 1, "score": score, "pool": np.arange(count) // per_pool})
    outcomes = pd.DataFrame({"model": np.unique(models), "task": "t", "subtask": "s", "outcome": outcome})
    return scores, outcomes
