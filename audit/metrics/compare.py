"""Compare two audited systems A and B (two models, one model at two precisions, …) on the same candidates.

Per (subtask, mode, group ≠ reference, k): ΔDP(B) − ΔDP(A) and ΔEO(B) − ΔEO(A) with a *paired* percentile
bootstrap interval: each replicate redraws the candidates of every group with replacement (group sizes kept) and gives the very
same redrawn candidates to A and B, so what the two systems share cancels. Comparing a system with itself gives
exactly 0 with a zero-width interval. Under the ``observed`` design (recorded pools: the two systems ranked different
candidates) nothing is shared, so the interval is *unpaired*: each system's recorded pools are resampled on their own
and the difference is taken replicate by replicate (column ``paired`` says which); flips and the rank correlation,
which need the same candidates, are empty there. Also per candidate: its chance of selection at k under A and B (the exact
rank law of :mod:`audit.metrics.pools`) and whether it flips (selected more likely than not under one system only),
and per subtask the Spearman rank correlation of the two systems' scores.
"""
from __future__ import annotations

import zlib
from collections.abc import Iterable

import numpy as np
import pandas as pd

from audit.errors import AuditError
from audit.metrics.allocation import check_quotas, selection_shares, shares
from audit.metrics.bootstrap import BLOCK, percentile_bounds, share_draws, uniform_counts
from audit.metrics.keys import KeyData, selection_keys, split_keys, with_decisions
from audit.design import PoolDesign, PoolKind
from audit.metrics.pools import candidate_laws, pool_size, rank_laws
from audit.metrics.schema import KEY

GAPS = ("dp", "eo")


FLIP_COLUMNS = ["task", "subtask", "mode", "candidate_id", "group", "score_a", "score_b", "selected_a", "selected_b",
                "change", "flipped"]


def _check_models(scores: pd.DataFrame, a: str, b: str) -> None:
    for name in (a, b):
        if name not in set(scores["model"].astype(str)):
            raise AuditError(f"model {name!r} has no scores; models are: {', '.join(sorted(scores['model'].unique()))}")


def matched(scores: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Rows of models ``a`` and ``b`` restricted to the (task, subtask, mode, candidate) both scored, models renamed A,
    B."""
    _check_models(scores, a, b)
    ids = ["task", "subtask", "mode", "candidate_id"]
    rows_a, rows_b = (scores[scores["model"].astype(str) == name] for name in (a, b))
    common = rows_a[ids].merge(rows_b[ids], on=ids)
    if common.empty:
        raise AuditError(f"models {a!r} and {b!r} share no scored candidates")
    return pd.concat([rows.merge(common, on=ids).assign(model=label) for label, rows in (("A", rows_a), ("B", rows_b))],
                     ignore_index=True)


def _weights(data: KeyData, ids: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, candidates in ``ids`` order): resampling weights, every group redrawn with its size kept."""
    weights = np.zeros((n, ids.size))
    position = np.searchsorted(ids, data.candidate_id)
    for g in range(len(data.groups)):
        members = position[data.group == g]
        weights[:, members] = uniform_counts(rng, members.size, n)
    return weights


def _paired_shares(data: KeyData, design: PoolDesign, ids: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(2, n, groups, L): φ and ψ of one system under candidate weights (n, ids)."""
    cell = np.zeros((2, ids.size, len(data.groups) * data.values.size))
    position, column = np.searchsorted(ids, data.candidate_id), data.group * data.values.size + data.value
    cell[0, position, column] = 1
    cell[1, position[data.qualified], column[data.qualified]] = 1
    counts, qualified = (weights @ cell).reshape(2, weights.shape[0], len(data.groups), data.values.size)
    law, qualified_law = rank_laws(data, design, counts=counts, qualified_counts=qualified)
    return np.stack([selection_shares(law), selection_shares(qualified_law)])


def compare_gaps(scores: pd.DataFrame, *, a: str, b: str, reference: str, ks: Iterable[int] | int,
                 pool: "str | PoolDesign" = "per-group", ci: float = 0.95, n_boot: int = 1000,
                 seed: int = 0, outcomes: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (subtask, mode, group, k): ``dp_a``, ``dp_b``, ``dp_diff`` = ΔDP(B) − ΔDP(A) with paired bootstrap bounds
    ``dp_diff_lo/hi``, and the same for ΔEO, on the candidates both models scored. ``outcomes`` (model, task,
    subtask, outcome): recorded systems judged on the decisions they record
    (:func:`audit.metrics.keys.with_decisions`)."""
    design = PoolDesign.parse(pool)
    if design.kind == PoolKind.OBSERVED:
        return _unpaired_gaps(scores, a=a, b=b, reference=reference, ks=ks, ci=ci, n_boot=n_boot, seed=seed,
                              outcomes=outcomes)
    keys = _decided(split_keys(matched(scores, a, b), reference=reference), outcomes, a, b)
    frames = []
    for data_a, data_b in zip(keys[:len(keys) // 2], keys[len(keys) // 2:]):
        quotas = np.asarray(check_quotas(ks, pool_size(design, data_a), data_a, design)) - 1
        ids = np.unique(data_a.candidate_id)
        point = [np.stack(shares(data, design))[:, None] for data in (data_a, data_b)]
        key_seed = zlib.crc32("\x1f".join(data_a.key[1:]).encode())
        draws = []
        for block in range(0, n_boot, BLOCK):
            weights = _weights(data_a, ids, np.random.default_rng([seed, key_seed, block]), min(BLOCK, n_boot - block))
            draws.append(_paired_shares(data_b, design, ids, weights) - _paired_shares(data_a, design, ids, weights))
        diff = np.concatenate(draws, axis=1)
        frames.append(_gap_frame(data_a, point, diff, quotas, ci, paired=True))
    return pd.concat(frames, ignore_index=True)


def both_systems(scores: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Rows of models ``a`` and ``b`` (renamed A, B) in the (task, subtask, mode) keys both hold."""
    _check_models(scores, a, b)
    ids = ["task", "subtask", "mode"]
    rows_a, rows_b = (scores[scores["model"].astype(str) == name] for name in (a, b))
    common = rows_a[ids].drop_duplicates().merge(rows_b[ids].drop_duplicates(), on=ids)
    if common.empty:
        raise AuditError(f"models {a!r} and {b!r} share no subtask")
    return pd.concat([rows.merge(common, on=ids).assign(model=label) for label, rows in (("A", rows_a), ("B", rows_b))],
                     ignore_index=True)


def _decided(keys: list[KeyData], outcomes: pd.DataFrame | None, a: str, b: str) -> list[KeyData]:
    """``keys`` of the systems renamed A and B with the decisions their recorded outcomes make
    (:func:`audit.metrics.keys.with_decisions`)."""
    if outcomes is None:
        return keys
    named = outcomes["model"].astype(str)
    return with_decisions(keys, pd.concat([outcomes[named == a].assign(model="A"),
                                           outcomes[named == b].assign(model="B")], ignore_index=True))


def _unpaired_gaps(scores: pd.DataFrame, *, a: str, b: str, reference: str, ks: Iterable[int] | int, ci: float,
                   n_boot: int, seed: int, outcomes: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`compare_gaps` for recorded pools: each system's pools resampled on their own (unpaired interval)."""
    design = PoolDesign(PoolKind.OBSERVED)
    keys = _decided(split_keys(both_systems(scores, a, b), reference=reference), outcomes, a, b)
    frames = []
    for data_a, data_b in zip(keys[:len(keys) // 2], keys[len(keys) // 2:]):
        if data_a.groups != data_b.groups:
            raise AuditError(f"{a!r} and {b!r} ranked different groups in subtask {data_a.key[2]!r}: "
                             f"{', '.join(data_a.groups)} against {', '.join(data_b.groups)}")
        size = min(pool_size(design, data_a), pool_size(design, data_b))
        quotas = np.asarray(check_quotas(ks, size, data_a, design)) - 1
        point = [np.stack(shares(data, design))[:, None] for data in (data_a, data_b)]
        draws = [np.stack(share_draws(data, design, n_boot=n_boot, seed=seed)) for data in (data_a, data_b)]
        diff = draws[1][..., :size] - draws[0][..., :size]
        frames.append(_gap_frame(data_a, point, diff, quotas, ci, paired=False))
    return pd.concat(frames, ignore_index=True)


def _gap_frame(data_a: KeyData, point: list[np.ndarray], diff: np.ndarray, quotas: np.ndarray, ci: float, *,
               paired: bool) -> pd.DataFrame:
    """One key's rows: each non-reference group × quota, both systems' gaps, their difference and its percentile
    interval from the replicate differences ``diff``."""
    others = [g for g in range(len(data_a.groups)) if g != data_a.ref]
    key = dict(zip(KEY, data_a.key))
    frame = pd.DataFrame({"task": key["task"], "subtask": key["subtask"], "mode": key["mode"],
                          "group": np.repeat(np.asarray(data_a.groups)[others], quotas.size),
                          "k": np.tile(quotas + 1, len(others))})
    for index, gap in enumerate(GAPS):
        gaps = [(p[index] - p[index][:, [data_a.ref]])[0][others][:, quotas] for p in point]
        frame[f"{gap}_a"], frame[f"{gap}_b"] = gaps[0].ravel(), gaps[1].ravel()
        frame[f"{gap}_diff"] = (gaps[1] - gaps[0]).ravel()
        replicate = (diff[index] - diff[index][:, [data_a.ref]])[:, others][:, :, quotas]
        for name, bound in percentile_bounds(f"{gap}_diff", replicate, ci):
            frame[name] = bound.ravel()
    return frame.assign(paired=paired)


def selection_flips(scores: pd.DataFrame, *, a: str, b: str, k: int,
                    pool: "str | PoolDesign" = "per-group") -> pd.DataFrame:
    """Per candidate both scored: score and chance of selection at quota ``k`` under A and B, and ``flipped`` when
    the chance crosses one half (selected more likely than not under one system only). Sorted by change. Empty for
    recorded (``observed``) pools: the two systems ranked different candidates."""
    design = PoolDesign.parse(pool)
    if design.kind == PoolKind.OBSERVED:
        _check_models(scores, a, b)
        return pd.DataFrame({column: pd.Series(dtype=bool if column == "flipped" else object)
                             for column in FLIP_COLUMNS})
    rows = matched(scores, a, b)
    frames = []
    for data in selection_keys(rows):
        check_quotas(k, pool_size(design, data), data, design)
        selected = candidate_laws(data, design, data.group[None])[:k, 0].sum(axis=0)
        key = dict(zip(KEY, data.key))
        frames.append(pd.DataFrame({"system": key["model"], "task": key["task"], "subtask": key["subtask"],
                                    "mode": key["mode"],
                                    "candidate_id": data.candidate_id, "group": np.asarray(data.groups)[data.group],
                                    "score": data.score, "selected": selected}))
    long = pd.concat(frames, ignore_index=True)
    wide = long.pivot_table(index=["task", "subtask", "mode", "candidate_id", "group"], columns="system",
                            values=["score", "selected"], observed=True)
    wide.columns = [f"{name}_{system.lower()}" for name, system in wide.columns]
    wide = wide.reset_index()
    wide["change"] = wide["selected_b"] - wide["selected_a"]
    wide["flipped"] = (wide["selected_a"] > 0.5) != (wide["selected_b"] > 0.5)
    order = wide["change"].abs().sort_values(ascending=False, kind="stable").index
    return wide.loc[order].reset_index(drop=True)


def rank_correlation(scores: pd.DataFrame, *, a: str, b: str, pool: "str | PoolDesign" = "per-group") -> pd.DataFrame:
    """Per (task, subtask, mode): Spearman ρ between A's and B's scores of the same candidates, and how many (no
    rows for recorded pools, whose candidates differ)."""
    from scipy.stats import spearmanr  # imported on use: slow to import, and no page's cold start needs it

    if PoolDesign.parse(pool).kind == PoolKind.OBSERVED:
        return pd.DataFrame(columns=["task", "subtask", "mode", "spearman", "candidates"])
    rows = matched(scores, a, b)
    wide = rows.pivot_table(index=["task", "subtask", "mode", "candidate_id"], columns="model", values="score",
                            observed=True).dropna().reset_index()
    out = [{"task": task, "subtask": subtask, "mode": mode, "spearman": float(spearmanr(part["A"], part["B"]).statistic),
            "candidates": len(part)}
           for (task, subtask, mode), part in wide.groupby(["task", "subtask", "mode"], observed=True)]
    return pd.DataFrame(out, columns=["task", "subtask", "mode", "spearman", "candidates"])
